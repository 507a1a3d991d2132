"""Browser sessions a person drives to record a demonstration (`/sessions`).

A session is the policy's own browser: each command of Table 1 (`Search ...`, `Clicked on
link n`, `Quote: ...`, `End: Answer`, ...) returns the state the person sees, and the
answer stores the whole episode as a demonstration, as `webgpt train bc` reads it. The
routes need a key with the `label` role: what a session records becomes training data.
"""

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import httpx

from webgpt_client.types import Feedback, SessionState

# Client._request / AsyncClient._request: (method, path, JSON body or None) -> response,
# with the client's retries and typed errors.
Request = Callable[[str, str, dict[str, Any] | None], httpx.Response]
AsyncRequest = Callable[[str, str, dict[str, Any] | None], Awaitable[httpx.Response]]


def _create_body(question: str | None, from_queue: bool) -> dict[str, Any]:
    # Only what was given: the service says which of the two is missing or one too many.
    body: dict[str, Any] = {}
    if question is not None:
        body["question"] = question
    if from_queue:
        body["from_queue"] = True
    return body


def _path(session_id: str, action: str | None = None) -> str:
    # Quoted whole: an id is the service's token, never a path of ours to walk.
    path = f"/sessions/{quote(session_id, safe='')}"
    return f"{path}/{action}" if action else path


class Sessions:
    """`client.sessions`: create a session, step it command by command, then answer (stored)
    or abandon it (nothing stored). A closed or expired session is a NotFoundError."""

    def __init__(self, request: Request) -> None:
        self._request = request

    def create(self, question: str | None = None, *, from_queue: bool = False) -> SessionState:
        """Open a session on a typed question, or on the next of the operator's queue
        (from_queue=True; its gold answers and split go into the record)."""
        body = _create_body(question, from_queue)
        return SessionState.model_validate(self._request("POST", "/sessions", body).json())

    def step(self, session_id: str, command: str) -> SessionState:
        """Run one browsing command; text that is no command costs an action, as it would
        the policy (the state's event is then `invalid_action`)."""
        response = self._request("POST", _path(session_id, "step"), {"command": command})
        return SessionState.model_validate(response.json())

    def answer(self, session_id: str, answer: str | None) -> Feedback:
        """Store the demonstration and close the session. After `End: Answer` the answer
        cites quotes as [1], [2], ...; after `End: Nonsense` or `End: Controversial` it is
        None."""
        response = self._request("POST", _path(session_id, "answer"), {"answer": answer})
        return Feedback.model_validate(response.json())

    def abandon(self, session_id: str) -> None:
        """Close the session without storing anything."""
        self._request("DELETE", _path(session_id), None)


class AsyncSessions:
    """`AsyncClient.sessions`: the same methods as `Sessions`, awaited."""

    def __init__(self, request: AsyncRequest) -> None:
        self._request = request

    async def create(
        self, question: str | None = None, *, from_queue: bool = False
    ) -> SessionState:
        body = _create_body(question, from_queue)
        response = await self._request("POST", "/sessions", body)
        return SessionState.model_validate(response.json())

    async def step(self, session_id: str, command: str) -> SessionState:
        response = await self._request("POST", _path(session_id, "step"), {"command": command})
        return SessionState.model_validate(response.json())

    async def answer(self, session_id: str, answer: str | None) -> Feedback:
        response = await self._request("POST", _path(session_id, "answer"), {"answer": answer})
        return Feedback.model_validate(response.json())

    async def abandon(self, session_id: str) -> None:
        await self._request("DELETE", _path(session_id), None)
