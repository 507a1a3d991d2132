"""The reward of an episode's answer: one definition for both group kinds (whole episodes,
answer-only groups), the TRL path (rollouts) and the verl path (verl).

What is rewarded is the answer as it would have been served (agent.episode.served_answer:
stripped, a decline uncited, citations of no quote removed), the text best-of-n ranks and
a user reads; what is trained stays the tokens sampled (packing). Then, in this order:

1. No answer (the episode kept no quote, so it had nothing to answer from) or an empty
   one: `no_answer`.
2. A decline ("The pages I found do not say ...", agent.declines) of a question the pages
   answer (a factoid or long-form question): `declined_answerable`. A decline is honest
   but answers nothing; it is above `no_answer` so that declining stays better than
   running out of actions, and below a right answer under either source.
3. Otherwise the source's reward:
   - `model` (WebGPT): the reward model's score of the answer-phase prompt + the answer.
     A decline of an unanswerable question is scored like any answer.
   - `outcome` (the 2025 search-agent RL recipe, with WebGPT's support): for an answer
     that is right for its kind and cites a quote it collected, how right times how
     supported, else 0. Right is: a factoid states a gold answer (1), a long-form answer
     covers its key points (the share covered; without key points, 1 for two distinct
     sentences or more citing two quotes or more, as expert iteration keeps). Supported
     is `webgpt eval`'s support: half the reward for being right, the other half in
     proportion to the answer's cited sentences whose content words stand in the quotes
     they cite (evals.evaluate.sentence_support), so a right answer that claims more
     than its quotes show earns less than one that says what they say. A decline of an
     unanswerable question: 1. Less `action_cost` per browsing action.
"""

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from webgpt.agent.answer_rules import CITATION
from webgpt.agent.declines import is_declined
from webgpt.agent.episode import EpisodeResult
from webgpt.agent.trace import Reference
from webgpt.evals.evaluate import (
    distinct_sentence_count,
    is_long_form,
    key_point_coverage,
    sentence_support,
)
from webgpt.evals.questions import Question, contains_gold

RewardSource = Literal["model", "outcome"]
REWARD_SOURCES: tuple[RewardSource, ...] = ("model", "outcome")
# Texts (answer prompt + answer) -> the reward model's scores, in order.
Score = Callable[[list[str]], Awaitable[list[float]]]


@dataclass(frozen=True)
class RewardRule:
    source: RewardSource = "model"
    no_answer: float = -2.0
    declined_answerable: float = -1.0
    action_cost: float = 0.0  # per browsing action, `outcome` only


@dataclass(frozen=True)
class EpisodeAnswer:
    """What the reward looks at of one episode (or one answer of an answer-only group)."""

    prompt: str | None  # the answer-phase prompt; None: no quote was kept
    answer: str | None  # as served (agent.episode.served_answer); None: no answer
    quotes: Sequence[Reference]  # what the answer could cite, [n] being quotes[n - 1]
    actions: int = 0  # browsing actions taken (an answer-only answer: its browse's)

    @classmethod
    def of(cls, result: EpisodeResult) -> "EpisodeAnswer":
        return cls(result.answer_prompt, result.answer, result.quotes, result.actions)

    @property
    def answered(self) -> bool:
        return bool(self.prompt is not None and self.answer)


async def episode_rewards(
    question: Question, answers: Sequence[EpisodeAnswer], rule: RewardRule, score: Score
) -> list[float]:
    """The reward of each answer to `question`, the reward model asked once for the group."""
    scored = [
        i
        for i, a in enumerate(answers)
        if rule.source == "model" and a.answered and _rule_reward(question, a, rule) is None
    ]
    texts = [(answers[i].prompt or "") + (answers[i].answer or "") for i in scored]
    model_scores = dict(zip(scored, await score(texts) if texts else [], strict=True))
    rewards = []
    for index, answer in enumerate(answers):
        fixed = _rule_reward(question, answer, rule)
        if fixed is not None:
            rewards.append(fixed)
        elif rule.source == "model":
            rewards.append(model_scores[index])
        else:
            rewards.append(outcome_reward(question, answer) - rule.action_cost * answer.actions)
    return rewards


def _rule_reward(question: Question, answer: EpisodeAnswer, rule: RewardRule) -> float | None:
    """Steps 1 and 2 of the module docstring; None when the source decides."""
    if not answer.answered:
        return rule.no_answer
    if is_declined(answer.answer) and question.kind != "unanswerable":
        return rule.declined_answerable
    return None


def outcome_reward(question: Question, answer: EpisodeAnswer) -> float:
    """How right for its question's kind an answer citing what it collected is, times how
    supported (the module's docstring): 0 to 1."""
    text = answer.answer or ""
    if is_declined(text):
        return 1.0 if question.kind == "unanswerable" else 0.0
    cited = {int(n) for n in CITATION.findall(text) if 1 <= int(n) <= len(answer.quotes)}
    if question.kind == "unanswerable" or not cited:
        return 0.0  # an invented answer, or one that cites nothing it collected
    right = _rightness(question, text, len(cited))
    supported, checked = sentence_support(text, answer.quotes)
    support = supported / checked if checked else 0.0
    return right * (1 + support) / 2


def _rightness(question: Question, text: str, cited_quotes: int) -> float:
    if question.kind == "longform":
        if question.key_points:
            return key_point_coverage(text, question.key_points) or 0.0
        return 1.0 if is_long_form(distinct_sentence_count(text), cited_quotes) else 0.0
    return 1.0 if contains_gold(text, question.gold_answers) else 0.0
