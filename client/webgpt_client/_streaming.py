"""Server-sent event streams as iterators of typed events (sync and async twins).

httpx-sse splits the bytes into events (comment lines such as the service's `: ping` are
dropped there); what is ours is the protocol on top: each event's data is one JSON event,
and `data: [DONE]` is the only proper end. A stream that stops before [DONE] was cut off
(by a proxy, the network, a dying server), so it raises rather than end quietly with events
missing.
"""

import json
from collections.abc import AsyncIterator, Iterator

import httpx
from httpx_sse import EventSource, ServerSentEvent

from webgpt_client._exceptions import APIConnectionError
from webgpt_client.types import AnyEvent, parse_event

DONE = "[DONE]"
INCOMPLETE = "the stream ended before [DONE]: the connection or the server broke off"


def _event(sse: ServerSentEvent) -> AnyEvent | None:
    """The typed event a server-sent event carries; None for one without data."""
    return parse_event(json.loads(sse.data)) if sse.data else None


class Stream:
    """Iterate to get events as they happen; use as a context manager to close early."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response

    def __iter__(self) -> Iterator[AnyEvent]:
        events = EventSource(self.response).iter_sse()
        try:
            for sse in events:
                if sse.data == DONE:
                    return
                event = _event(sse)
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
    """`async for` to get events as they happen; `async with` to close early."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response

    async def __aiter__(self) -> AsyncIterator[AnyEvent]:
        events = EventSource(self.response).aiter_sse()
        try:
            async for sse in events:
                if sse.data == DONE:
                    return
                event = _event(sse)
                if event is not None:
                    yield event
            raise APIConnectionError(INCOMPLETE)
        except httpx.HTTPError as error:
            raise APIConnectionError(f"the stream broke: {error!r}") from error
        finally:
            # An async generator left suspended at [DONE] would be finalised later by the
            # event loop, with a warning; close it while the response is still open.
            await events.aclose()
            await self.aclose()

    async def aclose(self) -> None:
        await self.response.aclose()

    async def __aenter__(self) -> "AsyncStream":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
