"""The hand-written training questions over the manuals' training pages
(data/questions/train-manuals.jsonl, DATA_CARD.md): what the quote ranker learns long pages
from, never on a page a dev or sealed question asks about."""

from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.evals.writers_check import assert_every_line_passes
from webgpt.browser.offline import OfflineWeb
from webgpt.evals.questions import (
    MANUAL_QUESTIONS,
    PEOPLE_QUESTIONS,
    SEALED_QUESTIONS,
    contains_gold,
    load_questions,
    normalize,
    split_of,
)
from webgpt.learning.quote_comparisons import ServedSentences, quote_rows

TRAINING = PEOPLE_QUESTIONS.with_name("train-manuals.jsonl")
HOSTS = {
    "www.postgresql.org",
    "git-scm.com",
    "www.sqlite.org",
    "docs.djangoproject.com",
    "docs.python.org",
}


def test_every_question_asks_about_a_training_page_of_a_manual() -> None:
    questions = load_questions(TRAINING)
    assert len(questions) >= 500
    hosts = Counter(urlsplit(q.url or "").netloc for q in questions)
    assert set(hosts) == HOSTS and min(hosts.values()) >= 50
    assert len({normalize(q.question) for q in questions}) == len(questions), "a question twice"
    asked_elsewhere = {
        q.url for path in (PEOPLE_QUESTIONS, SEALED_QUESTIONS, MANUAL_QUESTIONS)
        for q in load_questions(path)
    }  # fmt: skip
    for q in questions:
        assert q.kind == "factoid" and q.split == "train", q.question
        assert q.url is not None and split_of(q.url) == "train", q.url  # no dev or test page
        assert q.url not in asked_elsewhere, q.url
        assert q.evidence and contains_gold(q.evidence, q.gold_answers), q.question
        assert not contains_gold(q.question, q.gold_answers), q.question  # it asks, not tells
        assert q.answer and contains_gold(q.answer, q.gold_answers), q.question
        assert q.answer.endswith(" [1]."), q.answer


@pytest.mark.slow  # the full offline web
def test_every_line_passes_the_writers_check_and_makes_ranker_rows(
    embedded_web_store: Path,
) -> None:
    assert_every_line_passes(TRAINING, embedded_web_store)
    questions = load_questions(TRAINING)
    store = OfflineWeb(embedded_web_store)
    try:
        rows = list(quote_rows(questions, ServedSentences(store), negatives=1))
    finally:
        store.close()
    # each evidence is a sentence of its page as a Quote takes it, so each teaches the ranker
    assert {row["question"] for row in rows} == {q.question for q in questions}
