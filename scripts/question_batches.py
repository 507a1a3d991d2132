"""Batches of training pages for people who write training questions by hand
(data/questions/DATA_CARD.md, "Hand-written training questions").

    .venv/bin/python scripts/question_batches.py OUT_DIR --batches 15 [--first 0]

Draws the training-split Wikipedia pages of the offline web that have at least two summary
sentences of 40-400 characters past the first, shuffled with seed 31, and writes batch
files of --pages-each pages: each page's url, title, description line and its summary
numbered by sentence, for a writer to ask about sentences 2 and later. Pages of the
people-written set (data/questions/people.jsonl) are never drawn. Batch k always holds
the same pages, so --first continues a drawing without repeating a page.
"""

import argparse
import json
import random
from pathlib import Path

from webgpt.browser.errors import CorpusError
from webgpt.browser.offline import OfflineWeb, default_store_path
from webgpt.evals.questions import split_of
from webgpt.learning.question_generator import wikipedia_page

PEOPLE = Path(__file__).parents[1] / "data" / "questions" / "people.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--batches", type=int, required=True)
    parser.add_argument("--first", type=int, default=0, help="number of the first batch")
    parser.add_argument("--pages-each", type=int, default=170)
    parser.add_argument("--store", type=Path, default=None, help="offline web file")
    args = parser.parse_args()
    with PEOPLE.open() as lines:
        people = {json.loads(line).get("url") for line in lines}
    try:
        store = OfflineWeb(args.store or default_store_path())
    except CorpusError as error:
        parser.error(str(error))
    pages = []
    for page in store.pages():
        if page.source != "wikipedia" or split_of(page.url) != "train" or page.url in people:
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
