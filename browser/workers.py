"""Killable worker processes for parse work on untrusted documents.

Parsing hostile HTML or PDF can take unbounded time or memory, and neither lxml nor
pdfminer can be interrupted from the outside. Each task therefore runs in a worker process
with an address-space limit, and a task that overruns its time limit gets its worker killed
and replaced. Workers are started lazily and reused, so a page costs one IPC round trip.
"""

import asyncio
import multiprocessing
import multiprocessing.connection
import os
import resource
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.context import SpawnProcess
from typing import Any, TypeVar

from webgpt.browser.errors import RenderError

T = TypeVar("T")
_context = multiprocessing.get_context("spawn")  # fork would copy the event loop's threads


@dataclass(frozen=True)
class WorkerLimits:
    task_timeout_s: float = 20.0
    memory_bytes: int = 2 * 1024**3


def _worker_main(conn: multiprocessing.connection.Connection, memory_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    import webgpt.browser.pdf
    import webgpt.browser.render  # noqa: F401

    while True:
        try:
            function, args = conn.recv()
        except EOFError:
            return
        try:
            conn.send((True, function(*args)))
        except MemoryError:
            conn.send((False, "the document needs more memory than a page may use"))
        except Exception as error:  # every failure of a task is reported, none kills the loop
            conn.send((False, f"{type(error).__name__}: {error}"))


class _Worker:
    def __init__(self, limits: WorkerLimits) -> None:
        self.conn, child_conn = _context.Pipe()
        self.process: SpawnProcess = _context.Process(
            target=_worker_main, args=(child_conn, limits.memory_bytes), daemon=True
        )
        self.process.start()
        child_conn.close()

    def kill(self) -> None:
        self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()


class RenderWorkers:
    """A small pool of worker processes; `run` executes a picklable function in one."""

    def __init__(self, size: int = 2, limits: WorkerLimits | None = None) -> None:
        self.size = size
        self.limits = limits or WorkerLimits()
        self._idle: asyncio.Queue[_Worker] | None = None
        self._all: list[_Worker] = []

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        idle = self._idle_queue()
        worker = await idle.get()
        healthy = False
        try:
            worker.conn.send((function, args))
            ok, value = await self._receive(worker)
            healthy = True
        except TimeoutError:
            raise RenderError(
                f"rendering took longer than {self.limits.task_timeout_s:g} s"
            ) from None
        except (EOFError, OSError):
            raise RenderError("the render worker died (out of memory or crashed)") from None
        finally:
            if not healthy:
                worker.kill()
                self._all.remove(worker)
                worker = self._start_worker()
            idle.put_nowait(worker)
        if not ok:
            raise RenderError(value)
        return value  # type: ignore[no-any-return]

    async def _receive(self, worker: _Worker) -> tuple[bool, Any]:
        loop = asyncio.get_running_loop()
        readable: asyncio.Future[None] = loop.create_future()
        fd = worker.conn.fileno()

        def wake() -> None:
            if not readable.done():
                readable.set_result(None)

        loop.add_reader(fd, wake)
        try:
            async with asyncio.timeout(self.limits.task_timeout_s):
                await readable
        finally:
            loop.remove_reader(fd)
            # uvloop (what uvicorn runs when it is installed) leaves a watched descriptor
            # non-blocking: a result larger than the socket buffer then failed mid-read
            # with EAGAIN, and a big page "killed" a healthy worker. Blocking again, the
            # rest of the message is read as the worker writes it.
            os.set_blocking(fd, True)
        result: tuple[bool, Any] = worker.conn.recv()
        return result

    def _idle_queue(self) -> "asyncio.Queue[_Worker]":
        if self._idle is None:
            self._idle = asyncio.Queue()
            for _ in range(self.size):
                self._idle.put_nowait(self._start_worker())
        return self._idle

    def _start_worker(self) -> _Worker:
        worker = _Worker(self.limits)
        self._all.append(worker)
        return worker

    def close(self) -> None:
        for worker in self._all:
            worker.kill()
        self._all.clear()
        self._idle = None
