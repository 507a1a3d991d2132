"""scripts/decline_judgment.py: what a decline judgment would decline on recorded outcomes."""

from pathlib import Path
from typing import Any

import pytest

from tests.scripts import load_script
from webgpt.agent.declines import decline_answer

judgment = load_script("decline_judgment")
QUOTE = {
    "title": "Crow",
    "url": "https://en.wikipedia.org/wiki/Crow",
    "extract": "Crows are corvids.",
}


def outcome(question: str, kind: str, answer: str, correct: bool, **extra: Any) -> dict[str, Any]:
    return {
        "question": question,
        "kind": kind,
        "answer": answer,
        "correct": correct,
        "declined": answer == decline_answer(question),
        "quotes": [QUOTE],
        "unshown": [],
        "sentences": 1,
        "distinct_citations": 1,
        **extra,
    }


def test_each_answer_is_judged_beside_the_decline_from_its_own_quotes() -> None:
    outcomes = [
        outcome("What are crows?", "factoid", "Crows are corvids [1].", True),
        outcome("Who won the 2031 Tour?", "unanswerable", "Crows are corvids [1].", False),
        outcome("Why?", "unanswerable", decline_answer("Why?"), False, unshown=["2031"]),
    ]
    read: list[str] = []

    def score_texts(texts: list[str]) -> list[float]:  # the decline scores 1, answers 0
        read.extend(texts)
        return [1.0 if "do not say" in text else 0.0 for text in texts]

    rows = judgment.judged(outcomes, score_texts)
    assert [row.margin for row in rows] == [1.0, 1.0, None]  # a decline is not judged again
    assert len(read) == 4 and all("Crows are corvids." in text for text in read)
    assert read[0].endswith("Crows are corvids [1].")
    assert read[1].endswith(decline_answer("What are crows?"))

    as_served = [False, False, True]
    assert (
        judgment.figures(rows, as_served) == "1/1 (100.0%) | 0/1 (0.0%) | 1/2 (50.0%) | 0/0 (0.0%)"
    )
    judged_declines = [True, True, True]
    assert judgment.figures(rows, judged_declines).startswith("0/1 (0.0%) | 1/1 (100.0%)")


def test_the_episode_questions_are_training_factoids_and_unanswerable_questions(
    learning_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from webgpt.evals.questions import load_questions

    questions = load_script("decline_episode_questions")
    out = tmp_path / "questions.jsonl"
    argv = ["x", "--out", str(out), "--factoids", "5", "--unanswerable", "2"]
    monkeypatch.setattr("sys.argv", [*argv, "--store", str(learning_store)])
    questions.main()
    first = out.read_bytes()
    asked = load_questions(out, None)
    assert sorted(q.kind for q in asked) == ["factoid"] * 5 + ["unanswerable"] * 2
    assert {q.split for q in asked} == {"train"}  # no dev or test question
    questions.main()
    assert out.read_bytes() == first  # the same seed, the same file
