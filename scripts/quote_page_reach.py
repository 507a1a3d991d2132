"""How often the quote ranker, reading a factoid's own page whole, scores a sentence holding
the gold answer highest: what quoting the page's best can reach, apart from browsing
(docs/eval/promotion-rules-page-quotes.md).

    .venv/bin/python scripts/quote_page_reach.py data/questions/manuals.jsonl [--split dev] \
        [--ranker FOLDER] [--url-part docs.python.org]

For each factoid of the question file, opens its `url` in the offline web as the browser
renders it, scores every quotable sentence of the page with the shipped quote ranker, and
counts the questions whose best sentence holds a gold answer (case-blind): over the whole
page, and over the candidates the agent reads (agent.quote_ranking.page_candidates of the
page's sentences; the view is left out, so this is a lower bound of what the agent reads).
`--ranker` reads another ranker than the shipped one (a `webgpt train rm` folder), to
compare; `--url-part` keeps the factoids whose page's URL holds it.
"""

import argparse
import asyncio
import json
from pathlib import Path

from webgpt.agent.grammar import quotable_sentences
from webgpt.agent.model import DEFAULT_QUOTE_RANKER, load_quote_ranker
from webgpt.agent.quote_ranking import page_candidates
from webgpt.browser.web import offline_web


async def reach(questions: Path, split: str, ranker_folder: Path, url_part: str) -> None:
    web = offline_web(None)
    ranker = load_quote_ranker(ranker_folder, print)
    assert ranker is not None
    whole = candidates = count = 0
    try:
        for line in questions.read_text().splitlines():
            asked = json.loads(line)
            if asked["kind"] != "factoid" or asked.get("split", split) != split:
                continue
            if url_part not in asked.get("url", ""):
                continue
            session = web.session()
            session.reset(asked["question"])
            await session.open_url(asked["url"])
            sentences = quotable_sentences(session.page_text())
            scored = await ranker.rank(asked["question"], session.page.title, sentences)
            scores = dict(zip(sentences, scored, strict=True))
            gold = [g.lower() for g in asked["gold_answers"]]
            count += 1
            whole += _holds_gold(sentences, scores, gold)
            pool = page_candidates(asked["question"], sentences)
            candidates += _holds_gold(pool, scores, gold)
    finally:
        await ranker.aclose()
        await web.aclose()
    print(f"{count} factoids: the ranker's best holds the answer on the whole page {whole}, "
          f"of the page's candidates {candidates}")  # fmt: skip


def _holds_gold(pool: list[str], scores: dict[str, float], gold: list[str]) -> bool:
    best = max(pool, key=lambda s: scores[s], default="").lower()
    return any(g in best for g in gold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions", type=Path)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--ranker", type=Path, default=Path(DEFAULT_QUOTE_RANKER))
    parser.add_argument("--url-part", default="", help="only pages whose URL holds this")
    args = parser.parse_args()
    asyncio.run(reach(args.questions, args.split, args.ranker, args.url_part))


if __name__ == "__main__":
    main()
