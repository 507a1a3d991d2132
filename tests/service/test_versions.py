"""Version lifetimes (service.versions.Slot): what a rollback under load, a cancelled
request and a slow retirement do to the versions served. The real service runs the same
slot for policy and reward versions (tests/service/test_policy_reload.py under load)."""

import asyncio
from collections.abc import Callable

from webgpt.service.versions import Slot


class Version:
    def __init__(self, name: str) -> None:
        self.name = name


class Retirements:
    """The slot's retire function: records retirements, each waiting on a gate if closed."""

    def __init__(self) -> None:
        self.retired: list[str] = []
        self.gate = asyncio.Event()
        self.gate.set()

    async def __call__(self, version: Version) -> None:
        await self.gate.wait()
        self.retired.append(version.name)


async def hold(slot: Slot[Version], release: asyncio.Event, started: asyncio.Event) -> str:
    """An answer in flight: holds the version it started with until released."""
    async with slot.use() as version:
        started.set()
        await release.wait()
        assert version is not None
        return version.name


def in_flight(slot: Slot[Version]) -> tuple[asyncio.Task[str], asyncio.Event, Callable[[], None]]:
    release, started = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(hold(slot, release, started))
    return task, started, release.set


async def test_rolling_back_to_a_draining_version_serves_it_again_and_never_retires_it() -> None:
    retire = Retirements()
    v1 = Version("v1")
    slot = Slot(v1, retire)
    answer, started, release = in_flight(slot)
    await started.wait()

    await slot.replace(Version("v2"))  # promote while v1 answers
    assert slot.draining("v1") is v1
    await slot.replace(slot.draining("v1") or Version("v1"))  # roll back before v1 drained
    await slot.retired("v2")
    release()
    assert await answer == "v1"
    await asyncio.sleep(0)
    await slot.retired("v1")

    assert slot.current is v1  # the same version, not a second one of its name
    assert retire.retired == ["v2"]  # v2 had no answer; v1 was never retired
    async with slot.use() as serving:
        assert serving is v1


async def test_a_cancelled_request_does_not_wait_for_nor_cut_short_a_retirement() -> None:
    retire = Retirements()
    slot = Slot(Version("v1"), retire)
    answer, started, _ = in_flight(slot)
    await started.wait()
    await slot.replace(Version("v2"))
    retire.gate.clear()  # the unload is slow

    answer.cancel()  # the client went away: the last answer on v1 ends
    await asyncio.gather(answer, return_exceptions=True)
    assert answer.cancelled()  # at once, not after the unload
    assert retire.retired == []
    retire.gate.set()
    await slot.retired("v1")
    assert retire.retired == ["v1"]  # the retirement ran to its end all the same


async def test_a_version_brought_up_again_waits_for_its_old_retirement() -> None:
    retire = Retirements()
    slot = Slot(Version("v1"), retire)
    retire.gate.clear()
    await slot.replace(Version("v2"))  # v1 idle: its retirement starts, and hangs
    assert slot.draining("v1") is None  # retiring, not draining: it cannot serve again
    waiting = asyncio.create_task(slot.retired("v1"))
    await asyncio.sleep(0.01)
    assert not waiting.done()
    retire.gate.set()
    await waiting
    assert retire.retired == ["v1"]


async def test_closing_retires_the_current_and_every_draining_version() -> None:
    retire = Retirements()
    slot = Slot(Version("v1"), retire)
    answer, started, release = in_flight(slot)
    await started.wait()
    await slot.replace(Version("v2"))
    await slot.aclose()
    assert sorted(retire.retired) == ["v1", "v2"]
    release()
    await answer
    await asyncio.sleep(0)
    assert sorted(retire.retired) == ["v1", "v2"]  # not retired twice
