"""Answering a question: n episodes side by side on one page cache, then best-of-n.

Without a scorer only n = 1 is possible (a clear ConfigurationError otherwise); with one,
the n answers are scored together and the best is returned with every candidate.
"""

import asyncio
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from pydantic import BaseModel

from webgpt.agent.episode import (
    ANSWER_MAX_ACTIONS,
    Emit,
    EpisodeConfig,
    EpisodeResult,
    run_episode,
)
from webgpt.agent.errors import AgentError, ConfigurationError, PolicyError
from webgpt.agent.followups import Turn, made_standalone
from webgpt.agent.policy import Policy, Usage
from webgpt.agent.scoring import ScoredAnswer, Scorer
from webgpt.agent.trace import CandidateEvent, EpisodeErrorEvent, FollowUpEvent, Reference
from webgpt.browser.loader import PageCache
from webgpt.browser.observation import OBSERVATION_FORMAT_VERSION
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web


class Candidate(BaseModel):
    episode: int
    answer: str | None
    declined: bool = False  # the answer says the pages found do not answer; it cites nothing
    reward: float | None
    references: list[Reference]
    end_reason: str | None
    dangling_citations: list[int]
    actions: int
    # commands the browser refused (browser.session: outside the command contract), which a
    # policy under guided decoding never writes: a count above 0 means the server ignored
    # the grammar or the policy was not guided
    invalid_actions: int = 0
    error: str | None = None


class AnswerUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    actions: int
    pages_fetched: int
    page_cache_hits: int  # page loads served by another episode's fetch


class AnswerTimings(BaseModel):
    total_s: float
    policy_s: float  # summed over episodes
    browser_s: float  # summed over episodes: search, page loads, matching
    fetch_s: float  # page fetches of the request (each URL once)
    render_s: float  # page rendering of the request (each URL once)
    scoring_s: float  # learned scorers: the quote ranker's (summed over episodes), best-of-n's


class AnswerResult(BaseModel):
    id: str
    question: str
    # What the episodes browsed: the question, or a follow-up made standalone from the
    # conversation (agent.followups); None where no episode browsed (small talk).
    question_asked: str | None = None
    answer: str | None  # None when no episode produced an answer
    # The answer says the pages found do not answer (agent.declines): it cites nothing.
    declined: bool = False
    references: list[Reference]
    candidates: list[Candidate]
    best: int | None  # index into candidates
    usage: AnswerUsage
    versions: dict[str, str | int | None]
    timings: AnswerTimings


@dataclass
class Agent:
    """Answers questions with a policy browsing a Web, optionally reranked by a scorer."""

    web: Web
    policy: Policy
    scorer: Scorer | None = None
    episode: EpisodeConfig = field(default_factory=EpisodeConfig)
    session: SessionConfig = field(
        default_factory=lambda: SessionConfig(max_actions=ANSWER_MAX_ACTIONS)
    )

    async def answer(
        self,
        question: str,
        n: int = 1,
        *,
        max_actions: int | None = None,
        temperature: float | None = None,
        emit: Emit | None = None,
        rerank: bool = True,
        history: Sequence[Turn] = (),
    ) -> AnswerResult:
        """n episodes on question; with rerank, the reward model picks the answer among
        them (best-of-n); without, they stay n answers in episode order (OpenAI's `n`) and
        the answer is the first that answered. With history (the conversation before it),
        a follow-up is browsed made standalone (agent.followups), said by a FollowUpEvent
        and in the result's question_asked."""
        question = question.strip()
        if not question:
            raise ConfigurationError("the question is empty")
        if n < 1:
            raise ConfigurationError("n must be at least 1")
        if n > 1 and rerank and self.scorer is None:
            raise ConfigurationError(
                f"n={n} needs a reward model to pick the best answer; none is configured"
            )
        started = time.perf_counter()
        standalone = await made_standalone(question, history, self.policy)
        if standalone.rewritten and emit is not None:
            await emit(
                FollowUpEvent(
                    question=question,
                    question_asked=standalone.question,
                    replaced=list(standalone.replaced),
                    by=standalone.by,
                )
            )
        session_config = self.session
        if max_actions is not None:
            session_config = replace(session_config, max_actions=max_actions)
        episode_config = self.episode
        if temperature is not None:
            episode_config = replace(episode_config, temperature=temperature)
        cache = self.web.new_cache()
        try:
            # A failure that is not the policy's ends the whole answer: its sibling episodes
            # are cancelled at once, so no page load or policy call outlives the request.
            async with asyncio.TaskGroup() as episodes:
                tasks = [
                    episodes.create_task(
                        self._episode(
                            i, standalone.question, cache, session_config, episode_config, emit
                        )
                    )
                    for i in range(n)
                ]
        except ExceptionGroup as failed:
            raise failed.exceptions[0] from None
        finally:
            await cache.aclose()
        outcomes = [task.result() for task in tasks]
        results = [o for o in outcomes if isinstance(o, EpisodeResult)]
        failures = [o for o in outcomes if isinstance(o, AgentError)]
        if not results and failures:
            raise failures[0]
        clock = time.perf_counter()
        rewards = await self._score(standalone.question, results) if rerank else {}
        scoring_s = time.perf_counter() - clock
        candidates = self._candidates(outcomes, rewards)
        best = self._best(candidates)
        if emit is not None:
            for candidate in candidates:
                await emit(
                    CandidateEvent(
                        episode=candidate.episode,
                        answer=candidate.answer,
                        declined=candidate.declined,
                        references=candidate.references,
                        end_reason=candidate.end_reason,
                        reward=candidate.reward,
                        error=candidate.error,
                    )
                )
        usage = sum((r.usage for r in results), Usage())
        return AnswerResult(
            id=f"ans_{uuid.uuid4().hex}",
            question=question,
            question_asked=standalone.question,
            answer=candidates[best].answer if best is not None else None,
            declined=best is not None and candidates[best].declined,
            references=candidates[best].references if best is not None else [],
            candidates=candidates,
            best=best,
            usage=AnswerUsage(
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                actions=sum(r.actions for r in results),
                pages_fetched=cache.misses,
                page_cache_hits=cache.hits,
            ),
            versions={
                "policy": self.policy.name,
                "reward": self.scorer.name if self.scorer is not None else None,
                "quote_ranker": ranker.name if (ranker := self.episode.quote_ranker) else None,
                "format": OBSERVATION_FORMAT_VERSION,
            },
            timings=AnswerTimings(
                total_s=time.perf_counter() - started,
                policy_s=sum(r.timings.policy_s for r in results),
                browser_s=sum(r.timings.browser_s for r in results),
                fetch_s=cache.stats.fetch_s,
                render_s=cache.stats.render_s,
                scoring_s=scoring_s + sum(r.timings.scoring_s for r in results),
            ),
        )

    async def _episode(
        self,
        index: int,
        question: str,
        cache: PageCache,
        session_config: SessionConfig,
        episode_config: EpisodeConfig,
        emit: Emit | None,
    ) -> EpisodeResult | AgentError:
        """One episode; a policy failure ends only this episode (reported, not raised)."""
        session = self.web.session(cache=cache, config=session_config)
        try:
            return await run_episode(index, session, self.policy, question, episode_config, emit)
        except PolicyError as error:
            if emit is not None:
                await emit(EpisodeErrorEvent(episode=index, message=str(error)))
            return error

    async def _score(self, question: str, results: list[EpisodeResult]) -> dict[int, float]:
        answered = [r for r in results if r.answer and r.answer_prompt]
        if self.scorer is None or not answered:
            return {}
        scores = await self.scorer.score(
            [ScoredAnswer(question, r.answer_prompt or "", r.answer or "") for r in answered]
        )
        return {r.episode: float(s) for r, s in zip(answered, scores, strict=True)}

    @staticmethod
    def _candidates(
        outcomes: list[EpisodeResult | AgentError], rewards: dict[int, float]
    ) -> list[Candidate]:
        candidates = []
        for index, outcome in enumerate(outcomes):
            if isinstance(outcome, AgentError):
                candidates.append(
                    Candidate(
                        episode=index,
                        answer=None,
                        reward=None,
                        references=[],
                        end_reason=None,
                        dangling_citations=[],
                        actions=0,
                        error=str(outcome),
                    )
                )
                continue
            candidates.append(
                Candidate(
                    episode=outcome.episode,
                    answer=outcome.answer,
                    declined=outcome.declined,
                    reward=rewards.get(outcome.episode),
                    references=outcome.references,
                    end_reason=outcome.end_reason,
                    dangling_citations=outcome.dangling_citations,
                    actions=outcome.actions,
                    invalid_actions=outcome.invalid_actions,
                )
            )
        return candidates

    @staticmethod
    def _best(candidates: list[Candidate]) -> int | None:
        answered = [c for c in candidates if c.answer]
        if not answered:
            return None
        top = max(answered, key=lambda c: c.reward if c.reward is not None else float("-inf"))
        return candidates.index(top)
