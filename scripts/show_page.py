"""A page of the offline web as the policy sees it, its lines numbered: what a person reads
to write questions about a page (data/questions/DATA_CARD.md). With --sentences, the
page's sentences as a Quote may take them instead, numbered: what an evidence sentence is
copied from, as the quote ranker's training rows read it (learning/quote_comparisons.py).

    .venv/bin/python scripts/show_page.py URL [--sentences] [--store FILE]
"""

import argparse
import asyncio
import sys
from pathlib import Path

from webgpt.agent.grammar import quotable_sentences
from webgpt.browser.web import Web, WebOptions


async def show(url: str, store: Path | None, sentences: bool) -> int:
    web = Web(WebOptions(offline_store=store, offline_only=True, js_mode="never"))
    cache = web.new_cache()
    try:
        page = await cache.get(url)
    finally:
        await cache.aclose()
        await web.aclose()
    if page.kind == "error":
        print(f"error: {' '.join(page.lines)}", file=sys.stderr)
        return 1
    print(f"{page.title} ({url})")
    plain = page.text_index.text.split("\n")  # the lines without link marks, as quotes read
    for number, line in enumerate(quotable_sentences(plain) if sentences else page.lines):
        print(f"{number:4d} {line}")
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url")
    parser.add_argument("--store", type=Path, default=None, help="offline web file")
    parser.add_argument(
        "--sentences", action="store_true", help="the quotable sentences, not the lines"
    )
    args = parser.parse_args()
    sys.exit(asyncio.run(show(args.url, args.store, args.sentences)))


if __name__ == "__main__":
    main()
