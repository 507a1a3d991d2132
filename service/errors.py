"""Service errors and the one place that maps exceptions to HTTP statuses.

Hierarchy::

    ServiceError
    ├── Unauthorized       401: missing or wrong bearer key
    ├── Forbidden          403: the key lacks the role the route needs (service.access)
    ├── PayloadTooLarge    413: the request body is over the limit
    ├── NotFound           404: no such browser session (or not the caller's)
    ├── TooManySessions    409: the key holds all the browser sessions it may (waiting frees none)
    ├── InvalidRequest     422: a field is outside what this service allows
    ├── RateLimited        429: the key used up its rate limit (Retry-After: its own wait)
    ├── Overloaded         429: too many requests are waiting (Retry-After)
    ├── DatabaseUnavailable 503: the feedback database cannot take a write now (Retry-After)
    └── DeadlineExceeded   504: the answer did not finish within its deadline

Agent and reward errors map too: ConfigurationError → 400, PolicyError and
RewardServerError → 503 (Retry-After).
"""

from webgpt.agent.errors import AgentError, ConfigurationError, PolicyError
from webgpt.reward.errors import RewardServerError


class ServiceError(Exception):
    """Root of the errors the service raises on purpose."""


class Unauthorized(ServiceError):
    pass


class Forbidden(ServiceError):
    pass


class RateLimited(ServiceError):
    """A key's token bucket is empty; retry_after_s is when it holds a token again."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class PayloadTooLarge(ServiceError):
    pass


class NotFound(ServiceError):
    pass


class InvalidRequest(ServiceError):
    pass


class TooManySessions(ServiceError):
    """A key's open browser sessions are at its limit: only answering or abandoning one
    frees a slot, so this is not retried (a full service, in all, is Overloaded)."""


class Overloaded(ServiceError):
    pass


class DatabaseUnavailable(ServiceError):
    """A write that must reach the feedback database (feedback, a demonstration) while it is
    down; answers never wait on it (service.recording)."""


class DeadlineExceeded(ServiceError):
    pass


# (exception, HTTP status, error kind, whether to send Retry-After), the first match wins.
ERRORS: list[tuple[type[Exception], int, str, bool]] = [
    (Unauthorized, 401, "unauthorized", False),
    (Forbidden, 403, "forbidden", False),
    (RateLimited, 429, "rate_limited", True),
    (PayloadTooLarge, 413, "payload_too_large", False),
    (NotFound, 404, "not_found", False),
    (TooManySessions, 409, "too_many_sessions", False),
    (InvalidRequest, 422, "invalid_request", False),
    (Overloaded, 429, "overloaded", True),
    (DatabaseUnavailable, 503, "database_unavailable", True),
    (DeadlineExceeded, 504, "deadline_exceeded", False),
    (ConfigurationError, 400, "bad_request", False),
    (PolicyError, 503, "policy_unavailable", True),
    (RewardServerError, 503, "reward_unavailable", True),
    (AgentError, 500, "agent_error", False),
]


def status_of(error: Exception) -> tuple[int, str, bool]:
    """(HTTP status, error kind, whether to send Retry-After) for an exception."""
    for kind, status, name, retry in ERRORS:
        if isinstance(error, kind):
            return status, name, retry
    return 500, "internal_error", False


def status_of_kind(kind: str) -> int:
    """The HTTP status of an error kind (a stream's `error` event names only the kind)."""
    return next((status for _, status, name, _ in ERRORS if name == kind), 500)


def retry_after(error: Exception, default_s: int) -> int:
    """The Retry-After seconds for an error status_of says to send it with."""
    return error.retry_after_s if isinstance(error, RateLimited) else default_s


def public_message(error: Exception) -> str:
    """What a client is told: the error itself, but no internals of a server-side fault."""
    status, _, _ = status_of(error)
    return str(error) if status < 500 or status in (503, 504) else "internal error"
