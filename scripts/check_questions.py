"""Checks a hand-written question file the way its tests do, and names every line at fault:
what a writer runs before handing a file in (data/questions/DATA_CARD.md).

    .venv/bin/python scripts/check_questions.py FILE [--sealed] [--store FILE]

Every line must load as a question (evals.questions.Question) and appear once (a
follow-up: once after its conversation); a factoid's gold answer must occur in its evidence
and not in the question, and its evidence (past the page's first sentence on a Wikipedia
page, unless it is a follow-up) on its page; a long-form question's 3-5 key points each on
its page; an unanswerable one names no page. With --sealed, every page must
be of split test and named by no other file of the repository (the sealed test set).
"""

import argparse
import asyncio
import json
import sys
from pathlib import Path

from pydantic import ValidationError

from webgpt.browser.offline import OfflineWeb, default_store_path
from webgpt.browser.web import Web, WebOptions
from webgpt.evals.questions import Question, normalize, page_text, split_of
from webgpt.learning.question_generator import wikipedia_page

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from question_batches import named_urls  # noqa: E402


def has(text: str, phrase: str) -> bool:
    return bool(normalize(phrase)) and f" {normalize(phrase)} " in f" {normalize(text)} "


async def faults(path: Path, sealed: bool, store: Path | None) -> list[str]:
    found: list[str] = []
    questions: list[tuple[int, Question]] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            question = Question.model_validate(json.loads(line))
        except (ValueError, ValidationError) as error:
            found.append(f"{path}:{number}: not a question: {error}")
            continue
        # a follow-up is its words after its conversation ("how long is it" twice is fine)
        asked = " ".join(normalize(turn.content) for turn in question.history)
        asked += " " + normalize(question.question)
        if asked in seen:
            found.append(f"{path}:{number}: asked twice: {question.question!r}")
        seen.add(asked)
        questions.append((number, question))
    others = named_urls(ROOT, skip=path.resolve()) if sealed else set()
    store_path = store or default_store_path()
    bodies = OfflineWeb(store_path)
    web = Web(WebOptions(offline_store=store_path, offline_only=True, js_mode="never"))
    cache = web.new_cache()
    try:
        for number, question in questions:
            where = f"{path}:{number}: {question.question!r}"
            if question.kind == "unanswerable":
                if question.url is not None:
                    found.append(f"{where}: an unanswerable question names no page")
                continue
            if question.url is None:
                found.append(f"{where}: names no page")
                continue
            if sealed and (split_of(question.url) != "test" or question.split != "test"):
                found.append(f"{where}: its page is not of split test")
            if sealed and question.url in others:
                found.append(f"{where}: another file of the repository names its page")
            page = await cache.get(question.url)
            if page.kind == "error":
                found.append(f"{where}: its page does not open: {question.url}")
                continue
            text = page_text(page.lines)
            if question.kind == "factoid":
                evidence = question.evidence or ""
                if not has(text, evidence):
                    found.append(f"{where}: its evidence is not on its page")
                if not any(has(evidence, gold) for gold in question.gold_answers):
                    found.append(f"{where}: no gold answer is in its evidence")
                if any(has(question.question, gold) for gold in question.gold_answers):
                    found.append(f"{where}: a gold answer is in the question")
                body = bodies.body(question.url) if "wikipedia.org" in question.url else None
                opening = wikipedia_page(body)[1][:1] if body else []
                # (a follow-up measures how its words are read after its conversation, not
                # how deep its answer lies)
                first = opening and normalize(opening[0]) == normalize(evidence)
                if first and not question.history:
                    found.append(f"{where}: its evidence is the page's first sentence")
            if question.kind == "longform":
                if not 3 <= len(question.key_points) <= 5:
                    found.append(f"{where}: give 3-5 key points")
                for point in question.key_points:
                    if not any(has(text, phrase) for phrase in point):
                        found.append(f"{where}: key point {point} is not on its page")
    finally:
        await cache.aclose()
        await web.aclose()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--sealed", action="store_true", help="the sealed test set's checks")
    parser.add_argument("--store", type=Path, default=None, help="offline web file")
    args = parser.parse_args()
    found = asyncio.run(faults(args.file, args.sealed, args.store))
    print("\n".join(found) or f"{args.file}: every line passes")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
