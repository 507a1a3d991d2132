"""Python SDK for the webgpt answering service (depends only on httpx and pydantic)."""

from webgpt_client._client import AsyncClient, Client
from webgpt_client._exceptions import (
    APIConnectionError,
    APIError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    InternalServerError,
    PayloadTooLargeError,
    RateLimitError,
    ServiceUnavailableError,
    StreamError,
    UnprocessableEntityError,
    WebGPTError,
)
from webgpt_client._streaming import AsyncStream, Stream
from webgpt_client.types import (
    Answer,
    AnyEvent,
    Candidate,
    Event,
    Feedback,
    Grade,
    Ratings,
    Reference,
)

__all__ = [
    "APIConnectionError",
    "APIError",
    "APIStatusError",
    "APITimeoutError",
    "Answer",
    "AnyEvent",
    "AsyncClient",
    "AsyncStream",
    "AuthenticationError",
    "BadRequestError",
    "Candidate",
    "Client",
    "Event",
    "Feedback",
    "Grade",
    "InternalServerError",
    "PayloadTooLargeError",
    "RateLimitError",
    "Ratings",
    "Reference",
    "ServiceUnavailableError",
    "Stream",
    "StreamError",
    "UnprocessableEntityError",
    "WebGPTError",
]
