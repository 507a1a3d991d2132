"""What scores an answer: the reward model (reward/) behind a protocol, for best-of-n
(agent.answer) and the decline judgment (agent.episode)."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class ScoredAnswer:
    """What a scorer sees: exactly what the policy produced."""

    question: str
    answer_prompt: str  # the answer-phase prompt (question and numbered quotes)
    answer: str


class Scorer(Protocol):
    """Scores answers; higher is better. The reward model implements it (reward/)."""

    @property
    def name(self) -> str:
        """The reward model version answers report."""
        ...

    async def score(self, answers: Sequence[ScoredAnswer]) -> list[float]: ...

    async def aclose(self) -> None:
        """Release connections; the scorer is not used afterwards."""
        ...
