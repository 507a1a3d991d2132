"""The people-written question set (data/questions/people.jsonl, data/questions/DATA_CARD.md):
its shape, its splits, and that every gold answer and key point is on the page it names."""

from collections import Counter
from pathlib import Path

import pytest

from webgpt.browser.web import Web, WebOptions
from webgpt.evals.questions import load_questions, normalize, page_text, split_of

PEOPLE_QUESTIONS = Path(__file__).parents[2] / "data" / "questions" / "people.jsonl"


def test_the_set_has_every_kind_all_of_it_dev() -> None:
    questions = load_questions(PEOPLE_QUESTIONS)
    kinds = Counter(q.kind for q in questions)
    assert set(kinds) == {"factoid", "longform", "unanswerable"} and kinds["unanswerable"] >= 40
    assert len({q.question for q in questions}) == len(questions), "a question twice"
    for question in questions:
        # the whole set is for choosing; the sealed set (test_sealed_question_set) measures
        assert question.split == "dev", question.question
        if question.kind == "unanswerable":
            assert question.url is None and not question.gold_answers
            continue
        # no page of the set is ever trained on: its page is of split dev or test
        assert question.url is not None and split_of(question.url) in ("dev", "test")
        if question.kind == "longform":
            assert 3 <= len(question.key_points) <= 6, question.question


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
            text = f" {page_text(page.lines)} "
            wanted = [question.gold_answers] if question.kind == "factoid" else question.key_points
            for phrases in wanted:
                if not any(f" {normalize(p)} " in text for p in phrases):
                    missing.append((question.question, phrases))
    finally:
        await cache.aclose()
        await web.aclose()
    assert missing == []
