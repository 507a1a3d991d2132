"""Streamed responses as iterators: server-sent events of typed events, and JSON lines
of rows (sync and async twins).

httpx-sse splits the bytes into events (comment lines such as the service's `: ping` are
dropped there); what is ours is the protocol on top: each event's data is one JSON event,
and `data: [DONE]` is the only proper end. A stream that stops before [DONE] was cut off
(by a proxy, the network, a dying server), so it raises rather than end quietly with events
missing.

JSON lines (the /admin exports) are read a line at a time as they arrive, so memory holds
one row however many there are. They have no end marker: a cut shows as a broken
connection (the service drops it when a row fails mid-export) or a last line that is not
a whole JSON object, and either raises rather than end the export short.
"""

import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from typing import Any

import httpx
from httpx_sse import EventSource, ServerSentEvent

from webgpt_client._exceptions import APIConnectionError
from webgpt_client.types import AnyEvent, parse_event

DONE = "[DONE]"
INCOMPLETE = "the stream ended before [DONE]: the connection or the server broke off"
NOT_A_ROW = "line {} of the export is not a JSON object: the connection or the server broke off"


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


def _row(line: str, number: int) -> dict[str, Any]:
    """One JSON line's object; a line that is none was cut short."""
    try:
        row = json.loads(line)
    except ValueError:
        row = None
    if not isinstance(row, dict):
        raise APIConnectionError(NOT_A_ROW.format(number))
    return row


class JSONLines:
    """Rows of a JSON-lines response, each a dict read as it arrives: iterate to get them;
    use as a context manager to close early."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            for number, line in enumerate(self.response.iter_lines(), start=1):
                if line:
                    yield _row(line, number)
        except httpx.HTTPError as error:
            raise APIConnectionError(f"the export broke off: {error!r}") from error
        finally:
            self.close()

    def close(self) -> None:
        self.response.close()

    def __enter__(self) -> "JSONLines":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncJSONLines:
    """`async for` to get the rows as they arrive; `async with` to close early."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        lines = self.response.aiter_lines()
        number = 0
        try:
            async for line in lines:
                number += 1
                if line:
                    yield _row(line, number)
        except httpx.HTTPError as error:
            raise APIConnectionError(f"the export broke off: {error!r}") from error
        finally:
            # httpx's line iterator is an async generator: close it while the response is
            # open, or the event loop finalises it later, with a warning (as AsyncStream).
            if isinstance(lines, AsyncGenerator):
                await lines.aclose()
            await self.aclose()

    async def aclose(self) -> None:
        await self.response.aclose()

    async def __aenter__(self) -> "AsyncJSONLines":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
