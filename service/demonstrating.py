"""Browser sessions that people drive to record demonstrations (the page's Demonstrate mode).

Every command goes through the same BrowserSession and Recorder as the policy's episodes
and the scripted demonstrator's, so what is stored is the demonstration schema itself
(learning.demonstrations): the observations exactly as shown, the commands, the quotes and
the answer; `webgpt feedback export --demonstrations` hands it to `webgpt train bc`.

Sessions are service.browsing's: at most `max_demo_sessions_per_key` per API key and
`max_demo_sessions` in all, each closed after `demo_session_idle_s` without a command.
Behind several replicas a person must stay on one replica (docs/service.md, "Recording
demonstrations").
"""

import asyncio
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from webgpt.agent.answer_rules import CITATION
from webgpt.agent.episode import check_citations
from webgpt.agent.errors import ConfigurationError, DataError
from webgpt.browser.web import Web
from webgpt.evals.questions import Question, load_questions
from webgpt.learning.demonstrations import Demonstration
from webgpt.service.browsing import BrowsingSessions
from webgpt.service.errors import InvalidRequest
from webgpt.service.protocol import FeedbackReceipt, SessionState
from webgpt.service.settings import ServiceSettings


class DemonstrationStore(Protocol):
    """Where recorded demonstrations go (service.store.FeedbackStore); called in a thread."""

    def demonstrated_questions(self) -> set[str]: ...

    def add_recorded_demonstration(self, demo: Demonstration) -> int: ...


class DemonstrationSessions:
    def __init__(
        self,
        web: Web,
        store: DemonstrationStore,
        settings: ServiceSettings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.queue = _load_queue(settings.demo_questions)
        self.sessions = BrowsingSessions(
            web,
            per_owner=settings.max_demo_sessions_per_key,
            total=settings.max_demo_sessions,
            idle_s=settings.demo_session_idle_s,
            clock=clock,
        )

    async def create(self, owner: str, question: str | None, from_queue: bool) -> SessionState:
        if (question is None) == (not from_queue):
            raise InvalidRequest("give either a question or from_queue: true")
        if from_queue and not self.queue:
            raise InvalidRequest("no question queue is loaded (WEBGPT_DEMO_QUESTIONS)")

        async def pick() -> tuple[str, Question | None]:
            if not from_queue:
                return str(question), None
            queued = await self._next_queued()
            return queued.question, queued

        return self.sessions.state(await self.sessions.create(owner, pick))

    async def step(self, owner: str, session_id: str, command: str) -> SessionState:
        return await self.sessions.step(owner, session_id, command)

    async def answer(self, owner: str, session_id: str, answer: str | None) -> FeedbackReceipt:
        """Store the demonstration and close the session."""
        opened = await self.sessions.get(owner, session_id)
        async with opened.lock:
            session = opened.session
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
            await self.sessions.close(session_id)
        return FeedbackReceipt(id=row, kind="demonstration")

    async def abandon(self, owner: str, session_id: str) -> None:
        await self.sessions.get(owner, session_id)
        await self.sessions.close(session_id)

    async def aclose(self) -> None:
        await self.sessions.aclose()

    async def _next_queued(self) -> Question:
        """The first queued question nobody has demonstrated or is demonstrating."""
        # Open sessions first, then the database: answer() stores before it closes, so a
        # question whose session closes during the read is in one or the other.
        taken = self.sessions.questions()
        taken |= await asyncio.to_thread(self.store.demonstrated_questions)
        for question in self.queue:
            if question.question.strip() not in taken:
                return question
        raise InvalidRequest("every queued question has a demonstration")


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
