"""Service errors and the one place that maps exceptions to HTTP statuses.

Hierarchy::

    ServiceError
    ├── Unauthorized       401: missing or wrong bearer key
    ├── PayloadTooLarge    413: the request body is over the limit
    ├── NotFound           404: no such browser session (or not the caller's)
    ├── InvalidRequest     422: a field is outside what this service allows
    └── Overloaded         429: too many requests are waiting (Retry-After)

Agent and reward errors map too: ConfigurationError → 400, PolicyError and
RewardServerError → 503 (Retry-After).
"""

from webgpt.agent.errors import AgentError, ConfigurationError, PolicyError
from webgpt.reward.errors import RewardServerError


class ServiceError(Exception):
    """Root of the errors the service raises on purpose."""


class Unauthorized(ServiceError):
    pass


class PayloadTooLarge(ServiceError):
    pass


class NotFound(ServiceError):
    pass


class InvalidRequest(ServiceError):
    pass


class Overloaded(ServiceError):
    pass


def status_of(error: Exception) -> tuple[int, str, bool]:
    """(HTTP status, error type, whether to send Retry-After) for an exception."""
    mapping: list[tuple[type[Exception], int, str, bool]] = [
        (Unauthorized, 401, "unauthorized", False),
        (PayloadTooLarge, 413, "payload_too_large", False),
        (NotFound, 404, "not_found", False),
        (InvalidRequest, 422, "invalid_request", False),
        (Overloaded, 429, "overloaded", True),
        (ConfigurationError, 400, "bad_request", False),
        (PolicyError, 503, "policy_unavailable", True),
        (RewardServerError, 503, "reward_unavailable", True),
        (AgentError, 500, "agent_error", False),
    ]
    for kind, status, name, retry in mapping:
        if isinstance(error, kind):
            return status, name, retry
    return 500, "internal_error", False


def public_message(error: Exception) -> str:
    """What a client is told: the error itself, but no internals of a server-side fault."""
    status, _, _ = status_of(error)
    return str(error) if status < 500 or status == 503 else "internal error"
