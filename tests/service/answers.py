"""Answers with two candidates for comparison tests. Best-of-2 needs a reward model, so a
one-episode answer of the service is recorded again with a second candidate, directly in
the store, the way the service records answers."""

from pathlib import Path
from typing import Any

from webgpt.agent.answer import AnswerResult
from webgpt.service.store import FeedbackStore


def record_two_candidates(
    db: Path, answer: dict[str, Any], second: str, answer_id: str = "ans_two"
) -> AnswerResult:
    first = AnswerResult.model_validate(answer)
    two = first.model_copy(
        update={
            "id": answer_id,
            "candidates": [
                first.candidates[0],
                first.candidates[0].model_copy(update={"episode": 1, "answer": second}),
            ],
        }
    )
    store = FeedbackStore(db)
    store.record_answer(two)
    store.close()
    return two
