"""What a scorer reads of an answer; torch-free, so the remote scorer needs no torch.

agent.answer.ScoredAnswer satisfies it structurally (reward/ never imports agent/).
"""

from typing import Protocol


class ScoredText(Protocol):
    @property
    def answer_prompt(self) -> str: ...

    @property
    def answer(self) -> str: ...


def scored_text(answer: ScoredText) -> str:
    """Exactly what the policy produced: the answer-phase prompt, then the answer."""
    return answer.answer_prompt + answer.answer
