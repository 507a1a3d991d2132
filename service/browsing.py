"""Browser sessions a caller drives one command at a time, over HTTP or MCP.

A person recording a demonstration (service.demonstrating) and an agent host browsing
through our MCP tools (service.mcp_server) drive the same BrowserSession the policy's
episodes use: the same commands, SSRF guard, fetch limits and censoring. Sessions live in
this process's memory: at most `per_owner` for one API key and `total` in all, each closed
after `idle_s` without a command; another key's session is reported as missing.
"""

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from webgpt.browser.errors import EpisodeOver
from webgpt.browser.events import BrowserEvent
from webgpt.browser.session import BrowserSession, StepResult
from webgpt.browser.web import Web
from webgpt.evals.questions import Question
from webgpt.learning.demonstrations import Recorder
from webgpt.service.errors import InvalidRequest, NotFound, Overloaded, TooManySessions
from webgpt.service.protocol import SessionState


@dataclass
class OpenSession:
    owner: str
    recorder: Recorder
    last_used: float
    queued: Question | None = None  # a demonstration queue's question (gold answers, split)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # one command at a time
    event: BrowserEvent | None = None  # what the last command did

    @property
    def session(self) -> BrowserSession:
        return self.recorder.session


# What a new session browses for: its question, and the queued question it came from.
Pick = Callable[[], Awaitable[tuple[str, Question | None]]]


class BrowsingSessions:
    def __init__(
        self,
        web: Web,
        per_owner: int,
        total: int,
        idle_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.web = web
        self.per_owner = per_owner
        self.total = total
        self.idle_s = idle_s
        self.clock = clock
        self._open: dict[str, OpenSession] = {}
        self._creating = asyncio.Lock()

    async def create(self, owner: str, pick: Pick) -> str:
        """A new session's id; pick runs within the limit checks."""
        await self._expire()
        # From the limit checks to the insert, one create at a time: pick may await (a
        # queued question is looked up in the database), and two creates interleaved there
        # would both pass the limits and could take the same question. Expiring stays
        # outside: it only frees slots, and it awaits closing caches.
        async with self._creating:
            mine = sum(s.owner == owner for s in self._open.values())
            if mine >= self.per_owner:
                raise TooManySessions(
                    f"{mine} browser sessions are open for this key (the limit): "
                    "answer or abandon one first"
                )
            if len(self._open) >= self.total:
                raise Overloaded("too many browser sessions are open; retry later")
            question, queued = await pick()
            if not question.strip():
                raise InvalidRequest("question: the question is empty")
            session_id = secrets.token_urlsafe(16)
            recorder = Recorder(self.web.session(), question)  # no I/O: the first page is blank
            self._open[session_id] = OpenSession(owner, recorder, self.clock(), queued)
        return session_id

    async def step(self, owner: str, session_id: str, command: str) -> SessionState:
        """Apply one command of Table 1 (recorded, for a demonstration)."""
        return await self._act(owner, session_id, lambda opened: opened.recorder.step(command))

    async def open_url(self, owner: str, session_id: str, url: str) -> SessionState:
        """Open a page by its URL: for MCP hosts; not a command, so not recorded."""
        return await self._act(owner, session_id, lambda opened: opened.session.open_url(url))

    async def _act(
        self, owner: str, session_id: str, action: Callable[[OpenSession], Awaitable[StepResult]]
    ) -> SessionState:
        opened = await self.get(owner, session_id)
        async with opened.lock:  # a double click must not interleave two commands
            if opened.session.done:
                raise InvalidRequest("browsing has ended: write the answer or abandon")
            try:
                result = await action(opened)
            except EpisodeOver as error:
                raise InvalidRequest(str(error)) from None
            opened.event = result.event
            opened.last_used = self.clock()
        return self.state(session_id)

    async def get(self, owner: str, session_id: str) -> OpenSession:
        await self._expire()
        opened = self._open.get(session_id)
        # Another key's session is reported exactly like a missing one.
        if opened is None or opened.owner != owner:
            raise NotFound(f"no open browser session {session_id!r} (it may have expired)")
        return opened

    async def close(self, session_id: str) -> None:
        opened = self._open.pop(session_id, None)
        if opened is not None:
            await opened.session.cache.aclose()

    async def aclose(self) -> None:
        for session_id in list(self._open):
            await self.close(session_id)

    def questions(self) -> set[str]:
        """The questions open sessions browse for."""
        return {opened.recorder.question for opened in self._open.values()}

    def state(self, session_id: str) -> SessionState:
        opened = self._open[session_id]
        session = opened.session
        first, last, lines = session.window()
        return SessionState(
            id=session_id,
            question=session.question,
            observation=session.observation(),
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

    async def _expire(self) -> None:
        deadline = self.clock() - self.idle_s
        expired = [
            session_id
            for session_id, opened in self._open.items()
            if opened.last_used < deadline and not opened.lock.locked()
        ]
        # All leave the count before the first close awaits.
        closing = [self._open.pop(session_id) for session_id in expired]
        for opened in closing:
            await opened.session.cache.aclose()
