"""The sealed test set (data/questions/sealed-test.jsonl, DATA_CARD.md): its make-up, that
no other file of the repository uses its pages, and that every gold answer, evidence
sentence and key point is on its page (scripts/check_questions.py, which its writers ran)."""

import json
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.evals.writers_check import assert_every_line_passes, writers_check
from webgpt.evals.questions import PEOPLE_QUESTIONS, SEALED_QUESTIONS, load_questions, split_of

# The software documentation of the offline web: Python's and the other manuals.
DOCS_HOSTS = {"docs.python.org", "www.postgresql.org", "git-scm.com", "www.sqlite.org",
              "docs.djangoproject.com"}  # fmt: skip


def test_the_sealed_set_has_the_kinds_people_ask_in_their_shares() -> None:
    questions = load_questions(SEALED_QUESTIONS)
    kinds = Counter(q.kind for q in questions)
    docs = [q for q in questions if q.url and urlsplit(q.url).netloc in DOCS_HOSTS]
    assert len(questions) >= 300
    assert kinds["factoid"] >= 0.5 * len(questions)
    assert kinds["longform"] >= 0.15 * len(questions)
    assert kinds["unanswerable"] >= 0.15 * len(questions)
    assert len(docs) >= 0.1 * len(questions)
    assert {q.why for q in questions if q.kind == "unanswerable"} == {
        "future event",
        "made-up entity",
        "detail no page holds",
    }
    assert len({q.question.lower() for q in questions}) == len(questions), "a question twice"
    for question in questions:
        assert question.split == "test", question.question
        if question.kind == "longform":
            assert 3 <= len(question.key_points) <= 5, question.question


def test_no_page_of_the_sealed_set_is_in_the_people_set_or_of_another_split() -> None:
    people = {q.url for q in load_questions(PEOPLE_QUESTIONS)}
    for question in load_questions(SEALED_QUESTIONS):
        if question.url is not None:
            assert split_of(question.url) == "test", question.url  # never trained on
            assert question.url not in people, question.url


@pytest.mark.slow  # the full offline web
def test_every_line_passes_the_writers_check(embedded_web_store: Path) -> None:
    assert_every_line_passes(SEALED_QUESTIONS, embedded_web_store, sealed=True)


@pytest.mark.slow  # the full offline web
def test_the_check_names_each_line_at_fault(embedded_web_store: Path, tmp_path: Path) -> None:
    """A gold answer not in its evidence, evidence that is the page's first sentence or not
    on the page, a page another file of the repository names, a line that is no question:
    each is reported with its line number, and the check fails."""
    people = [json.loads(line) for line in PEOPLE_QUESTIONS.read_text().splitlines()]
    used = next(r for r in people if r["kind"] == "factoid" and split_of(r["url"]) == "test")
    sealed = [json.loads(line) for line in SEALED_QUESTIONS.read_text().splitlines()]
    good = next(r for r in sealed if r["kind"] == "factoid" and "wikipedia" in r["url"])
    lines = [
        {**good, "gold_answers": ["no such answer"]},
        {**good, "question": good["question"] + " again", "evidence": "Not on the page."},
        {**used, "split": "test"},
        {"question": "", "kind": "factoid"},
        "not json",
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(json.dumps(r) if isinstance(r, dict) else r for r in lines) + "\n")
    run = writers_check(path, embedded_web_store, sealed=True)
    assert run.returncode == 1
    report = run.stdout
    assert f"{path}:1: {good['question']!r}: no gold answer is in its evidence" in report
    assert f"{path}:2:" in report and "its evidence is not on its page" in report
    assert f"{path}:3:" in report and "another file of the repository names its page" in report
    assert f"{path}:4: not a question" in report and f"{path}:5: not a question" in report
