"""Rollouts: the policy samples whole episodes (or answers from kept quotes) on the offline
web, each recorded turn by turn, scored and packed for the trainer."""

import asyncio
import itertools
import json
import random
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TextIO

from webgpt.agent.episode import (
    EpisodeConfig,
    EpisodeResult,
    answer_sampling,
    run_episode,
    served_answer,
)
from webgpt.agent.errors import DataError, PolicyResponseError
from webgpt.agent.hf_policy import TransformersPolicy
from webgpt.agent.policy import Completions, Policy, Sampling, StreamChunk
from webgpt.agent.quote_ranking import QuoteRanker
from webgpt.agent.trace import Reference
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web
from webgpt.evals.questions import Question, contains_gold
from webgpt.learning.comparisons import (
    ANSWER_ONLY_BROWSE_TRIES,
    ANSWER_ONLY_SWAPS,
    comparison_rows,
    judge,
)
from webgpt.learning.rl.packing import PackedEpisode, SegmentTable, Turn, pack_within
from webgpt.learning.rl.reward import EpisodeAnswer, episode_rewards

if TYPE_CHECKING:  # the config imports TRL; a verl worker runs episodes without it
    from webgpt.learning.rl.config import RLConfig


class RecordingPolicy:
    """Passes calls to a policy, asking for the sampled token ids, and records each turn
    with them (packing trains those ids, never the text encoded again)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.turns: list[Turn] = []

    @property
    def name(self) -> str:
        return self.policy.name

    async def complete(self, prompt: str, sampling: Sampling) -> Completions:
        result = await self.policy.complete(prompt, replace(sampling, token_ids=True))
        self._record(prompt, result, sampling)
        return result

    async def stream(self, prompt: str, sampling: Sampling) -> AsyncIterator[StreamChunk]:
        # one chunk: in-process sampling has nothing to stream, and the turn needs the
        # finish reason and the token ids that only a whole completion carries
        result = await self.complete(prompt, sampling)
        yield StreamChunk(result.choices[0].text, result.usage)

    def _record(self, prompt: str, result: Completions, sampling: Sampling) -> None:
        choice = result.choices[0]
        if choice.token_ids is None:
            raise PolicyResponseError(
                f"the policy {self.name!r} returned no token ids: RL trains the tokens "
                "sampled (vLLM's return_token_ids, an in-process or verl policy)"
            )
        logprobs = choice.logprobs
        if logprobs is not None and len(logprobs) != len(choice.token_ids):
            logprobs = None  # not one per token: unusable for an importance ratio
        ended = choice.finish_reason == "stop" and sampling.stop
        self.turns.append(
            Turn(
                prompt,
                choice.text + (sampling.stop[0] if ended else ""),
                prompt_ids=result.prompt_token_ids,
                completion_ids=choice.token_ids,
                completion_logprobs=logprobs,
            )
        )


async def recorded_episode(
    web: Web,
    policy: Policy,
    question: Question,
    session_config: SessionConfig,
    episode_config: EpisodeConfig,
) -> tuple[EpisodeResult, list[Turn]]:
    """One real episode of the agent on `web`, with every policy call recorded."""
    recorder = RecordingPolicy(policy)
    cache = web.new_cache()
    try:
        session = web.session(cache=cache, config=session_config)
        result = await run_episode(0, session, recorder, question.question, episode_config)
    finally:
        await cache.aclose()
    return result, recorder.turns


@dataclass
class Rollout:
    """One episode (or one answer of an answer-only group) as the trainer sees it."""

    question: Question
    turns: list[Turn]
    packed: PackedEpisode
    reward: float
    answered: bool
    correct: bool
    answer_only: bool


@dataclass
class RolloutStats:
    episodes: int = 0
    answered: int = 0
    correct: int = 0
    answer_only: int = 0
    answer_only_fallbacks: int = 0  # answer-only groups that found no quotes to answer from
    answer_only_swaps: int = 0  # answer-only groups that answered another question instead
    truncated: int = 0  # episodes longer than max_tokens: their last turns left out
    tokens: int = 0
    policy_tokens: int = 0


class EpisodeRollouts:
    """TRL's `rollout_func`: real episodes for a batch of prompts (questions)."""

    def __init__(
        self,
        config: "RLConfig",
        questions: Sequence[Question],
        open_web: Callable[[], Web],
        score: Callable[[list[str]], list[float]],
        tokenizer: Any,
        segments: SegmentTable,
        quote_ranker: QuoteRanker | None = None,
    ) -> None:
        self.config = config
        self.quote_ranker = quote_ranker
        self.by_text = {q.question: q for q in questions}
        self.open_web = open_web
        self.score = score
        self.tokenizer = tokenizer
        self.segments = segments
        self.rule = config.reward_rule
        self.rng = random.Random(config.seed)
        self.loop = asyncio.new_event_loop()  # the web's clients live on one loop
        self.web: Web | None = None
        self.last_batch: list[Rollout] = []
        self.stats = RolloutStats()
        # appended to as groups finish (line-buffered): a run stopped early keeps its rows
        self.comparisons: TextIO | None = None
        if config.comparisons_out is not None:
            config.comparisons_out.parent.mkdir(parents=True, exist_ok=True)
            self.comparisons = config.comparisons_out.open("a", encoding="utf-8", buffering=1)

    def close(self) -> None:
        if self.web is not None:
            self.loop.run_until_complete(self.web.aclose())
        self.loop.close()
        if self.comparisons is not None:
            self.comparisons.close()

    def __call__(self, prompts: list[str], trainer: Any) -> dict[str, Any]:
        model = trainer.accelerator.unwrap_model(trainer.model)
        policy = TransformersPolicy(model, self.tokenizer, name="rl")
        was_training = model.training
        model.eval()
        try:
            rollouts = self.loop.run_until_complete(self.sample(prompts, policy))
        finally:
            model.train(was_training)
        self.segments.clear()
        for rollout in rollouts:
            self.segments.add(rollout.packed)
        self.last_batch = rollouts
        metrics = trainer._metrics["train"]
        metrics["episodes/answered"].append(sum(r.answered for r in rollouts) / len(rollouts))
        metrics["episodes/correct"].append(sum(r.correct for r in rollouts) / len(rollouts))
        metrics["episodes/policy_tokens"].append(
            sum(sum(r.packed.env_mask) for r in rollouts) / len(rollouts)
        )
        return {
            "prompt_ids": [r.packed.prompt_ids for r in rollouts],
            "completion_ids": [r.packed.completion_ids for r in rollouts],
            # sampling log-probs are for vLLM's importance-sampling correction: rollouts
            # here sample from the trained weights themselves (on-policy), which give none
            "logprobs": _all_or_none([r.packed.logprobs for r in rollouts]),
            "env_mask": [r.packed.env_mask for r in rollouts],
            "episode_reward": [r.reward for r in rollouts],
        }

    async def sample(self, prompts: list[str], policy: Policy) -> list[Rollout]:
        """The episodes of a batch of prompts, packed and scored. Every episode of the batch
        runs at once, so that an in-process policy generates their calls together; what is
        drawn at random (answer-only groups, action limits) is drawn first, in order, so a
        seed gives the same batch whatever order the episodes finish in."""
        if self.web is None:
            self.web = self.open_web()
        groups = []
        # consecutive copies of a question form its group (TRL repeats each prompt
        # num_generations times in a row)
        for text, copies in itertools.groupby(prompts):
            size = len(list(copies))
            question = self.by_text.get(text)
            if question is None:
                raise DataError(f"a prompt that is not one of the questions: {text!r}")
            answer_only = self.rng.random() < self.config.answer_only_share
            limits = [
                self.rng.randint(self.config.min_actions, self.config.max_actions)
                for _ in range(size)
            ]
            if answer_only:
                swaps: list[Question] = []
                if self.config.unquoted == "swap":
                    others = [q for q in self.by_text.values() if q != question]
                    swaps = self.rng.sample(others, min(ANSWER_ONLY_SWAPS, len(others)))
                groups.append(self._answer_only_group(question, swaps, policy, limits))
            else:
                groups.append(self._episode_group(question, policy, limits))
        return [rollout for group in await asyncio.gather(*groups) for rollout in group]

    def _episode_config(self) -> EpisodeConfig:
        # the decoding the service runs with its default settings: the same grammar (the
        # in-process policy applies it with xgrammar, as vLLM does), quote ranker and
        # answer rules, so what is rewarded is what would have been served
        return EpisodeConfig(temperature=self.config.temperature, quote_ranker=self.quote_ranker)

    async def _browse(
        self, question: Question, policy: Policy, max_actions: int
    ) -> tuple[EpisodeResult, list[Turn]]:
        assert self.web is not None
        session_config = SessionConfig(max_actions=max_actions)
        return await recorded_episode(
            self.web, policy, question, session_config, self._episode_config()
        )

    async def _episode_group(
        self, question: Question, policy: Policy, limits: list[int]
    ) -> list[Rollout]:
        episodes = await asyncio.gather(*(self._browse(question, policy, n) for n in limits))
        answers = [EpisodeAnswer.of(result) for result, _ in episodes]
        rewards = await episode_rewards(question, answers, self.rule, self._score)
        await self._write_comparisons(
            question, [(r.answer or "", r.references) for r, _ in episodes if r.answer_prompt]
        )
        return [
            self._rollout(question, turns, answer, reward, answer_only=False)
            for (_, turns), answer, reward in zip(episodes, answers, rewards, strict=True)
        ]

    async def _answer_only_group(
        self, question: Question, swaps: list[Question], policy: Policy, limits: list[int]
    ) -> list[Rollout]:
        """One episode collects quotes (not trained on); the group is `len(limits)` answers
        written from them (WebGPT's answer-only episodes: less variance in the answer's
        reward, since the quotes are the same).

        An episode that kept no quotes has nothing to answer from, so the group browses
        again, up to `ANSWER_ONLY_BROWSE_TRIES` episodes (one at a time, each with the next
        drawn action limit). A question still unquoted then either falls back to a group
        of whole episodes (`unquoted="episodes"`: it trains `len(limits)` full episodes,
        ~20x the tokens of an answer-only group) or is swapped for the first of `swaps`
        (drawn up front, up to `ANSWER_ONLY_SWAPS`) that gets quoted (`unquoted="swap"`:
        the group answers that question's quotes; it only falls back when none is quoted,
        since one fallback group costs a CPU run more than all its other steps together)."""
        asked = question
        browse = await self._quoting_episode(question, policy, limits)
        for swap in swaps:
            if browse is not None:
                break
            question = swap
            browse = await self._quoting_episode(question, policy, limits)
        if browse is None or browse.answer_prompt is None:
            self.stats.answer_only_fallbacks += 1
            return await self._episode_group(asked, policy, limits)
        if question != asked:
            self.stats.answer_only_swaps += 1
        prompt = browse.answer_prompt
        # the first draft as the service samples it: under the answer grammar of its quotes
        sampling = answer_sampling(self._episode_config(), browse.quotes)
        recorders = [RecordingPolicy(policy) for _ in limits]
        completions = await asyncio.gather(*(r.complete(prompt, sampling) for r in recorders))
        quotes = browse.quotes
        answers = [
            EpisodeAnswer(
                prompt, served_answer(c.choices[0].text, len(quotes))[0], quotes, browse.actions
            )
            for c in completions
        ]
        rewards = await episode_rewards(question, answers, self.rule, self._score)
        await self._write_comparisons(question, [(a.answer or "", browse.quotes) for a in answers])
        return [
            self._rollout(question, recorder.turns, answer, reward, answer_only=True)
            for recorder, answer, reward in zip(recorders, answers, rewards, strict=True)
        ]

    async def _quoting_episode(
        self, question: Question, policy: Policy, limits: list[int]
    ) -> EpisodeResult | None:
        """The first of up to `ANSWER_ONLY_BROWSE_TRIES` browsing episodes that kept quotes
        (it has an answer prompt); None when none did."""
        for max_actions in limits[:ANSWER_ONLY_BROWSE_TRIES]:
            result, _ = await self._browse(question, policy, max_actions)
            if result.answer_prompt is not None:
                return result
        return None

    async def _write_comparisons(
        self, question: Question, answers: Sequence[tuple[str, Sequence[Reference]]]
    ) -> None:
        """A group's answers, judged by the synthetic rule, as comparison rows: the
        policy's own answers, for the reward model to be retrained where RL takes it."""
        if self.comparisons is None:
            return
        assert self.web is not None
        judged = [await judge(question, text, refs, self.web) for text, refs in answers if text]
        for row in comparison_rows(question, judged):
            self.comparisons.write(json.dumps(row | {"policy": self.config.version}) + "\n")

    async def _score(self, texts: list[str]) -> list[float]:
        return self.score(texts)

    def _rollout(
        self,
        question: Question,
        turns: list[Turn],
        answer: EpisodeAnswer,
        reward: float,
        *,
        answer_only: bool,
    ) -> Rollout:
        packed, kept = pack_within(
            self.tokenizer,
            turns,
            lambda p: len(p.prompt_ids) + len(p.completion_ids) <= self.config.max_tokens,
        )
        self.stats.episodes += 1
        self.stats.answer_only += answer_only
        self.stats.truncated += kept < len(turns)
        self.stats.tokens += len(packed.prompt_ids) + len(packed.completion_ids)
        self.stats.policy_tokens += sum(packed.env_mask)
        answered = answer.answered
        correct = answered and contains_gold(answer.answer or "", question.gold_answers)
        self.stats.answered += answered
        self.stats.correct += correct
        return Rollout(question, turns, packed, reward, answered, correct, answer_only)


def _all_or_none(rows: list[list[float] | None]) -> list[list[float]] | None:
    return None if any(row is None for row in rows) else [row for row in rows if row is not None]
