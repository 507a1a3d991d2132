"""Service errors and the one place that maps exceptions to HTTP statuses.

Hierarchy::

    ServiceError
    ├── Unauthorized       401: missing or wrong bearer key
    ├── Forbidden          403: the key lacks the role the route needs (service.access)
    ├── PayloadTooLarge    413: the request body is over the limit
    ├── NotFound           404: no such browser session (or not the caller's)
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


class Overloaded(ServiceError):
    pass


class DatabaseUnavailable(ServiceError):
    """A write that must reach the feedback database (feedback, a demonstration) while it is
    down; answers never wait on it (service.recording)."""


class DeadlineExceeded(ServiceError):
    pass


def status_of(error: Exception) -> tuple[int, str, bool]:
    """(HTTP status, error type, whether to send Retry-After) for an exception."""
    mapping: list[tuple[type[Exception], int, str, bool]] = [
        (Unauthorized, 401, "unauthorized", False),
        (Forbidden, 403, "forbidden", False),
        (RateLimited, 429, "rate_limited", True),
        (PayloadTooLarge, 413, "payload_too_large", False),
        (NotFound, 404, "not_found", False),
        (InvalidRequest, 422, "invalid_request", False),
        (Overloaded, 429, "overloaded", True),
        (DatabaseUnavailable, 503, "database_unavailable", True),
        (DeadlineExceeded, 504, "deadline_exceeded", False),
        (ConfigurationError, 400, "bad_request", False),
        (PolicyError, 503, "policy_unavailable", True),
        (RewardServerError, 503, "reward_unavailable", True),
        (AgentError, 500, "agent_error", False),
    ]
    for kind, status, name, retry in mapping:
        if isinstance(error, kind):
            return status, name, retry
    return 500, "internal_error", False


def retry_after(error: Exception, default_s: int) -> int:
    """The Retry-After seconds for an error status_of says to send it with."""
    return error.retry_after_s if isinstance(error, RateLimited) else default_s


def public_message(error: Exception) -> str:
    """What a client is told: the error itself, but no internals of a server-side fault."""
    status, _, _ = status_of(error)
    return str(error) if status < 500 or status in (503, 504) else "internal error"
