"""The answering logic behind the routes: admission control, deadlines, answers, streams,
readiness."""

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import InitVar, dataclass, replace
from typing import Any, TypeVar

from webgpt.agent.answer import Agent, AnswerResult
from webgpt.agent.episode import EpisodeConfig, EpisodeResult, answer_temperature, write_answer
from webgpt.agent.errors import PolicyUnavailable
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.quote_ranking import QuoteRanker
from webgpt.agent.scoring import Scorer
from webgpt.agent.trace import TraceEvent
from webgpt.browser.session import BrowserSession, SessionConfig
from webgpt.browser.web import Web
from webgpt.service.browsing import BrowsingSessions
from webgpt.service.chat import answer_request, chunks, completion
from webgpt.service.demonstrating import DemonstrationSessions
from webgpt.service.errors import (
    DatabaseUnavailable,
    DeadlineExceeded,
    InvalidRequest,
    Overloaded,
    RewardUnavailable,
    public_message,
    status_of,
)
from webgpt.service.idempotency import IdempotentRequests, fingerprint
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
    Readiness,
    ReadyCheck,
    StreamErrorEvent,
    StreamEvent,
)
from webgpt.service.recording import AnswerRecorder, AnswerSpool, default_spool
from webgpt.service.scoring import (
    FirstUse,
    bring_up_scorer,
    prepare_shipped,
    probe,
    probe_quote_ranker,
    scorer_for,
    scorer_slot,
)
from webgpt.service.settings import ServiceSettings
from webgpt.service.small_talk import asks_nothing, reply
from webgpt.service.store import FeedbackStore
from webgpt.service.versions import Slot, follow_alias, log_event

logger = logging.getLogger("webgpt.service")
T = TypeVar("T")
CHECK_TIMEOUT_S = 30.0  # a readiness check still running this long has failed


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
    decline_judge: Scorer | None = None  # settings.decline_judge, loaded
    quote_ranker: QuoteRanker | None = None  # settings.quote_ranker, loaded

    def __post_init__(self, policy: OpenAIPolicy | None, scorer: Scorer | None) -> None:
        self.admission = Admission(
            self.settings.max_concurrent_requests, self.settings.max_waiting_requests
        )
        retire = self.policy_versions.retire if self.policy_versions else _close_policy
        self.policies: Slot[OpenAIPolicy] = Slot(policy, retire)
        self.scorers = scorer_slot(scorer)
        settings = self.settings
        # The shipped reward model: loaded by the first request for more than one episode.
        self.reward_on_first_use: FirstUse | None = None
        if settings.reward_on_first_use():
            self.reward_on_first_use = FirstUse(
                self.scorers,
                lambda: prepare_shipped(lambda line: log_event("reward_prepare", "default", line)),
                lambda folder: scorer_for(settings, folder),
                settings.reward_reload_s,
                self.metrics.count_reward_reload,
            )
        self.demonstrations = DemonstrationSessions(self.web, self.store, self.settings)
        # Sessions agent hosts browse in through the MCP tools (service.mcp_server).
        self.mcp_sessions = BrowsingSessions(
            self.web,
            per_owner=self.settings.max_mcp_sessions_per_key,
            total=self.settings.max_mcp_sessions,
            idle_s=self.settings.mcp_session_idle_s,
        )
        spool = self.settings.answer_spool or default_spool(self.store)
        self.recorder = AnswerRecorder(
            self.store,
            AnswerSpool(spool, self.settings.answer_spool_max_bytes),
            self.metrics,
            self.settings.database_retry_s,
        )
        self.idempotent: IdempotentRequests[Any] = IdempotentRequests(
            self.settings.idempotency_ttl_s, self.settings.max_idempotent_answers
        )
        self.readiness = Readiness(
            status="not ready", checks={"service": ReadyCheck(ok=False, detail="starting")}
        )

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
                    self.policy_versions.keep_served,
                )
            )
        reward_alias = None if settings.reward_on_first_use() else settings.reward_model
        if reward_alias is not None and settings.reward_reload_s > 0:
            followers.append(
                follow_alias(
                    self.scorers,
                    reward_alias,
                    lambda target: bring_up_scorer(lambda t: scorer_for(settings, t), target),
                    settings.reward_reload_s,
                    self.metrics.count_reward_reload,
                    "reward",
                )
            )
        await self._update_readiness()  # the first /readyz answers from a real check
        background = [*followers, self.recorder.run(), self._check_readiness()]
        tasks = [asyncio.create_task(work) for work in background]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.aclose()

    @contextlib.asynccontextmanager
    async def _versions(
        self, reranks: bool = False
    ) -> AsyncIterator[tuple[OpenAIPolicy, Scorer | None]]:
        """The policy one answer uses from its start to its end, and the scorer when the
        reward model picks among its episodes (loaded now if it is loaded on first use)."""
        if reranks and self.reward_on_first_use is not None:
            await self.reward_on_first_use.load()
        async with self.policies.use() as policy, self.scorers.use() as scorer:
            if policy is None:
                raise PolicyUnavailable("no policy version is loaded yet")
            if reranks and scorer is None:
                raise RewardUnavailable("no reward model version is loaded yet")
            yield policy, scorer if reranks else None

    def best_of_n_is_off(self) -> bool:
        """No reward model, so every answer is one episode (WEBGPT_REWARD_MODEL=none)."""
        return self.settings.reward_model is None and self.scorers.current is None

    def check(self, request: AnswerRequest, *, rerank: bool = True) -> None:
        """Limits of this deployment, beyond the schema's."""
        limits = self.settings
        if rerank and request.n > 1 and self.best_of_n_is_off():
            raise InvalidRequest(
                "this service answers with one episode: the reward model that picks the best "
                "of several is turned off here"
            )
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
        if request.deadline_s is not None and request.deadline_s > limits.max_answer_deadline_s:
            raise InvalidRequest(f"deadline_s must be at most {limits.max_answer_deadline_s:g}")

    def _deadline_s(self, request: AnswerRequest) -> float:
        return request.deadline_s or self.settings.answer_deadline_s

    async def _within_deadline(self, deadline_s: float, work: Awaitable[T]) -> T:
        """work, cancelled whole (episodes, browser, policy and reward calls) at the deadline."""
        try:
            async with asyncio.timeout(deadline_s):
                return await work
        except TimeoutError:
            raise DeadlineExceeded(
                f"the answer did not finish within its deadline of {deadline_s:g} s"
            ) from None

    def _episode_config(self, temperature: float) -> EpisodeConfig:
        """Episodes as the settings ask: the answer rules, the decline judgment and the
        quote ranker."""
        return replace(
            self.settings.episode_config(temperature),
            decline_judge=self.decline_judge,
            quote_ranker=self.quote_ranker,
        )

    def _agent(self, request: AnswerRequest, policy: OpenAIPolicy, scorer: Scorer | None) -> Agent:
        return Agent(
            self.web,
            policy,
            scorer,
            episode=self._episode_config(answer_temperature(request.n, request.temperature)),
            session=SessionConfig(max_actions=request.max_actions),
        )

    async def answer(self, request: AnswerRequest, *, rerank: bool = True) -> AnswerResponse:
        """request's answer; rerank=False keeps its n episodes as n answers (the OpenAI
        route's `n`) instead of the reward model's pick among them."""
        self.check(request, rerank=rerank)
        if asks_nothing(request.question):
            nothing: list[TraceEvent] | None = [] if request.include_trace else None
            return AnswerResponse.of(reply(request.question, request.n), nothing)
        trace: list[TraceEvent] = []

        async def keep(event: TraceEvent) -> None:
            trace.append(event)

        async def run() -> AnswerResult:
            reranks = rerank and request.n > 1
            async with self.admission.slot(), self._versions(reranks) as (policy, scorer):
                return await self._agent(request, policy, scorer).answer(
                    request.question,
                    request.n,
                    emit=keep if request.include_trace else None,
                    rerank=rerank,
                    history=request.conversation(),
                )

        result = await self._within_deadline(self._deadline_s(request), run())
        self.metrics.observe_answer(result)
        await self.recorder.record(result)
        return AnswerResponse.of(result, trace if request.include_trace else None)

    async def answer_from_quotes(self, session: BrowserSession) -> tuple[EpisodeResult, str]:
        """The policy's answer citing the quotes of a session someone else browsed (an MCP
        host), and the policy version that wrote it; admitted and timed as answers are."""

        async def run() -> tuple[EpisodeResult, str]:
            async with self.admission.slot(), self._versions() as (policy, _):
                result = EpisodeResult(0, None, [], session.end_reason)
                episode = self._episode_config(answer_temperature(1))
                await write_answer(result, session, policy, episode)
                return result, policy.name

        return await self._within_deadline(self.settings.answer_deadline_s, run())

    async def once(
        self,
        caller: str,
        key: str | None,
        route: str,
        body: Any,
        work: Callable[[], Awaitable[Any]],
    ) -> Any:
        """work's outcome; with an Idempotency-Key, shared by every repeat of the request
        (service.idempotency)."""
        if key is None:
            return await work()
        return await self.idempotent.run(
            caller, key, fingerprint(route, body), work, self.metrics.idempotent_replays.inc
        )

    def stream(
        self, request: AnswerRequest, *, rerank: bool = True
    ) -> AsyncGenerator[StreamEvent, None]:
        """The trace as it happens, then `final` or `error` (the route sends them as
        server-sent events and ends with [DONE]).

        Limits and capacity are checked before the first byte, so a bad or overloaded
        request gets its HTTP status; if the client goes away, closing the generator
        cancels every episode, fetch and policy request of the answer.
        """
        self.check(request, rerank=rerank)
        if asks_nothing(request.question):
            return _only(FinalEvent(result=AnswerResponse.of(reply(request.question, request.n))))
        self.admission.check()
        return self._events(request, rerank)

    async def _events(
        self, request: AnswerRequest, rerank: bool
    ) -> AsyncGenerator[StreamEvent, None]:
        queue: asyncio.Queue[TraceEvent] = asyncio.Queue()

        async def put(event: TraceEvent) -> None:
            await queue.put(event)

        async def run() -> AnswerResult:
            reranks = rerank and request.n > 1
            async with self.admission.slot(), self._versions(reranks) as (policy, scorer):
                agent = self._agent(request, policy, scorer)
                return await agent.answer(
                    request.question,
                    request.n,
                    emit=put,
                    rerank=rerank,
                    history=request.conversation(),
                )

        task = asyncio.create_task(self._within_deadline(self._deadline_s(request), run()))
        getter: asyncio.Future[TraceEvent] | None = None
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
                await self.recorder.record(result)
                yield FinalEvent(result=AnswerResponse.of(result))
            except Exception as error:  # every stream ends with `final` or `error`
                status, kind, _ = status_of(error)
                if status == 500:
                    logger.error("answer stream failed", exc_info=error)
                yield StreamErrorEvent(message=public_message(error), error_type=kind)
        finally:
            # A client gone mid-wait leaves both pending: cancel the getter too, or asyncio
            # logs "Task was destroyed but it is pending!" for every cut stream.
            pending: list[asyncio.Future[Any]] = [task] if getter is None else [task, getter]
            for future in pending:
                future.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def _check_readiness(self) -> None:
        """Until cancelled: check every dependency each readiness_check_s; /readyz answers
        from the last result, so a probe costs nothing and never waits behind answers."""
        while True:
            await asyncio.sleep(self.settings.readiness_check_s)
            await self._update_readiness()

    async def _update_readiness(self) -> None:
        checks = await self._check_dependencies()
        # The database is reported but not needed: answers are spooled while it is down.
        needed = all(check.ok for name, check in checks.items() if name != "database")
        self.readiness = Readiness(status="ready" if needed else "not ready", checks=checks)

    async def _check_dependencies(self) -> dict[str, ReadyCheck]:
        """Each dependency's state, in words fit for an unauthenticated probe (no URLs)."""
        checks = {
            "policy": await _checked(self._policy_ready),
            "database": await _checked(self._database_ready),
        }
        at_start = self.reward_on_first_use is None and self.settings.reward_model is not None
        if at_start or self.scorers.current is not None:
            checks["reward"] = await _checked(self._reward_ready)
        if self.quote_ranker is not None:  # on its own server it can be down or another version
            checks["quote_ranker"] = await _checked(self._quote_ranker_ready)
        return checks

    async def _policy_ready(self) -> ReadyCheck:
        policy = self.policies.current
        if policy is None:
            return ReadyCheck(ok=False, detail="no policy version is loaded yet")
        if not await policy.ready():
            return ReadyCheck(ok=False, detail="the policy server does not serve the version")
        return ReadyCheck(ok=True)

    async def _reward_ready(self) -> ReadyCheck:
        async with self.scorers.use() as scorer:
            if scorer is None:
                return ReadyCheck(ok=False, detail="no reward model version is loaded yet")
            try:
                await probe(scorer)  # one short answer: what a real batch needs
            except Exception as error:  # any failure of the model means not ready
                logger.warning("reward model readiness check failed", exc_info=error)
                return ReadyCheck(
                    ok=False, detail=f"the reward model failed: {public_message(error)}"
                )
        return ReadyCheck(ok=True)

    async def _quote_ranker_ready(self) -> ReadyCheck:
        assert self.quote_ranker is not None
        try:
            await probe_quote_ranker(self.quote_ranker)
        except Exception as error:  # any failure of the ranker means not ready
            logger.warning("quote ranker readiness check failed", exc_info=error)
            return ReadyCheck(ok=False, detail=f"the quote ranker failed: {public_message(error)}")
        return ReadyCheck(ok=True)

    async def _database_ready(self) -> ReadyCheck:
        spooled = self.recorder.spool.pending()
        try:
            await asyncio.to_thread(self.store.ping)
        except DatabaseUnavailable:
            return ReadyCheck(
                ok=False, detail=f"unreachable; {spooled} answer records spooled", spooled=spooled
            )
        return ReadyCheck(ok=True, spooled=spooled)

    async def chat(self, chat: ChatRequest) -> dict[str, Any]:
        """An OpenAI chat.completion: n choices, or best_of reranked (service.chat)."""
        request, reranked = answer_request(chat)
        result = await self.answer(request, rerank=reranked)
        return completion(result, chat, reranked, int(time.time()))

    def chat_stream(self, chat: ChatRequest) -> AsyncIterator[dict[str, Any]]:
        """chat.completion.chunk objects (service.chat.chunks); limits, capacity and whether
        best-of-n is on are checked before the first byte (a reward model loaded on first
        use loads after it)."""
        request, reranked = answer_request(chat)
        events = self.stream(request, rerank=reranked)
        # The version the answer will start on; the finishing chunks name the one it used.
        model = self.policies.current.name if self.policies.current else ""
        return chunks(
            events, chat, reranked, f"chatcmpl-{uuid.uuid4().hex}", int(time.time()), model
        )

    async def feedback(
        self, feedback: ComparisonFeedback | GradedComparisonFeedback | DemonstrationFeedback
    ) -> FeedbackReceipt:
        """Stored before it returns: DatabaseUnavailable (503, Retry-After) while the database
        is down, so the client knows to send it again."""
        if not isinstance(feedback, DemonstrationFeedback):
            await self.recorder.flush()  # the answer it names may still be in the spool
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
        await self.idempotent.aclose()
        if self.reward_on_first_use is not None:
            await self.reward_on_first_use.aclose()
        await self.scorers.aclose()
        for model in (self.decline_judge, self.quote_ranker):
            if model is not None:
                await model.aclose()
        await self.demonstrations.aclose()
        await self.mcp_sessions.aclose()
        await self.web.aclose()
        with contextlib.suppress(DatabaseUnavailable):
            await self.recorder.flush()  # what is left stays spooled for the next start
        self.store.close()


async def _only(event: StreamEvent) -> AsyncGenerator[StreamEvent, None]:
    """A stream of one event (the reply to a message that asks nothing)."""
    yield event


async def _close_policy(policy: OpenAIPolicy) -> None:
    await policy.aclose()


async def _checked(check: Callable[[], Awaitable[ReadyCheck]]) -> ReadyCheck:
    """check's result; a check that hangs or fails unexpectedly is a failed check (the
    readiness loop must go on)."""
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_S):
            return await check()
    except TimeoutError:
        return ReadyCheck(ok=False, detail=f"no answer within {CHECK_TIMEOUT_S:g} s")
    except Exception:
        logger.exception("a readiness check failed")
        return ReadyCheck(ok=False, detail="the check failed")
