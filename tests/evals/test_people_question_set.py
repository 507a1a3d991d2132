"""The people-written question set (data/questions/people.jsonl, data/questions/DATA_CARD.md):
its shape, its splits, and that every gold answer and key point is on the page it names."""

import re
from collections import Counter
from pathlib import Path

import pytest

from webgpt.browser.web import Web, WebOptions
from webgpt.evals.questions import load_questions, normalize, split_of

PEOPLE_QUESTIONS = Path(__file__).parents[2] / "data" / "questions" / "people.jsonl"
_LINK = re.compile(r"【\d+†([^†】]*)(?:†[^】]*)?】")


def plain_text(lines: list[str]) -> str:
    """A page's text as one line, links as their text, normalised as `webgpt eval` does."""
    return " " + normalize(_LINK.sub(r"\1", " ".join(lines))) + " "


def test_the_set_has_every_kind_split_by_page() -> None:
    questions = load_questions(PEOPLE_QUESTIONS)
    kinds = Counter(q.kind for q in questions)
    # The set grows toward issue #31's 300 (DATA_CARD.md says how far it is).
    assert set(kinds) == {"factoid", "longform", "unanswerable"} and kinds["unanswerable"] >= 40
    assert len({q.question for q in questions}) == len(questions), "a question twice"
    for question in questions:
        assert question.split in ("dev", "test"), question.question
        if question.kind == "unanswerable":
            assert question.url is None and not question.gold_answers
            continue
        # no page of the set is ever trained on: its page is in the split it is in
        assert question.url is not None and split_of(question.url) == question.split
        if question.kind == "longform":
            assert 3 <= len(question.key_points) <= 6, question.question
    assert {q.split for q in questions} == {"dev", "test"}


@pytest.mark.slow
async def test_every_gold_answer_and_key_point_is_on_its_page(embedded_web_store: Path) -> None:
    web = Web(WebOptions(offline_store=embedded_web_store, offline_only=True, js_mode="never"))
    cache = web.new_cache()
    missing = []
    try:
        for question in load_questions(PEOPLE_QUESTIONS):
            if question.url is None:
                continue
            page = await cache.get(question.url)
            text = plain_text(page.lines)
            wanted = [question.gold_answers] if question.kind == "factoid" else question.key_points
            for phrases in wanted:
                if not any(f" {normalize(p)} " in text for p in phrases):
                    missing.append((question.question, phrases))
    finally:
        await cache.aclose()
        await web.aclose()
    assert missing == []
