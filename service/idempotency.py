"""Requests repeated with the same `Idempotency-Key`: one answer, however often it is asked.

A client that times out and retries (the official `openai` client does, twice by default)
would otherwise start the whole answer again. A request that carries an `Idempotency-Key`
header is run once per caller and key: a repeat while it runs joins it, a repeat after it
ended gets its outcome (the answer, or an error the client should not retry) for
`idempotency_ttl_s`; a run that ended in an error worth retrying (429, 503: status_of) is
forgotten at once, so the client's retry runs the request again. The same key
with another request body is refused (422), as it names another request. The work goes on
when its client disconnects (a client that timed out is about to retry and join it), up to
the answer's deadline; a request without the key is cancelled on a disconnect instead.

Kept in this replica's memory, at most `max_idempotent_answers` ended outcomes (the oldest
go first); behind several replicas, a retry that reaches another replica runs again.
"""

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from webgpt.service.errors import InvalidRequest, status_of

T = TypeVar("T")
MAX_KEY_CHARS = 255


@dataclass
class _Run(Generic[T]):
    fingerprint: str
    task: "asyncio.Task[T]"
    ended_at: float | None = None


def fingerprint(route: str, body: Any) -> str:
    """What makes two requests the same request: the route and the body's JSON."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{route}\n{canonical}".encode()).hexdigest()


class IdempotentRequests(Generic[T]):
    def __init__(
        self, ttl_s: float, max_ended: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl_s = ttl_s
        self.max_ended = max_ended
        self.clock = clock
        self._runs: dict[tuple[str, str], _Run[T]] = {}

    async def aclose(self) -> None:
        """Cancel the work still running (the service is stopping)."""
        running = [run.task for run in self._runs.values() if not run.task.done()]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        self._runs.clear()

    async def run(
        self,
        caller: str,
        key: str,
        request_fingerprint: str,
        work: Callable[[], Awaitable[T]],
        on_repeat: Callable[[], None] = lambda: None,
    ) -> T:
        """work's outcome, run once for (caller, key)."""
        if not key or len(key) > MAX_KEY_CHARS:
            raise InvalidRequest(f"Idempotency-Key must be 1 to {MAX_KEY_CHARS} characters")
        self._forget_old()
        run = self._runs.get((caller, key))
        if run is not None and run.fingerprint != request_fingerprint:
            raise InvalidRequest(
                "this Idempotency-Key was used with another request; use a new key"
            )
        if run is None:
            run = self._start((caller, key), request_fingerprint, work)
        else:
            on_repeat()
        return await asyncio.shield(run.task)  # a request cancelled leaves the work running

    def _start(
        self, key: tuple[str, str], request_fingerprint: str, work: Callable[[], Awaitable[T]]
    ) -> _Run[T]:
        async def call() -> T:
            return await work()

        run = _Run(request_fingerprint, asyncio.ensure_future(call()))
        self._runs[key] = run

        def ended(task: "asyncio.Task[T]") -> None:
            run.ended_at = self.clock()
            error = None if task.cancelled() else task.exception()
            retry = isinstance(error, Exception) and status_of(error)[2]
            if retry and self._runs.get(key) is run:
                del self._runs[key]  # worth retrying: a retry must run it again

        run.task.add_done_callback(ended)
        return run

    def _forget_old(self) -> None:
        """Outcomes past their time, then the oldest beyond max_ended."""
        now = self.clock()
        ended = sorted((r.ended_at, k) for k, r in self._runs.items() if r.ended_at is not None)
        expired = [k for at, k in ended if now - at > self.ttl_s]
        over = max(0, len(ended) - len(expired) - self.max_ended)
        for k in expired + [k for _, k in ended[len(expired) : len(expired) + over]]:
            del self._runs[k]
