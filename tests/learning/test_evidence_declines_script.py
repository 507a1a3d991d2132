"""scripts/evidence_declines.py: what declines by evidence would give on recorded outcomes."""

from collections.abc import Sequence
from typing import Any

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
