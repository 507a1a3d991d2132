"""SpreadTransport (infra.pools): requests spread over small pools, each released on close."""

import asyncio
import threading

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from tests.servers import free_port, serve
from webgpt.infra.pools import SpreadTransport

HELD = 32


def held_app() -> tuple[Starlette, set[int]]:
    """/held answers once HELD requests are waiting at once; /hello at once. Records the
    client ports it saw (one per connection)."""
    ports: set[int] = set()
    all_here = threading.Event()
    count = 0
    lock = threading.Lock()

    async def held(request: Request) -> PlainTextResponse:
        nonlocal count
        with lock:
            count += 1
            if count == HELD:
                all_here.set()
        await asyncio.to_thread(all_here.wait, 10)
        return PlainTextResponse("ok")

    async def hello(request: Request) -> PlainTextResponse:
        assert request.client is not None
        ports.add(request.client.port)
        return PlainTextResponse("hello " * 1000)

    routes = [Route("/held", held), Route("/hello", hello)]
    return Starlette(routes=routes), ports


async def test_concurrent_requests_are_spread_evenly_and_released() -> None:
    app, _ = held_app()
    transport = SpreadTransport(pools=16)
    seen: list[tuple[int, ...]] = []

    async def sample_while_held() -> None:
        while sum(transport.in_flight) < HELD:
            await asyncio.sleep(0.005)
        seen.append(transport.in_flight)

    with serve(app) as base:
        async with httpx.AsyncClient(base_url=base, transport=transport, timeout=20) as client:
            sampler = asyncio.create_task(sample_while_held())
            responses = await asyncio.gather(*(client.get("/held") for _ in range(HELD)))
            await sampler
            assert [r.text for r in responses] == ["ok"] * HELD
            assert seen == [(2,) * 16]  # 32 requests at once: 2 in each of 16 pools
            assert transport.in_flight == (0,) * 16


async def test_a_pool_is_released_on_early_close_and_on_errors() -> None:
    app, ports = held_app()
    transport = SpreadTransport(pools=4)
    with serve(app) as base:
        async with httpx.AsyncClient(base_url=base, transport=transport, timeout=20) as client:
            async with client.stream("GET", "/hello") as response:
                assert response.status_code == 200  # closed without reading the body
            assert transport.in_flight == (0, 0, 0, 0)
            for _ in range(10):
                assert (await client.get("/hello")).status_code == 200
            assert len(ports) <= 2  # connections are kept alive and reused
            closed_port = f"http://127.0.0.1:{free_port()}/"
            for _ in range(3):
                try:
                    await client.get(closed_port)
                except httpx.ConnectError:
                    pass
                else:
                    raise AssertionError("nothing listens there")
            assert transport.in_flight == (0, 0, 0, 0)
