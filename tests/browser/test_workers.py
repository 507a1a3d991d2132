import time

import pytest

from webgpt.browser.errors import RenderError
from webgpt.browser.workers import RenderWorkers, WorkerLimits


def _sleep(seconds: float) -> str:
    time.sleep(seconds)
    return "slept"


def _allocate(megabytes: int) -> int:
    return len(bytearray(megabytes * 1024 * 1024))


def _fail() -> None:
    raise ValueError("bad document")


def _echo_reversed(body: bytes) -> bytes:
    return body[::-1]


def test_large_documents_go_both_ways_on_uvloop() -> None:
    """uvicorn runs uvloop where it is installed, and uvloop leaves a descriptor it watched
    non-blocking: messages larger than the socket buffer then failed with EAGAIN and a
    healthy worker was killed (`webgpt serve` could not open the json docs page)."""
    import uvloop

    async def scenario() -> None:
        workers = RenderWorkers(size=1)
        try:
            body = bytes(range(256)) * (16 * 1024)  # 4 MiB each way, the same worker
            for _ in range(3):
                assert await workers.run(_echo_reversed, body) == body[::-1]
        finally:
            workers.close()

    uvloop.run(scenario())


async def test_overrunning_task_is_killed_and_the_pool_recovers() -> None:
    # A worker's start-up (spawn, imports: ~0.5 s, more on a loaded machine) counts against
    # its first task's limit, so the short limit applies only to the warm worker's overrun.
    workers = RenderWorkers(size=1)
    try:
        assert await workers.run(_sleep, 0) == "slept"
        workers.limits = WorkerLimits(task_timeout_s=1.0)
        started = time.monotonic()
        with pytest.raises(RenderError, match="longer than 1 s"):
            await workers.run(_sleep, 60)
        assert time.monotonic() - started < 10
        workers.limits = WorkerLimits()
        assert await workers.run(_sleep, 0) == "slept"  # a fresh worker took its place
    finally:
        workers.close()


async def test_memory_limit_and_task_errors_are_render_errors() -> None:
    workers = RenderWorkers(size=1, limits=WorkerLimits(memory_bytes=512 * 1024**2))
    try:
        with pytest.raises(RenderError, match="memory"):
            await workers.run(_allocate, 2048)
        with pytest.raises(RenderError, match="ValueError: bad document"):
            await workers.run(_fail)
        assert await workers.run(_allocate, 1) == 1024 * 1024
    finally:
        workers.close()
