"""The people-written questions over the software manuals (data/questions/manuals.jsonl for
dev, and their share of the sealed test set; DATA_CARD.md): their make-up, and that every
gold answer, evidence sentence and key point is on its page (scripts/check_questions.py)."""

from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.evals.writers_check import assert_every_line_passes
from webgpt.evals.questions import (
    MANUAL_QUESTIONS,
    SEALED_QUESTIONS,
    Question,
    load_questions,
    split_of,
)

# The manuals of browser.corpus.MANUALS other than Python's, by the host that serves them.
MANUAL_HOSTS = {"www.postgresql.org", "git-scm.com", "www.sqlite.org", "docs.djangoproject.com"}


def on_a_manual(question: Question) -> bool:
    return question.url is not None and urlsplit(question.url).netloc in MANUAL_HOSTS


def test_the_dev_set_asks_every_kind_over_every_manual() -> None:
    questions = load_questions(MANUAL_QUESTIONS)
    kinds = Counter(q.kind for q in questions)
    assert kinds["factoid"] >= 0.5 * len(questions)
    assert kinds["longform"] >= 0.15 * len(questions)
    assert kinds["unanswerable"] >= 0.1 * len(questions)
    assert {urlsplit(q.url).netloc for q in questions if q.url} == MANUAL_HOSTS
    assert len({q.question.lower() for q in questions}) == len(questions), "a question twice"
    for question in questions:
        assert question.split == "dev", question.question
        if question.url is not None:
            assert split_of(question.url) == "dev", question.url  # never trained on


def test_the_sealed_set_asks_over_every_manual_on_other_pages_than_dev() -> None:
    dev = load_questions(MANUAL_QUESTIONS)
    sealed = [q for q in load_questions(SEALED_QUESTIONS) if on_a_manual(q)]
    # 68 dev and 50 sealed on a page, with the sealed set's 10 unanswerable questions about
    # the manuals (which name no page): the 128 of DATA_CARD.md
    assert (len(dev), len(sealed)) >= (68, 50)
    assert {urlsplit(q.url).netloc for q in sealed if q.url} == MANUAL_HOSTS
    assert not {q.url for q in dev} & {q.url for q in sealed}


@pytest.mark.slow  # the full offline web
def test_every_dev_line_passes_the_writers_check(embedded_web_store: Path) -> None:
    assert_every_line_passes(MANUAL_QUESTIONS, embedded_web_store)
