"""Serving a model version while the next one is swapped in: the same for policy and reward.

A `Slot` holds the version new answers get; an answer holds on to the version it started
with (`async with slot.use()`), and a replaced version is retired (closed, unloaded) when its
last answer finishes. `follow_alias` polls a registry alias (a symlink such as
registry/policy/current) and, when it names another version, brings that version up
beside the old one, checks it, and swaps it in; a version that fails is refused, logged,
counted, retried now and then, and never served, while the old one goes on.
"""

import asyncio
import contextlib
import json
import logging
import math
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from webgpt.infra.checkpoints import load_manifest
from webgpt.infra.errors import CorruptCheckpoint, IncompatibleCheckpoint

logger = logging.getLogger("webgpt.service")

RETRY_FAILED_S = 60.0  # a version that failed to come up is tried again this often


class Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=Named)


class CanaryFailed(Exception):
    """A new version came up but failed its canaries; it is not served."""


class Slot(Generic[T]):
    """The current version, and the replaced ones still answering, counted by version name.

    A replaced version drains: it is retired (closed, unloaded) once no answer uses it,
    in a task the slot owns, never in the `finally` of the answer that finished last (a
    cancelled request must not cut an unload short, nor an unload fail a request). A
    version promoted again while it drains (a rollback under load) is the same version:
    `draining(name)` hands it back and it serves again, not loaded twice and never unloaded
    under the answers that use it.
    """

    def __init__(self, current: T | None, retire: Callable[[T], Awaitable[None]]) -> None:
        self.current = current
        self._retire = retire
        self._users: Counter[str] = Counter()  # version name -> answers using it
        self._draining: dict[str, T] = {}  # replaced versions that answers still use
        self._retiring: dict[str, asyncio.Task[None]] = {}

    @contextlib.asynccontextmanager
    async def use(self) -> AsyncIterator[T | None]:
        version = self.current
        if version is None:
            yield None
            return
        self._users[version.name] += 1
        try:
            yield version
        finally:
            self._users[version.name] -= 1
            self._retire_if_idle(version.name)

    def draining(self, name: str) -> T | None:
        """The replaced version of this name that answers still use, if any."""
        return self._draining.get(name)

    async def retired(self, name: str) -> None:
        """Wait until a retirement of this name under way has ended: a version brought up
        again must not be unloaded by the retirement of its previous life."""
        task = self._retiring.get(name)
        if task is not None:
            await asyncio.shield(task)

    async def replace(self, version: T) -> None:
        old, self.current = self.current, version
        self._draining.pop(version.name, None)  # back in service
        if old is not None and old.name != version.name:
            self._draining[old.name] = old
            self._retire_if_idle(old.name)

    def _retire_if_idle(self, name: str) -> None:
        if self._users[name]:
            return
        del self._users[name]
        if self.current is not None and self.current.name == name:
            return
        version = self._draining.pop(name, None)
        if version is None:
            return
        task = asyncio.get_running_loop().create_task(self._retire_logged(version))
        self._retiring[name] = task
        task.add_done_callback(lambda _: self._retiring.pop(name, None))

    async def _retire_logged(self, version: T) -> None:
        try:
            await self._retire(version)
        except Exception as error:  # nobody awaits this task: say what failed
            log_event("retire_failed", version.name, repr(error), logging.WARNING)

    async def aclose(self) -> None:
        """Retire every version, current and draining, and wait for all retirements."""
        versions = [*self._draining.values()]
        if self.current is not None:
            versions.append(self.current)
        self._draining.clear()
        self.current = None
        for version in versions:
            await self._retire_logged(version)
        for task in list(self._retiring.values()):
            await task


def reload_outcome(error: BaseException) -> str:
    """The `outcome` label of a refused version."""
    if isinstance(error, CorruptCheckpoint):
        return "corrupt"
    if isinstance(error, IncompatibleCheckpoint):
        return "incompatible"
    if isinstance(error, CanaryFailed):
        return "canary_failed"
    return "failed"


async def follow_alias(
    slot: Slot[T],
    alias: Path,
    bring_up: Callable[[Path], Awaitable[T]],
    interval_s: float,
    on_reload: Callable[[str], None],
    kind: str,
    keep_served: Callable[[T], Awaitable[None]] | None = None,
) -> None:
    """Swap in the version the alias names whenever it is not the one served: at once (an
    empty slot gets its first version this way), then every interval_s; with interval_s 0,
    return once a version is served.

    bring_up(folder) loads and checks a version, cleaning up after itself if it raises;
    keep_served(version), each interval, restores the serving version where its server
    lost it (a restarted vLLM).
    """
    failed: dict[Path, float] = {}  # target -> when it last failed
    loop = asyncio.get_running_loop()
    while True:
        target = alias.resolve()
        if loop.time() - failed.get(target, -math.inf) >= RETRY_FAILED_S:
            try:
                await _swap(slot, target, bring_up, on_reload, kind)
                failed.pop(target, None)
            except Exception as error:  # any failure: keep serving the version loaded
                outcome = reload_outcome(error)
                log_event(
                    f"{kind}_reload_refused", str(target), f"{outcome}: {error}", logging.WARNING
                )
                failed[target] = loop.time()
                on_reload(outcome)
        if keep_served is not None and slot.current is not None:
            try:
                await keep_served(slot.current)
            except Exception as error:  # the server may be half up: try again next time
                log_event(f"{kind}_keep_failed", slot.current.name, str(error), logging.WARNING)
        if interval_s <= 0 and slot.current is not None:
            return
        await asyncio.sleep(interval_s if interval_s > 0 else 1.0)


async def _swap(
    slot: Slot[T],
    target: Path,
    bring_up: Callable[[Path], Awaitable[T]],
    on_reload: Callable[[str], None],
    kind: str,
) -> None:
    # Compare versions, not paths: the version in use knows its own name.
    name = load_manifest(target).version
    if slot.current is not None and name == slot.current.name:
        return
    version = slot.draining(name)  # rolled back to while it drains: serve it again
    if version is None:
        await slot.retired(name)
        version = await bring_up(target)
    first = slot.current is None
    await slot.replace(version)
    log_event(f"{kind}_loaded" if first else f"{kind}_reloaded", str(target), version.name)
    on_reload("loaded")


def log_event(event: str, checkpoint: str, detail: str, level: int = logging.INFO) -> None:
    """One JSON line per reload event; checkpoint is a folder or a version name. A version
    refused or a failed unload is a warning: the operator asked for something not done."""
    logger.log(level, json.dumps({"event": event, "checkpoint": checkpoint, "detail": detail}))
