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
        │   ├── PayloadTooLargeError    413
        │   ├── UnprocessableEntityError 422
        │   ├── RateLimitError          429: the key's rate limit, or the service is full
        │   ├── InternalServerError     500 and other 5xx
        │   ├── ServiceUnavailableError 503
        │   └── DeadlineExceededError   504: the answer took longer than its deadline
        └── StreamError                 the service reported an error inside a stream
"""

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
    """status_code, request_id (the service's x-request-id), type and message of the error."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.status_code = response.status_code
        self.request_id: str | None = response.headers.get("x-request-id")
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
