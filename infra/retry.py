"""One retry rule for every HTTP client of ours: the policy client (agent.openai_policy),
the remote reward scorer (reward.remote), and, mirrored because it ships alone, the SDK
(client/webgpt_client/_client.py; tests/test_retry.py keeps the two equal).

Only a request the server did not process is sent again: one that never left (connect
errors, no free connection) or one the server refused before working on it (429, 503),
after Retry-After when it says, else jittered exponential backoff. A timeout is never
retried: the server may still be working on the request, and sending it again would
multiply the load on a server that is already too slow (and, for a POST of feedback,
could store it twice).
"""

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx

logger = logging.getLogger(__name__)

NOT_SENT: tuple[type[httpx.HTTPError], ...] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
)
REFUSED_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 2
    backoff_s: float = 0.5
    max_retry_after_s: float = 10.0  # a longer Retry-After is capped, not obeyed

    def retries_error(self, error: BaseException) -> bool:
        return isinstance(error, NOT_SENT)

    def retries_status(self, status: int) -> bool:
        return status in REFUSED_STATUSES

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number attempt (1, 2, ...)."""
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_retry_after_s)
        return float(self.backoff_s * 2.0 ** (attempt - 1) * random.uniform(0.5, 1.5))

    async def send(
        self, request: Callable[[], Awaitable[httpx.Response]], target: str
    ) -> httpx.Response:
        """Call request() until it gives a response this rule does not retry, and return
        that response (whatever its status); raise the last attempt's httpx error when
        none did. A refused response that is retried is closed first. target names the
        server in the log line of each retry."""
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await request()
            except httpx.HTTPError as error:
                if not (self.retries_error(error) and attempt <= self.max_retries):
                    raise
                wait = self.delay(attempt)
                # Quiet: if it never connects, the caller reports the error once.
                logger.info("%s: %r, retry %d in %.1f s", target, error, attempt, wait)
            else:
                if not (self.retries_status(response.status_code) and attempt <= self.max_retries):
                    return response
                await response.aclose()
                wait = self.delay(attempt, retry_after(response))
                logger.warning(
                    "%s: HTTP %d, retry %d in %.1f s", target, response.status_code, attempt, wait
                )
            await asyncio.sleep(wait)


def retry_after(response: httpx.Response) -> float | None:
    """The Retry-After header in seconds, None when absent or not a number."""
    try:
        return float(response.headers.get("retry-after", ""))
    except ValueError:
        return None
