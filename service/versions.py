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
    """The current version; a replaced one is retired once no answer uses it any more."""

    def __init__(self, current: T | None, retire: Callable[[T], Awaitable[None]]) -> None:
        self.current = current
        self._retire = retire
        self._users: dict[int, int] = {}  # id(version) -> answers using it

    @contextlib.asynccontextmanager
    async def use(self) -> AsyncIterator[T | None]:
        version = self.current
        if version is None:
            yield None
            return
        key = id(version)
        self._users[key] = self._users.get(key, 0) + 1
        try:
            yield version
        finally:
            self._users[key] -= 1
            if not self._users[key]:
                del self._users[key]
                if version is not self.current:
                    await self._retire(version)

    async def replace(self, version: T) -> None:
        old, self.current = self.current, version
        if old is not None and old is not version and id(old) not in self._users:
            await self._retire(old)

    async def aclose(self) -> None:
        if self.current is not None:
            await self._retire(self.current)


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
) -> None:
    """Swap in the version the alias names whenever it is not the one served: at once (an
    empty slot gets its first version this way), then every interval_s; with interval_s 0,
    return once a version is served.

    bring_up(folder) loads and checks a version, cleaning up after itself if it raises.
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
    if slot.current is not None and load_manifest(target).version == slot.current.name:
        return
    version = await bring_up(target)
    first = slot.current is None
    await slot.replace(version)
    log_event(f"{kind}_loaded" if first else f"{kind}_reloaded", str(target), version.name)
    on_reload("loaded")


def log_event(event: str, checkpoint: str, detail: str, level: int = logging.INFO) -> None:
    """One JSON line per reload event; checkpoint is a folder or a version name. A version
    refused or a failed unload is a warning: the operator asked for something not done."""
    logger.log(level, json.dumps({"event": event, "checkpoint": checkpoint, "detail": detail}))
