"""Batches of pages for people who write questions by hand (data/questions/DATA_CARD.md).

    .venv/bin/python scripts/question_batches.py OUT_DIR --batches 15 [--first 0]
    .venv/bin/python scripts/question_batches.py OUT_DIR --batches 5 --split test --unused

Draws the Wikipedia pages of one split of the offline web (train by default) that have at
least two summary sentences of 40-400 characters past the first, shuffled with seed 31, and
writes batch files of --pages-each pages: each page's url, title, description line and its
summary numbered by sentence, for a writer to ask about sentences 2 and later. Pages of the
people-written set (data/questions/people.jsonl) are never drawn; with --unused, no page
whose URL any file of the repository names (the question sets, the generated evaluation
subsets, demonstrations, tests) is drawn either: the sealed test set's pages. --source
MANUAL (python-docs, postgresql-docs, git-docs, sqlite-docs, django-docs) draws a manual's
pages of the split instead, listed by url and title (a writer reads them with
scripts/show_page.py). Batch k always holds the same pages, so --first
continues a drawing without repeating a page.
"""

import argparse
import json
import random
import re
import subprocess
from pathlib import Path

from webgpt.browser.corpus import MANUALS
from webgpt.browser.errors import CorpusError
from webgpt.browser.offline import OfflineWeb, default_store_path
from webgpt.evals.questions import split_of
from webgpt.learning.question_generator import wikipedia_page

ROOT = Path(__file__).resolve().parents[1]
PEOPLE = ROOT / "data" / "questions" / "people.jsonl"
# A URL as files write it: its own balanced parentheses kept ("Mercury_(planet)"), a
# Markdown link's closing one left out.
_URL = re.compile(r"https?://(?:[^\s\"'<>()\[\]]|\([^\s\"'<>()]*\))+")


def named_urls(root: Path, skip: Path | None = None) -> set[str]:
    """Every URL written in a file git tracks under root (an empty set outside a checkout),
    but for the file skip."""
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=False
    )
    urls: set[str] = set()
    for name in listed.stdout.decode().split("\0"):
        path = root / name
        if not name or not path.is_file() or (skip is not None and path.resolve() == skip):
            continue
        try:
            urls.update(_URL.findall(path.read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            continue
    return {url.rstrip(".,;:") for url in urls}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--batches", type=int, required=True)
    parser.add_argument("--first", type=int, default=0, help="number of the first batch")
    parser.add_argument("--pages-each", type=int, default=170)
    parser.add_argument("--store", type=Path, default=None, help="offline web file")
    parser.add_argument("--split", choices=["train", "dev", "test"], default="train")
    sources = ["wikipedia", *(manual.name for manual in MANUALS)]
    parser.add_argument("--source", choices=sources, default="wikipedia")
    parser.add_argument(
        "--unused", action="store_true", help="no page whose URL a file of the repository names"
    )
    args = parser.parse_args()
    with PEOPLE.open() as lines:
        excluded = {json.loads(line).get("url") for line in lines}
    if args.unused:
        excluded |= named_urls(ROOT)
    try:
        store = OfflineWeb(args.store or default_store_path())
    except CorpusError as error:
        parser.error(str(error))
    pages = []
    for page in store.pages():
        if page.source != args.source or split_of(page.url) != args.split:
            continue
        if page.url in excluded:
            continue
        if args.source != "wikipedia":
            pages.append((page.url, page.title, "", []))
            continue
        body = store.body(page.url)
        if body is None:
            continue
        description, sentences, _ = wikipedia_page(body)
        if sum(40 <= len(s) <= 400 for s in sentences[1:]) >= 2:
            pages.append((page.url, page.title, description, sentences))
    random.Random(31).shuffle(pages)
    needed = (args.first + args.batches) * args.pages_each
    if args.batches < 1 or needed > len(pages):
        parser.error(
            f"{len(pages)} pages to draw from; batches to {args.first + args.batches - 1} "
            f"need {needed}"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    for batch in range(args.first, args.first + args.batches):
        drawn = pages[batch * args.pages_each : (batch + 1) * args.pages_each]
        with (args.out / f"batch_{batch}.txt").open("w") as out:
            for n, (url, title, description, sentences) in enumerate(drawn):
                out.write(f"### PAGE {batch}-{n}\nurl: {url}\ntitle: {title}\n")
                if description:
                    out.write(f"description: {description}\n")
                out.writelines(f"[{i}] {s}\n" for i, s in enumerate(sentences, start=1))
                out.write("\n")
    print(f"{len(pages)} pages to draw from; batches {args.first}..{batch} in {args.out}")


if __name__ == "__main__":
    main()
