"""How callers reach a scorer, torch-free: what it reads of an answer, and opening one.

agent.answer.ScoredAnswer satisfies ScoredText structurally (reward/ never imports agent/).
"""

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from reward.remote import RemoteRewardScorer
    from reward.scorer import RewardScorer


class ScoredText(Protocol):
    @property
    def answer_prompt(self) -> str: ...

    @property
    def answer(self) -> str: ...


def scored_text(answer: ScoredText) -> str:
    """Exactly what the policy produced: the answer-phase prompt, then the answer."""
    return answer.answer_prompt + answer.answer


def open_scorer(
    folder: Path, url: str | None = None, api_key: str | None = None
) -> "RewardScorer | RemoteRewardScorer":
    """The checkpoint in folder, scored on the vLLM server at url, or in this process."""
    if url is not None:
        from reward.remote import RemoteRewardScorer

        return RemoteRewardScorer(url, folder, api_key=api_key)
    from reward.scorer import RewardScorer  # torch: only when the model runs in-process

    return RewardScorer(folder)
