"""scripts/evidence_declines.py: what declines by evidence would give on recorded outcomes."""

import sys
from collections.abc import Sequence
from typing import Any

import pytest

from tests.scripts import load_script
from webgpt.agent.declines import decline_answer

evidence = load_script("evidence_declines")


class WordRanker:
    """Scores a sentence 1 where it holds the word, else 0: the decline never does."""

    name = "word-ranker"
    evidence_margin: float | None = None

    def __init__(self, word: str) -> None:
        self.word = word

    async def rank(self, question: str, title: str, sentences: Sequence[str]) -> list[float]:
        return [float(self.word in sentence) for sentence in sentences]

    async def aclose(self) -> None:
        pass


def outcome(kind: str, answer: str, correct: bool, extract: str, **extra: Any) -> dict[str, Any]:
    return {
        "question": f"the {kind} question",
        "kind": kind,
        "answer": answer,
        "correct": correct,
        "quotes": [
            {"title": "Crow", "url": "https://en.wikipedia.org/wiki/Crow", "extract": extract}
        ],
        "unshown": [],
        "sentences": 1,
        "distinct_citations": 1,
        **extra,
    }


async def test_each_outcome_is_scored_by_its_best_quote_against_the_decline() -> None:
    outcomes = [
        outcome("factoid", "Crows are corvids [1].", True, "Crows are corvids."),
        outcome("unanswerable", "Crows are black [1].", False, "Crows are black."),
        {**outcome("factoid", "", False, ""), "quotes": []},
    ]
    assert await evidence.margins(WordRanker("corvids"), outcomes) == [1.0, 0.0, None]


def test_figures_count_undrafted_answers_apart() -> None:
    declined_by_policy = decline_answer("the factoid question")
    outcomes = [
        outcome("factoid", "Crows are corvids [1].", True, "Crows are corvids."),
        outcome("factoid", declined_by_policy, False, "Crows are corvids."),
        outcome("unanswerable", "Crows are black [1].", False, "Crows are black."),
    ]
    # evidence serves the second (the policy declined it: unknown) and declines the third
    line = evidence.figures(outcomes, [False, False, True], {1})
    assert line == "1/2 (50.0%) +1 unknown | 0/2 (0.0%) | 1/1 (100.0%) | 0/0 (0.0%)"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--record", "-4", "eval.json"], "reads no eval file"),
        (["--record", "nan"], "a finite number"),
        (["--also", "adapter", "eval.json"], "--also names folders for --record"),
        ([], "give the eval files"),
    ],
)
def test_the_script_s_two_uses_are_kept_apart(
    argv: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(sys, "argv", ["evidence_declines.py", "--ranker", "ranker", *argv])
    with pytest.raises(SystemExit):
        evidence.main()
    assert message in capsys.readouterr().err
