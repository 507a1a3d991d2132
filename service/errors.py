"""Service errors and the one place that maps exceptions to HTTP statuses.

Hierarchy::

    ServiceError
    ├── Unauthorized       401: missing or wrong bearer key
    ├── Forbidden          403: the key lacks the role the route needs (service.access)
    ├── PayloadTooLarge    413: the request body is over the limit
    ├── NotFound           404: no such route, or browser session (or not the caller's)
    ├── MethodNotAllowed   405: the route takes other methods (Allow: them)
    ├── TooManySessions    409: the key holds all the browser sessions it may (waiting frees none)
    ├── InvalidRequest     422: a field is outside what this service allows
    ├── RateLimited        429: the key used up its rate limit (Retry-After: its own wait)
    ├── Overloaded         429: too many requests are waiting (Retry-After)
    ├── DatabaseUnavailable 503: the feedback database cannot take a write now (Retry-After)
    ├── RewardUnavailable  503: the reward model a request needs is not loaded (Retry-After)
    └── DeadlineExceeded   504: the answer did not finish within its deadline

Agent and reward errors map too: ConfigurationError → 400, PolicyError and
RewardServerError → 503 (Retry-After); the framework's own (Starlette's HTTPException)
keep their status. Request validation errors become InvalidRequest with
`validation_message`, so every route words a bad body the same way.
"""

from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from starlette.exceptions import HTTPException

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


class MethodNotAllowed(ServiceError):
    """The path is a route, but not for this method; allow lists the ones it takes."""

    def __init__(self, message: str, allow: str) -> None:
        super().__init__(message)
        self.allow = allow


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


class RewardUnavailable(ServiceError):
    """A request asks for more than one episode and the reward model that picks among them
    could not be loaded (its cause is in the service's log), or has no version yet."""


class DeadlineExceeded(ServiceError):
    pass


# (exception, HTTP status, error kind, whether to send Retry-After), the first match wins.
ERRORS: list[tuple[type[Exception], int, str, bool]] = [
    (Unauthorized, 401, "unauthorized", False),
    (Forbidden, 403, "forbidden", False),
    (RateLimited, 429, "rate_limited", True),
    (PayloadTooLarge, 413, "payload_too_large", False),
    (NotFound, 404, "not_found", False),
    (MethodNotAllowed, 405, "method_not_allowed", False),
    (TooManySessions, 409, "too_many_sessions", False),
    (InvalidRequest, 422, "invalid_request", False),
    (Overloaded, 429, "overloaded", True),
    (DatabaseUnavailable, 503, "database_unavailable", True),
    (RewardUnavailable, 503, "reward_unavailable", True),
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
    if isinstance(error, HTTPException):
        phrase = HTTPStatus(error.status_code).phrase
        return error.status_code, phrase.lower().replace(" ", "_").replace("-", "_"), False
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
    if status >= 500 and status not in (503, 504):
        return "internal error"
    return error.detail if isinstance(error, HTTPException) else str(error)


# pydantic error types of a value that should have been a JSON object
_NOT_AN_OBJECT = {"model_attributes_type", "model_type", "dict_type"}


def validation_message(errors: Sequence[Mapping[str, Any]], body: Any = None) -> str:
    """One readable sentence for a request that failed validation (pydantic's errors, the
    first one told): the field and what is wrong with it, or what is wrong with the body as
    a whole (not JSON, missing, not an object), never a JSON position posing as a field."""
    if not errors:
        return "invalid request"
    first = errors[0]
    kind, loc, message = first.get("type"), tuple(first.get("loc", ())), str(first.get("msg"))
    in_body = loc[:1] == ("body",)
    where = ".".join(str(part) for part in (loc[1:] if in_body else loc))
    if kind == "json_invalid":
        reason = first.get("ctx", {}).get("error", "")
        at = f" at character {loc[1]}" if len(loc) > 1 else ""
        return f"the body is not valid JSON ({reason}{at})" if reason else "the body is not JSON"
    if in_body and kind == "missing" and len(loc) == 1:
        return "the request has no body: send a JSON object"
    if in_body and kind in _NOT_AN_OBJECT and first.get("input") is body:
        return "the body should be a JSON object"
    message = message.removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def invalid_request(errors: Sequence[Mapping[str, Any]], body: Any = None) -> InvalidRequest:
    """The InvalidRequest (422) of a request that failed validation."""
    return InvalidRequest(validation_message(errors, body))
