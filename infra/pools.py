"""HTTP connection pools that stay cheap with many concurrent requests.

httpcore (under httpx) walks every connection of its pool, and polls each idle one's
socket, whenever a request starts and whenever a response closes (encode/httpcore#928,
unmerged). With one pool of 64 connections to a policy server that is 64 checks twice per
completion, and at 64 concurrent streams it was a fifth of the service's CPU. `SpreadTransport`
keeps several small pools and sends each request to the least busy one, so a walk covers
a few connections, not all of them.
"""

from collections.abc import AsyncIterator, Callable

import httpx


class SpreadTransport(httpx.AsyncBaseTransport):
    def __init__(self, pools: int = 16, limits: httpx.Limits | None = None) -> None:
        # 16 pools of 16: 256 connections in all, 64 kept alive, as one pool had before; more
        # pools were no faster in benchmarks/service_bench.py (docs/benchmarks.md).
        per_pool = limits or httpx.Limits(max_connections=16, max_keepalive_connections=4)
        self._pools = [
            httpx.AsyncHTTPTransport(limits=per_pool, trust_env=False) for _ in range(pools)
        ]
        self._busy = [0] * pools  # requests whose response is not closed yet, per pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        index = min(range(len(self._pools)), key=self._busy.__getitem__)
        self._busy[index] += 1
        try:
            response = await self._pools[index].handle_async_request(request)
        except BaseException:
            self._busy[index] -= 1
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_OnClose(response.stream, lambda: self._release(index)),
            extensions=response.extensions,
        )

    @property
    def in_flight(self) -> tuple[int, ...]:
        """Requests sent and not yet closed, per pool."""
        return tuple(self._busy)

    def _release(self, index: int) -> None:
        self._busy[index] -= 1

    async def aclose(self) -> None:
        for pool in self._pools:
            await pool.aclose()


class _OnClose(httpx.AsyncByteStream):
    def __init__(self, stream: httpx.AsyncByteStream, closed: Callable[[], None]) -> None:
        self._stream = stream
        self._closed: Callable[[], None] | None = closed

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        closed, self._closed = self._closed, None  # once, however often it is closed
        try:
            await self._stream.aclose()
        finally:
            if closed is not None:
                closed()
