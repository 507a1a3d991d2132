"""Client / AsyncClient: the same methods, sync and async, sharing their logic."""

import asyncio
import os
import random
import time
from collections.abc import Sequence
from typing import Any

import httpx

from webgpt_client._admin import Admin, AsyncAdmin
from webgpt_client._exceptions import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    WebGPTError,
    status_error,
)
from webgpt_client._sessions import AsyncSessions, Sessions
from webgpt_client._streaming import AsyncStream, Stream
from webgpt_client.types import Answer, Feedback, Grade, Health, Message, Ratings, Readiness

DEFAULT_BASE_URL = "http://127.0.0.1:8080"
# The service's retry rule (infra/retry.py), mirrored because this package ships alone;
# tests/test_retry.py keeps them equal.
RETRIED_STATUSES = (429, 503)
# Failures before the request left this process: the server cannot have acted on it.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
MAX_RETRY_AFTER_S = 30.0
SSE = "text/event-stream"
NDJSON = "application/x-ndjson"
# Methods that change nothing: sending one again after a timeout cannot record anything
# twice.
SAFE_METHODS = ("GET", "HEAD")


class _BaseClient:
    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        timeout: float,
        max_retries: int,
    ) -> None:
        self.base_url = (base_url or os.environ.get("WEBGPT_BASE_URL") or DEFAULT_BASE_URL).rstrip(
            "/"
        )
        self.api_key = api_key if api_key is not None else os.environ.get("WEBGPT_API_KEY")
        self.timeout = timeout
        self.max_retries = max_retries

    def _headers(self, accept: str | None, idempotency_key: str | None) -> dict[str, str]:
        headers = {"User-Agent": "webgpt-client/0.1"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        if accept is not None:
            headers["Accept"] = accept
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        return headers

    @staticmethod
    def _body(question: str, **options: Any) -> dict[str, Any]:
        return {"question": question, **{k: v for k, v in options.items() if v is not None}}

    @staticmethod
    def _feedback_body(
        answer_id: str, better: int, worse: int, tie: bool, note: str | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "answer_id": answer_id,
            "better": better,
            "worse": worse,
            "tie": tie,
        }
        if note is not None:
            body["note"] = note
        return body

    @staticmethod
    def _graded_body(
        answer_id: str,
        a: int,
        b: int,
        grade: Grade,
        ratings_a: Ratings | None,
        ratings_b: Ratings | None,
        note: str | None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"kind": "graded", "answer_id": answer_id, "a": a, "b": b}
        body["grade"] = grade
        body["ratings_a"] = dict(ratings_a or {})
        body["ratings_b"] = dict(ratings_b or {})
        if note is not None:
            body["note"] = note
        return body

    @staticmethod
    def _demonstration_body(
        question: str, commands: list[str], answer: str, quotes: list[dict[str, str]] | None
    ) -> dict[str, Any]:
        return {
            "kind": "demonstration",
            "question": question,
            "commands": list(commands),
            "answer": answer,
            "quotes": list(quotes or []),
        }

    @staticmethod
    def _readiness(response: httpx.Response) -> Readiness:
        """/readyz's answer, "not ready" (503) included: that is what a probe is asked for,
        not a failure. A 503 that is no readiness (a proxy's page) is the typed error."""
        try:
            return Readiness.model_validate(response.json())
        except ValueError:  # not JSON, or not a readiness (pydantic's ValidationError)
            if response.status_code >= 400:
                raise status_error(response) from None
            raise

    def _delay(self, attempt: int, failure: WebGPTError) -> float:
        """The refusal's own Retry-After (capped: a misconfigured hour must not hang the
        caller), else exponential backoff with jitter."""
        if isinstance(failure, APIStatusError) and failure.retry_after_s is not None:
            return min(failure.retry_after_s, MAX_RETRY_AFTER_S)
        return float(0.5 * 2.0**attempt * random.uniform(0.5, 1.5))

    def _connection_failure(self, error: httpx.HTTPError) -> WebGPTError:
        if isinstance(error, httpx.TimeoutException):
            failure: WebGPTError = APITimeoutError(f"no answer from {self.base_url} in time")
        else:
            failure = APIConnectionError(f"cannot reach {self.base_url}: {error}")
        failure.__cause__ = error
        return failure

    def _should_retry(self, attempt: int, failure: WebGPTError, idempotent: bool) -> bool:
        """Only what is safe to send again: a refusal the server sent before doing the work
        (429, 503), or a request that never reached it. A read timeout or a dropped
        connection after sending may have been processed: a repeat would record a second
        answer or a duplicated comparison, which poisons training data, run a session's
        command twice, or find the session its first try closed gone (404); unless it
        carries an Idempotency-Key, when the service answers the repeat with the first
        request's outcome, or is a GET (a probe, an export), which changes nothing."""
        if attempt >= self.max_retries:
            return False
        if isinstance(failure, APIStatusError):
            return failure.status_code in RETRIED_STATUSES
        return idempotent or isinstance(failure.__cause__, NOT_SENT)


class Client(_BaseClient):
    """The webgpt service from synchronous code. `with Client() as client: ...`

    `client.sessions` records demonstrations (Sessions); `client.admin` exports what people
    recorded (Admin)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 600.0,
        max_retries: int = 2,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout, max_retries)
        self._http = http_client or httpx.Client(timeout=timeout)
        self.sessions = Sessions(self._request)
        self.admin = Admin(self._open_lines)

    def answer(
        self,
        question: str,
        *,
        n: int | None = None,
        temperature: float | None = None,
        max_actions: int | None = None,
        include_trace: bool | None = None,
        deadline_s: float | None = None,
        idempotency_key: str | None = None,
        history: Sequence[Message] | None = None,
    ) -> Answer:
        """Answer a question; returns the final result. n: episodes to browse; with more than
        one, the service's reward model picks the best (its version in `versions`).
        deadline_s: the most the service may take (504 DeadlineExceededError past it).
        idempotency_key: the service answers a repeat of this request with its first answer,
        so a timed-out request is retried too. history: the conversation before the
        question, so a follow-up is browsed as the question it means (`question_asked`;
        `conversation()` keeps it for you)."""
        body = self._body(
            question,
            history=list(history) if history else None,
            n=n,
            temperature=temperature,
            max_actions=max_actions,
            include_trace=include_trace,
            deadline_s=deadline_s,
        )
        response = self._request("POST", "/answer", body, idempotency_key=idempotency_key)
        return Answer.model_validate(response.json())

    def stream(
        self,
        question: str,
        *,
        n: int | None = None,
        temperature: float | None = None,
        max_actions: int | None = None,
        deadline_s: float | None = None,
        history: Sequence[Message] | None = None,
    ) -> Stream:
        """Answer a question, getting the trace events as they happen (ends with `final`)."""
        body = self._body(
            question,
            history=list(history) if history else None,
            n=n,
            temperature=temperature,
            max_actions=max_actions,
            deadline_s=deadline_s,
            stream=True,
        )
        return Stream(self._request("POST", "/answer", body, stream=True, accept=SSE))

    def conversation(self) -> "Conversation":
        """A conversation: each question is answered with the ones before it and their
        answers, so "When did he die?" after "Who wrote Hamlet?" asks about Shakespeare."""
        return Conversation(self)

    def feedback(
        self, answer_id: str, *, better: int, worse: int, tie: bool = False, note: str | None = None
    ) -> Feedback:
        """Record which of two candidates of an answer is better (or that they tie)."""
        body = self._feedback_body(answer_id, better, worse, tie, note)
        return Feedback.model_validate(self._request("POST", "/feedback", body).json())

    def compare(
        self,
        answer_id: str,
        *,
        a: int,
        b: int,
        grade: Grade,
        ratings_a: Ratings | None = None,
        ratings_b: Ratings | None = None,
        note: str | None = None,
    ) -> Feedback:
        """Record a graded comparison of candidates a and b (as shown to the rater as A and
        B): WebGPT's 5-point preference and, per answer, optional ratings."""
        body = self._graded_body(answer_id, a, b, grade, ratings_a, ratings_b, note)
        return Feedback.model_validate(self._request("POST", "/feedback", body).json())

    def demonstrate(
        self,
        question: str,
        *,
        commands: list[str],
        answer: str,
        quotes: list[dict[str, str]] | None = None,
    ) -> Feedback:
        """Record a demonstration given as bare commands (browsed elsewhere); `webgpt
        feedback export --demonstrations` replays them on the offline web to record what
        each showed. `sessions` records one as it is browsed instead."""
        body = self._demonstration_body(question, commands, answer, quotes)
        return Feedback.model_validate(self._request("POST", "/feedback", body).json())

    def health(self) -> Health:
        """The liveness probe (GET /healthz, no key needed): `.ok` when the process answers."""
        return Health.model_validate(self._request("GET", "/healthz").json())

    def ready(self) -> Readiness:
        """The readiness probe (GET /readyz, no key needed): each dependency's state from the
        service's last check; "not ready" (a 503) is returned, not raised."""
        return self._readiness(self._request("GET", "/readyz", answers=(503,)))

    def _open_lines(self, path: str) -> httpx.Response:
        """A GET of JSON lines, its body left to stream (JSONLines reads it)."""
        return self._request("GET", path, stream=True, accept=NDJSON)

    def _request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        stream: bool = False,
        accept: str | None = None,
        idempotency_key: str | None = None,
        answers: tuple[int, ...] = (),
    ) -> httpx.Response:
        """The response to a request, sent again where _should_retry allows; a typed error
        for an error status, unless `answers` lists it (an answer of the route, as a probe's
        503)."""
        idempotent = method in SAFE_METHODS or idempotency_key is not None
        attempt = 0
        while True:
            try:
                request = self._http.build_request(
                    method,
                    f"{self.base_url}{path}",
                    json=body,
                    headers=self._headers(accept, idempotency_key),
                )
                response = self._http.send(request, stream=stream)
            except httpx.HTTPError as error:
                failure = self._connection_failure(error)
            else:
                if response.status_code < 400 or response.status_code in answers:
                    return response
                response.read()
                response.close()
                failure = status_error(response)
            if not self._should_retry(attempt, failure, idempotent):
                raise failure
            time.sleep(self._delay(attempt, failure))
            attempt += 1

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_BaseClient):
    """The webgpt service from asyncio code. `async with AsyncClient() as client: ...`

    `client.sessions` records demonstrations (AsyncSessions); `client.admin` exports what
    people recorded (AsyncAdmin)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 600.0,
        max_retries: int = 2,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout, max_retries)
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self.sessions = AsyncSessions(self._request)
        self.admin = AsyncAdmin(self._open_lines)

    async def answer(
        self,
        question: str,
        *,
        n: int | None = None,
        temperature: float | None = None,
        max_actions: int | None = None,
        include_trace: bool | None = None,
        deadline_s: float | None = None,
        idempotency_key: str | None = None,
        history: Sequence[Message] | None = None,
    ) -> Answer:
        body = self._body(
            question,
            history=list(history) if history else None,
            n=n,
            temperature=temperature,
            max_actions=max_actions,
            include_trace=include_trace,
            deadline_s=deadline_s,
        )
        response = await self._request("POST", "/answer", body, idempotency_key=idempotency_key)
        return Answer.model_validate(response.json())

    async def stream(
        self,
        question: str,
        *,
        n: int | None = None,
        temperature: float | None = None,
        max_actions: int | None = None,
        deadline_s: float | None = None,
        history: Sequence[Message] | None = None,
    ) -> AsyncStream:
        body = self._body(
            question,
            history=list(history) if history else None,
            n=n,
            temperature=temperature,
            max_actions=max_actions,
            deadline_s=deadline_s,
            stream=True,
        )
        return AsyncStream(await self._request("POST", "/answer", body, stream=True, accept=SSE))

    def conversation(self) -> "AsyncConversation":
        """A conversation: each question is answered with the ones before it and their
        answers, so "When did he die?" after "Who wrote Hamlet?" asks about Shakespeare."""
        return AsyncConversation(self)

    async def feedback(
        self, answer_id: str, *, better: int, worse: int, tie: bool = False, note: str | None = None
    ) -> Feedback:
        body = self._feedback_body(answer_id, better, worse, tie, note)
        response = await self._request("POST", "/feedback", body)
        return Feedback.model_validate(response.json())

    async def compare(
        self,
        answer_id: str,
        *,
        a: int,
        b: int,
        grade: Grade,
        ratings_a: Ratings | None = None,
        ratings_b: Ratings | None = None,
        note: str | None = None,
    ) -> Feedback:
        body = self._graded_body(answer_id, a, b, grade, ratings_a, ratings_b, note)
        response = await self._request("POST", "/feedback", body)
        return Feedback.model_validate(response.json())

    async def demonstrate(
        self,
        question: str,
        *,
        commands: list[str],
        answer: str,
        quotes: list[dict[str, str]] | None = None,
    ) -> Feedback:
        body = self._demonstration_body(question, commands, answer, quotes)
        response = await self._request("POST", "/feedback", body)
        return Feedback.model_validate(response.json())

    async def health(self) -> Health:
        return Health.model_validate((await self._request("GET", "/healthz")).json())

    async def ready(self) -> Readiness:
        return self._readiness(await self._request("GET", "/readyz", answers=(503,)))

    async def _open_lines(self, path: str) -> httpx.Response:
        return await self._request("GET", path, stream=True, accept=NDJSON)

    async def _request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        stream: bool = False,
        accept: str | None = None,
        idempotency_key: str | None = None,
        answers: tuple[int, ...] = (),
    ) -> httpx.Response:
        idempotent = method in SAFE_METHODS or idempotency_key is not None
        attempt = 0
        while True:
            try:
                request = self._http.build_request(
                    method,
                    f"{self.base_url}{path}",
                    json=body,
                    headers=self._headers(accept, idempotency_key),
                )
                response = await self._http.send(request, stream=stream)
            except httpx.HTTPError as error:
                failure = self._connection_failure(error)
            else:
                if response.status_code < 400 or response.status_code in answers:
                    return response
                await response.aread()
                await response.aclose()
                failure = status_error(response)
            if not self._should_retry(attempt, failure, idempotent):
                raise failure
            await asyncio.sleep(self._delay(attempt, failure))
            attempt += 1

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


__all__ = ["APIStatusError", "AsyncClient", "Client"]


class Conversation:
    """Questions asked one after another, each answered with the conversation so far
    (`Client.conversation()`). `history` is what the service is sent: each question and
    the answer served to it."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self.history: list[Message] = []

    def ask(self, question: str, **options: Any) -> Answer:
        """Answer a question of the conversation (options as `Client.answer`'s); a follow-up
        is browsed as the question it means (`Answer.question_asked`)."""
        answer = self._client.answer(question, history=self.history, **options)
        self.history += _exchange(question, answer)
        return answer


class AsyncConversation:
    """Conversation, for AsyncClient."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client
        self.history: list[Message] = []

    async def ask(self, question: str, **options: Any) -> Answer:
        answer = await self._client.answer(question, history=self.history, **options)
        self.history += _exchange(question, answer)
        return answer


def _exchange(question: str, answer: Answer) -> list[Message]:
    return [
        {"role": "user", "content": question},
        {"role": "assistant", "content": answer.answer or ""},
    ]
