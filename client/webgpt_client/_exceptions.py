"""Errors the SDK raises.

Hierarchy::

    WebGPTError
    └── APIError
        ├── APIConnectionError          the service could not be reached
        │   └── APITimeoutError         no answer in time
        ├── APIStatusError              the service answered with an error status
        │   ├── BadRequestError         400
        │   ├── AuthenticationError     401
        │   ├── PermissionDeniedError   403: the key lacks the role (answer, label, admin)
        │   ├── NotFoundError           404: no such browser session (closed, expired)
        │   ├── ConflictError           409: the key holds all the browser sessions it may
        │   ├── PayloadTooLargeError    413
        │   ├── UnprocessableEntityError 422
        │   ├── RateLimitError          429: the key's rate limit, or the service is full
        │   ├── InternalServerError     500 and other 5xx
        │   ├── ServiceUnavailableError 503: the policy, reward model or database is down
        │   └── DeadlineExceededError   504: the answer took longer than its deadline
        └── StreamError                 the service reported an error inside a stream

RateLimitError and ServiceUnavailableError are refusals the service made before doing any
work: the client retries them after their `retry_after_s` (the Retry-After header).
"""

import math

import httpx


class WebGPTError(Exception):
    pass


class APIError(WebGPTError):
    pass


class APIConnectionError(APIError):
    pass


class APITimeoutError(APIConnectionError):
    pass


class StreamError(APIError):
    def __init__(self, message: str, error_type: str) -> None:
        super().__init__(message)
        self.type = error_type


class APIStatusError(APIError):
    """status_code, request_id (the service's x-request-id), type and message of the error,
    and retry_after_s: the seconds its Retry-After header asks to wait, if it sent one."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.status_code = response.status_code
        self.request_id: str | None = response.headers.get("x-request-id")
        self.retry_after_s = _seconds(response.headers.get("retry-after"))
        self.type = "unknown"
        self.message = response.text[:500]
        try:
            error = response.json()["error"]
            self.type, self.message = str(error["type"]), str(error["message"])
        except (ValueError, KeyError, TypeError):
            pass
        super().__init__(
            f"{self.status_code} {self.type}: {self.message} (request {self.request_id})"
        )


class BadRequestError(APIStatusError):
    pass


class AuthenticationError(APIStatusError):
    pass


class PermissionDeniedError(APIStatusError):
    pass


class NotFoundError(APIStatusError):
    pass


class ConflictError(APIStatusError):
    """409: answer or abandon one of the key's browser sessions first (not retried)."""


class PayloadTooLargeError(APIStatusError):
    pass


class UnprocessableEntityError(APIStatusError):
    pass


class RateLimitError(APIStatusError):
    pass


class InternalServerError(APIStatusError):
    pass


class ServiceUnavailableError(APIStatusError):
    pass


class DeadlineExceededError(APIStatusError):
    pass


_BY_STATUS = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: UnprocessableEntityError,
    429: RateLimitError,
    503: ServiceUnavailableError,
    504: DeadlineExceededError,
}


def status_error(response: httpx.Response) -> APIStatusError:
    kind = _BY_STATUS.get(response.status_code)
    if kind is None:
        kind = InternalServerError if response.status_code >= 500 else APIStatusError
    return kind(response)


def _seconds(retry_after: str | None) -> float | None:
    """Retry-After in seconds, the form the service sends; None for anything else (an
    HTTP date from a proxy, garbage), which leaves the wait to the client's backoff."""
    try:
        seconds = float(retry_after or "")
    except ValueError:
        return None
    return max(0.0, seconds) if math.isfinite(seconds) else None
