"""Server-sent event streams as iterators of typed events (sync and async twins)."""

import json
from collections.abc import AsyncIterator, Iterator

import httpx

from webgpt_client._exceptions import APIConnectionError
from webgpt_client.types import AnyEvent, parse_event

INCOMPLETE = "the stream ended before [DONE]: the connection or the server broke off"


def _event(line: str) -> AnyEvent | None:
    """The event of one SSE line, None for other lines; raises StopIteration at [DONE]."""
    if not line.startswith("data:"):
        return None
    data = line[len("data:") :].strip()
    if data == "[DONE]":
        raise StopIteration
    return parse_event(json.loads(data))


class Stream:
    """Iterate to get events as they happen; use as a context manager to close early."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response

    def __iter__(self) -> Iterator[AnyEvent]:
        try:
            for line in self.response.iter_lines():
                try:
                    event = _event(line)
                except StopIteration:
                    return
                if event is not None:
                    yield event
            raise APIConnectionError(INCOMPLETE)
        except httpx.HTTPError as error:
            raise APIConnectionError(f"the stream broke: {error!r}") from error
        finally:
            self.close()

    def close(self) -> None:
        self.response.close()

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncStream:
    def __init__(self, response: httpx.Response) -> None:
        self.response = response

    async def __aiter__(self) -> AsyncIterator[AnyEvent]:
        try:
            async for line in self.response.aiter_lines():
                try:
                    event = _event(line)
                except StopIteration:
                    return
                if event is not None:
                    yield event
            raise APIConnectionError(INCOMPLETE)
        except httpx.HTTPError as error:
            raise APIConnectionError(f"the stream broke: {error!r}") from error
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        await self.response.aclose()

    async def __aenter__(self) -> "AsyncStream":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
