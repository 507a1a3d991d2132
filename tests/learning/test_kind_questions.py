"""The hand-written questions by kind (data/questions/train-kinds.jsonl, dev-kinds.jsonl,
train-unanswerable.jsonl; DATA_CARD.md): what the question-kind model learns from, the fresh
dev set it and the answering are measured on, each on pages no other question file asks
about, and the unanswerable questions a learned decline judgment learns from."""

from collections import Counter
from pathlib import Path

import pytest

from tests.evals.writers_check import assert_every_line_passes
from webgpt.evals.questions import (
    MANUAL_QUESTIONS,
    PEOPLE_QUESTIONS,
    SEALED_QUESTIONS,
    contains_gold,
    load_questions,
    normalize,
    split_of,
)

TRAINING = PEOPLE_QUESTIONS.with_name("train-kinds.jsonl")
FRESH_DEV = PEOPLE_QUESTIONS.with_name("dev-kinds.jsonl")
UNANSWERABLE_TRAINING = PEOPLE_QUESTIONS.with_name("train-unanswerable.jsonl")
OTHERS = [
    PEOPLE_QUESTIONS,
    SEALED_QUESTIONS,
    MANUAL_QUESTIONS,
    PEOPLE_QUESTIONS.with_name("train-manuals.jsonl"),
    PEOPLE_QUESTIONS.with_name("train-later-sentences.jsonl"),
    PEOPLE_QUESTIONS.with_name("conversations.jsonl"),
]


def _asked_elsewhere(*files: Path) -> set[str | None]:
    return {q.url for path in [*OTHERS, *files] for q in load_questions(path)}


@pytest.mark.parametrize(
    ("path", "split", "sizes"),
    [
        (TRAINING, "train", {"longform": 250, "factoid": 100}),
        (FRESH_DEV, "dev", {"longform": 60, "factoid": 30, "unanswerable": 40}),
        (UNANSWERABLE_TRAINING, "train", {"unanswerable": 200}),
    ],
)
def test_make_up_and_pages(path: Path, split: str, sizes: dict[str, int]) -> None:
    questions = load_questions(path)
    kinds: Counter[str] = Counter(q.kind for q in questions)
    assert all(kinds[kind] >= n for kind, n in sizes.items()), kinds
    assert len({normalize(q.question) for q in questions}) == len(questions), "a question twice"
    # a training page may be another training file's too; a fresh dev page is no file's
    asked_elsewhere = _asked_elsewhere(TRAINING) if path == FRESH_DEV else set()
    for q in questions:
        assert q.split == split, q.question
        if q.kind == "unanswerable":
            assert q.url is None and q.why, q.question
            continue
        assert q.url is not None and split_of(q.url) == split, q.url
        assert q.url not in asked_elsewhere, q.url
        if q.kind == "factoid":
            assert q.evidence and contains_gold(q.evidence, q.gold_answers), q.question
            assert not contains_gold(q.question, q.gold_answers), q.question
        else:
            assert 3 <= len(q.key_points) <= 5, q.question


def test_no_unanswerable_training_question_is_asked_for_choosing_or_testing() -> None:
    """A made-up name or a future event is easily thought of twice: a training question
    that a dev or test file asks too would teach the decline its measure asks for."""
    training = load_questions(UNANSWERABLE_TRAINING)
    assert {q.why for q in training} == {
        "detail no page holds", "future event", "made-up entity",
    }  # fmt: skip
    held_out = {
        normalize(q.question)
        for path in [PEOPLE_QUESTIONS, SEALED_QUESTIONS, MANUAL_QUESTIONS, FRESH_DEV]
        for q in load_questions(path)
    }
    assert not {normalize(q.question) for q in training} & held_out


@pytest.mark.slow  # the full offline web
@pytest.mark.parametrize("path", [TRAINING, FRESH_DEV, UNANSWERABLE_TRAINING])
def test_every_line_passes_the_writers_check(path: Path, embedded_web_store: Path) -> None:
    assert_every_line_passes(path, embedded_web_store)
