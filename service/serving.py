"""The answering logic behind the routes: admission control, answers, streams, readiness."""

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import InitVar, dataclass
from typing import Any

from webgpt.agent.answer import Agent, AnswerResult, Scorer
from webgpt.agent.episode import EpisodeConfig
from webgpt.agent.errors import PolicyUnavailable
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.trace import AnswerDeltaEvent, TraceEvent
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web
from webgpt.service.demonstrating import DemonstrationSessions
from webgpt.service.errors import InvalidRequest, Overloaded, public_message, status_of
from webgpt.service.metrics import Metrics
from webgpt.service.policies import PolicyVersions
from webgpt.service.protocol import (
    GRADE_LABELS,
    AnswerRequest,
    AnswerResponse,
    ChatRequest,
    ComparisonFeedback,
    DemonstrationFeedback,
    FeedbackReceipt,
    FinalEvent,
    GradedComparisonFeedback,
    StreamErrorEvent,
    StreamEvent,
)
from webgpt.service.scoring import bring_up_scorer, probe, scorer_for, scorer_slot
from webgpt.service.settings import ServiceSettings
from webgpt.service.store import FeedbackStore
from webgpt.service.versions import Slot, follow_alias

logger = logging.getLogger("webgpt.service")


class Admission:
    """At most `running` answers at once and `waiting` in line; beyond that, Overloaded."""

    def __init__(self, running: int, waiting: int) -> None:
        self._slots = asyncio.Semaphore(running)
        self._waiting_limit = waiting
        self.waiting = 0

    def check(self) -> None:
        if self._slots.locked() and self.waiting >= self._waiting_limit:
            raise Overloaded("too many requests are waiting; retry later")

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        self.check()
        self.waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self.waiting -= 1
        try:
            yield
        finally:
            self._slots.release()


@dataclass
class AnswerService:
    """Answers with the current policy and scorer versions (each swapped in while serving:
    service.versions); an answer keeps the versions it started with to its end."""

    settings: ServiceSettings
    web: Web
    policy: InitVar[OpenAIPolicy | None]  # None: the first version comes from policy_versions
    scorer: InitVar[Scorer | None]
    metrics: Metrics
    store: FeedbackStore
    policy_versions: PolicyVersions | None = None  # set: follow settings.policy_checkpoint

    def __post_init__(self, policy: OpenAIPolicy | None, scorer: Scorer | None) -> None:
        self.admission = Admission(
            self.settings.max_concurrent_requests, self.settings.max_waiting_requests
        )
        retire = self.policy_versions.retire if self.policy_versions else _close_policy
        self.policies: Slot[OpenAIPolicy] = Slot(policy, retire)
        self.scorers = scorer_slot(scorer)
        self.demonstrations = DemonstrationSessions(self.web, self.store, self.settings)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """While the app runs: serve and follow the policy and reward aliases; then close."""
        settings, followers = self.settings, []
        alias = settings.policy_checkpoint
        if self.policy_versions is not None and alias is not None:
            # The first version too is brought up (loaded, canaries) in the background: the
            # service is live at once and ready (/readyz) when a version serves.
            followers.append(
                follow_alias(
                    self.policies,
                    alias,
                    self.policy_versions.bring_up,
                    settings.policy_reload_s,
                    self.metrics.count_policy_reload,
                    "policy",
                )
            )
        if settings.reward_model is not None and settings.reward_reload_s > 0:
            followers.append(
                follow_alias(
                    self.scorers,
                    settings.reward_model,
                    lambda target: bring_up_scorer(lambda t: scorer_for(settings, t), target),
                    settings.reward_reload_s,
                    self.metrics.count_reward_reload,
                    "reward",
                )
            )
        tasks = [asyncio.create_task(follower) for follower in followers]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.aclose()

    @contextlib.asynccontextmanager
    async def _versions(self) -> AsyncIterator[tuple[OpenAIPolicy, Scorer | None]]:
        """The policy and scorer one answer uses from its start to its end."""
        async with self.policies.use() as policy, self.scorers.use() as scorer:
            if policy is None:
                raise PolicyUnavailable("no policy version is loaded yet")
            yield policy, scorer

    def check(self, request: AnswerRequest) -> None:
        """Limits of this deployment, beyond the schema's."""
        limits = self.settings
        if len(request.question) > limits.max_question_chars:
            raise InvalidRequest(f"question is longer than {limits.max_question_chars} characters")
        if request.n > limits.max_n:
            raise InvalidRequest(f"n must be at most {limits.max_n}")
        if request.max_actions > limits.max_actions_limit:
            raise InvalidRequest(f"max_actions must be at most {limits.max_actions_limit}")
        if request.engine not in (None, limits.engine):
            raise InvalidRequest(
                f"engine {request.engine!r} is not enabled; this service uses {limits.engine!r}"
            )

    def _agent(self, request: AnswerRequest, policy: OpenAIPolicy, scorer: Scorer | None) -> Agent:
        return Agent(
            self.web,
            policy,
            scorer,
            episode=EpisodeConfig(temperature=request.temperature),
            session=SessionConfig(max_actions=request.max_actions),
        )

    async def answer(self, request: AnswerRequest) -> AnswerResponse:
        self.check(request)
        trace: list[TraceEvent] = []

        async def keep(event: TraceEvent) -> None:
            trace.append(event)

        async with self.admission.slot(), self._versions() as (policy, scorer):
            result = await self._agent(request, policy, scorer).answer(
                request.question, request.n, emit=keep if request.include_trace else None
            )
        self.metrics.observe_answer(result)
        await asyncio.to_thread(self.store.record_answer, result)
        return AnswerResponse(**result.model_dump(), trace=trace if request.include_trace else None)

    def stream(self, request: AnswerRequest) -> AsyncIterator[StreamEvent]:
        """The trace as it happens, then `final` or `error` (the route sends them as
        server-sent events and ends with [DONE]).

        Limits and capacity are checked before the first byte, so a bad or overloaded
        request gets its HTTP status; if the client goes away, closing the generator
        cancels every episode, fetch and policy request of the answer.
        """
        self.check(request)
        self.admission.check()
        return self._events(request)

    async def _events(self, request: AnswerRequest) -> AsyncIterator[StreamEvent]:
        queue: asyncio.Queue[TraceEvent] = asyncio.Queue()

        async def put(event: TraceEvent) -> None:
            await queue.put(event)

        async def run() -> AnswerResult:
            async with self.admission.slot(), self._versions() as (policy, scorer):
                agent = self._agent(request, policy, scorer)
                return await agent.answer(request.question, request.n, emit=put)

        task = asyncio.create_task(run())
        try:
            while not (task.done() and queue.empty()):
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    yield getter.result()
                else:
                    getter.cancel()
            try:
                result = task.result()
                self.metrics.observe_answer(result)
                await asyncio.to_thread(self.store.record_answer, result)
                yield FinalEvent(result=result)
            except Exception as error:  # every stream ends with `final` or `error`
                status, kind, _ = status_of(error)
                if status == 500:
                    logger.error("answer stream failed", exc_info=error)
                yield StreamErrorEvent(message=public_message(error), error_type=kind)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def ready(self) -> dict[str, str]:
        """What is not ready, by part ({} when all is)."""
        problems = {}
        policy = self.policies.current
        if policy is None:
            problems["policy"] = "no policy version is loaded yet"
        elif not await policy.ready():
            problems["policy"] = f"{policy.base_url} does not serve {policy.model}"
        async with self.scorers.use() as scorer:
            if scorer is not None:
                try:
                    await probe(scorer)
                except Exception as error:  # any failure of the model means not ready
                    problems["reward"] = f"the reward model failed: {error}"
        return problems

    def _chat_answer(self, chat: ChatRequest) -> AnswerRequest:
        try:
            question = chat.question()
        except ValueError as error:
            raise InvalidRequest(str(error)) from None
        return AnswerRequest.model_validate(
            {"question": question, "n": chat.n, "temperature": chat.temperature}
        )

    async def chat(self, chat: ChatRequest) -> dict[str, Any]:
        """An OpenAI chat.completion whose message is the answer; references alongside."""
        result = await self.answer(self._chat_answer(chat))
        references = [r.model_dump() for r in result.references]
        usage = result.usage
        return {
            "id": "chatcmpl-" + result.id.removeprefix("ans_"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(result.versions["policy"]),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {
                        "role": "assistant",
                        "content": result.answer or "",
                        "references": references,
                        "declined": result.declined,
                    },
                }
            ],
            "usage": {
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "total_tokens": usage.prompt_tokens + usage.completion_tokens,
            },
            "references": references,
            "declined": result.declined,
        }

    def chat_stream(self, chat: ChatRequest) -> AsyncIterator[dict[str, Any]]:
        """chat.completion.chunk objects: the answer's text as it is written (n = 1), or the
        chosen answer at the end (n > 1, known only after scoring); references in the last."""
        return self._chat_chunks(chat, self.stream(self._chat_answer(chat)))

    async def _chat_chunks(
        self, chat: ChatRequest, events: AsyncIterator[StreamEvent]
    ) -> AsyncIterator[dict[str, Any]]:
        chat_id, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
            return {
                "id": chat_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                **extra,
            }

        # The version the answer will start on; the final chunk names the one it used.
        model = self.policies.current.name if self.policies.current else ""
        yield chunk({"role": "assistant", "content": ""})
        streamed = False
        async for event in events:
            if isinstance(event, AnswerDeltaEvent) and chat.n == 1:
                streamed = True
                yield chunk({"content": event.text})
            elif isinstance(event, FinalEvent):
                result = event.result
                model = str(result.versions["policy"])
                if not streamed:
                    yield chunk({"content": result.answer or ""})
                references = [r.model_dump(mode="json") for r in result.references]
                yield chunk({}, "stop", references=references, declined=result.declined)
            elif isinstance(event, StreamErrorEvent):
                yield {"error": {"type": event.error_type, "message": event.message}}

    async def feedback(
        self, feedback: ComparisonFeedback | GradedComparisonFeedback | DemonstrationFeedback
    ) -> FeedbackReceipt:
        if isinstance(feedback, ComparisonFeedback):
            row = await asyncio.to_thread(
                functools.partial(
                    self.store.add_comparison,
                    feedback.answer_id,
                    feedback.better,
                    feedback.worse,
                    label=0.5 if feedback.tie else 1.0,
                    note=feedback.note,
                )
            )
        elif isinstance(feedback, GradedComparisonFeedback):
            ratings = {
                "grade": feedback.grade,
                "a": feedback.ratings_a.model_dump(),
                "b": feedback.ratings_b.model_dump(),
            }
            row = await asyncio.to_thread(
                functools.partial(
                    self.store.add_comparison,
                    feedback.answer_id,
                    feedback.a,
                    feedback.b,
                    label=GRADE_LABELS[feedback.grade],
                    note=feedback.note,
                    ratings=ratings,
                )
            )
        else:
            row = await asyncio.to_thread(
                self.store.add_demonstration, feedback.question, feedback.model_dump()
            )
        return FeedbackReceipt(id=row, kind=feedback.kind)

    async def aclose(self) -> None:
        if self.policies.current is not None:
            # Only the client: a loaded adapter stays, for this service's next start.
            await self.policies.current.aclose()
        if self.policy_versions is not None:
            await self.policy_versions.aclose()
        await self.scorers.aclose()
        await self.demonstrations.aclose()
        await self.web.aclose()
        self.store.close()


async def _close_policy(policy: OpenAIPolicy) -> None:
    await policy.aclose()
