"""Browser sessions that people drive to record demonstrations (the page's Demonstrate mode).

Every command goes through the same BrowserSession and Recorder as the policy's episodes
and the scripted demonstrator's, so what is stored is the demonstration schema itself
(learning.demonstrations): the observations exactly as shown, the commands, the quotes and
the answer; `webgpt feedback export --demonstrations` hands it to `webgpt train bc`.

Sessions live in this process's memory: at most `max_demo_sessions_per_key` per API key
and `max_demo_sessions` in all, each closed after `demo_session_idle_s` without a command.
Behind several replicas a person must stay on one replica (docs/service.md, "Recording
demonstrations").
"""

import asyncio
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from webgpt.agent.episode import CITATION, check_citations
from webgpt.agent.errors import ConfigurationError, DataError
from webgpt.browser.errors import EpisodeOver
from webgpt.browser.events import BrowserEvent
from webgpt.browser.web import Web
from webgpt.evals.questions import Question, load_questions
from webgpt.learning.demonstrations import Demonstration, Recorder
from webgpt.service.errors import InvalidRequest, NotFound, Overloaded
from webgpt.service.protocol import FeedbackReceipt, SessionState
from webgpt.service.settings import ServiceSettings


class DemonstrationStore(Protocol):
    """Where recorded demonstrations go (service.store.FeedbackStore); called in a thread."""

    def demonstrated_questions(self) -> set[str]: ...

    def add_recorded_demonstration(self, demo: Demonstration) -> int: ...


@dataclass
class _Open:
    owner: str
    recorder: Recorder
    queued: Question | None  # the queue's question, with its gold answers and split
    last_used: float
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    event: BrowserEvent | None = None


class DemonstrationSessions:
    def __init__(
        self,
        web: Web,
        store: DemonstrationStore,
        settings: ServiceSettings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.web = web
        self.store = store
        self.settings = settings
        self.clock = clock
        self.queue = _load_queue(settings.demo_questions)
        self._open: dict[str, _Open] = {}
        self._creating = asyncio.Lock()

    async def create(self, owner: str, question: str | None, from_queue: bool) -> SessionState:
        if (question is None) == (not from_queue):
            raise InvalidRequest("give either a question or from_queue: true")
        if from_queue and not self.queue:
            raise InvalidRequest("no question queue is loaded (WEBGPT_DEMO_QUESTIONS)")
        await self._expire()
        # From the limit checks to the insert, one create at a time: picking a queued
        # question awaits the database, and two creates interleaved there would both pass
        # the limits and both take the same question. Expiring stays outside: it only
        # frees slots, and it awaits closing caches.
        async with self._creating:
            mine = sum(s.owner == owner for s in self._open.values())
            if mine >= self.settings.max_demo_sessions_per_key:
                raise Overloaded(
                    f"{mine} browser sessions are open for this key (the limit): "
                    "answer or abandon one first"
                )
            if len(self._open) >= self.settings.max_demo_sessions:
                raise Overloaded("too many browser sessions are open; retry later")
            queued = await self._next_queued() if from_queue else None
            text = queued.question if queued is not None else str(question)
            if not text.strip():
                raise InvalidRequest("question: the question is empty")
            session_id = secrets.token_urlsafe(16)
            recorder = Recorder(self.web.session(), text)  # no I/O: the first page is blank
            self._open[session_id] = _Open(owner, recorder, queued, self.clock())
        return self._state(session_id)

    async def step(self, owner: str, session_id: str, command: str) -> SessionState:
        opened = await self._get(owner, session_id)
        async with opened.lock:  # a double click must not interleave two commands
            if opened.recorder.session.done:
                raise InvalidRequest("browsing has ended: write the answer or abandon")
            try:
                result = await opened.recorder.step(command)
            except EpisodeOver as error:
                raise InvalidRequest(str(error)) from None
            opened.event = result.event
            opened.last_used = self.clock()
        return self._state(session_id)

    async def answer(self, owner: str, session_id: str, answer: str | None) -> FeedbackReceipt:
        """Store the demonstration and close the session."""
        opened = await self._get(owner, session_id)
        async with opened.lock:
            session = opened.recorder.session
            if not session.done:
                raise InvalidRequest("end browsing first (End: Answer)")
            if session.end_reason in ("nonsense", "controversial"):
                if answer is not None:
                    raise InvalidRequest(
                        f"browsing ended {session.end_reason}: a demonstration without an answer"
                    )
            else:
                _check_citations(answer, len(session.quotes))
            queued = opened.queued
            demo = opened.recorder.finish(
                id=f"person-{uuid.uuid4().hex}",
                source="person",
                answer=answer,
                gold_answers=list(queued.gold_answers) if queued else None,
                gold_url=queued.url if queued else None,
                split=queued.split if queued else None,
                meta={"recorded_in": "service"},
            )
            row = await asyncio.to_thread(self.store.add_recorded_demonstration, demo)
            await self._close(session_id)
        return FeedbackReceipt(id=row, kind="demonstration")

    async def abandon(self, owner: str, session_id: str) -> None:
        await self._get(owner, session_id)
        await self._close(session_id)

    async def aclose(self) -> None:
        for session_id in list(self._open):
            await self._close(session_id)

    async def _get(self, owner: str, session_id: str) -> _Open:
        await self._expire()
        opened = self._open.get(session_id)
        # Another key's session is reported exactly like a missing one.
        if opened is None or opened.owner != owner:
            raise NotFound(f"no open browser session {session_id!r} (it may have expired)")
        return opened

    async def _close(self, session_id: str) -> None:
        opened = self._open.pop(session_id, None)
        if opened is not None:
            await opened.recorder.session.cache.aclose()

    async def _expire(self) -> None:
        deadline = self.clock() - self.settings.demo_session_idle_s
        expired = [
            session_id
            for session_id, opened in self._open.items()
            if opened.last_used < deadline and not opened.lock.locked()
        ]
        # All leave the count before the first close awaits.
        closing = [self._open.pop(session_id) for session_id in expired]
        for opened in closing:
            await opened.recorder.session.cache.aclose()

    async def _next_queued(self) -> Question:
        """The first queued question nobody has demonstrated or is demonstrating."""
        # Open sessions first, then the database: answer() stores before it closes, so a
        # question whose session closes during the read is in one or the other.
        taken = {o.recorder.question for o in self._open.values()}
        taken |= await asyncio.to_thread(self.store.demonstrated_questions)
        for question in self.queue:
            if question.question.strip() not in taken:
                return question
        raise InvalidRequest("every queued question has a demonstration")

    def _state(self, session_id: str) -> SessionState:
        opened = self._open[session_id]
        session = opened.recorder.session
        first, last, lines = session.window()
        return SessionState(
            id=session_id,
            question=session.question,
            observation=opened.recorder.observation,
            title=session.page.display_title,
            url=session.page.url,
            first_line=first,
            last_line=last,
            total_lines=len(session.page.lines),
            lines=lines,
            quotes=list(session.quotes),
            past_actions=list(session.past_actions),
            actions_left=session.actions_left,
            can_go_back=session.can_go_back,
            done=session.done,
            end_reason=session.end_reason,
            event=opened.event,
        )


def _check_citations(answer: str | None, quotes: int) -> None:
    if answer is None or not answer.strip():
        raise InvalidRequest("answer: write the answer, citing quotes as [1], [2], ...")
    if not CITATION.search(answer):
        raise InvalidRequest("answer: cite at least one quote as [n]")
    _, dangling = check_citations(answer, quotes)
    if dangling:
        raise InvalidRequest(f"answer: there is no quote {dangling[0]} (quotes 1 to {quotes})")


def _load_queue(path: Path | None) -> list[Question]:
    if path is None:
        return []
    try:
        return load_questions(path)
    except DataError as error:
        raise ConfigurationError(f"the demonstration question queue: {error}") from None
