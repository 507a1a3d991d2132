"""Repeats of a request with the same Idempotency-Key (service.idempotency): one run."""

import asyncio

import pytest

from webgpt.service.errors import InvalidRequest, Overloaded
from webgpt.service.idempotency import IdempotentRequests, fingerprint


class Work:
    """Work that runs until released, counting its starts and whether it was cancelled."""

    def __init__(self) -> None:
        self.starts = 0
        self.release = asyncio.Event()
        self.cancelled = False

    async def __call__(self) -> str:
        self.starts += 1
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return f"answer {self.starts}"


async def test_a_repeat_joins_the_running_request_and_a_later_one_gets_its_outcome() -> None:
    requests: IdempotentRequests[str] = IdempotentRequests(ttl_s=60, max_ended=10)
    work, repeats = Work(), []
    body = fingerprint("/answer", {"question": "q"})
    first = asyncio.ensure_future(requests.run("k1", "abc", body, work))
    second = asyncio.ensure_future(requests.run("k1", "abc", body, work, lambda: repeats.append(1)))
    await asyncio.sleep(0)
    work.release.set()
    assert await first == await second == "answer 1"
    assert await requests.run("k1", "abc", body, work, lambda: repeats.append(1)) == "answer 1"
    assert work.starts == 1 and len(repeats) == 2


async def test_keys_are_per_caller_and_another_body_is_refused() -> None:
    requests: IdempotentRequests[str] = IdempotentRequests(ttl_s=60, max_ended=10)
    work = Work()
    work.release.set()
    body = fingerprint("/answer", {"question": "q"})
    assert await requests.run("k1", "abc", body, work) == "answer 1"
    assert await requests.run("k2", "abc", body, work) == "answer 2"  # another caller's key
    other = fingerprint("/answer", {"question": "another"})
    with pytest.raises(InvalidRequest, match="another request"):
        await requests.run("k1", "abc", other, work)
    with pytest.raises(InvalidRequest, match="Idempotency-Key"):
        await requests.run("k1", "x" * 300, body, work)


async def test_an_error_is_the_outcome_too() -> None:
    requests: IdempotentRequests[str] = IdempotentRequests(ttl_s=60, max_ended=10)
    starts = 0

    async def failing() -> str:
        nonlocal starts
        starts += 1
        raise RuntimeError("policy down")

    for _ in range(2):
        with pytest.raises(RuntimeError, match="policy down"):
            await requests.run("k", "abc", "f", failing)
    assert starts == 1


async def test_an_error_worth_retrying_is_not_kept_so_the_retry_runs_again() -> None:
    requests: IdempotentRequests[str] = IdempotentRequests(ttl_s=60, max_ended=10)
    outcomes: list[Exception | str] = [Overloaded("full"), "answer"]

    async def busy_then_free() -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    with pytest.raises(Overloaded):
        await requests.run("k", "abc", "f", busy_then_free)
    await asyncio.sleep(0)  # the run's end is seen
    assert await requests.run("k", "abc", "f", busy_then_free) == "answer"


async def test_the_work_goes_on_when_its_client_leaves_so_a_retry_finds_it() -> None:
    requests: IdempotentRequests[str] = IdempotentRequests(ttl_s=60, max_ended=10)
    work = Work()
    first = asyncio.ensure_future(requests.run("k", "abc", "f", work))
    while not work.starts:
        await asyncio.sleep(0)
    first.cancel()  # the client timed out and went away
    await asyncio.gather(first, return_exceptions=True)
    assert not work.cancelled
    retry = asyncio.ensure_future(requests.run("k", "abc", "f", work))
    await asyncio.sleep(0)
    work.release.set()
    assert await retry == "answer 1" and work.starts == 1


async def test_closing_cancels_the_work_still_running() -> None:
    requests: IdempotentRequests[str] = IdempotentRequests(ttl_s=60, max_ended=10)
    work = Work()
    waiting = asyncio.ensure_future(requests.run("k", "abc", "f", work))
    while not work.starts:
        await asyncio.sleep(0)
    await requests.aclose()
    assert work.cancelled
    with pytest.raises(asyncio.CancelledError):
        await waiting


async def test_outcomes_are_forgotten_after_their_time_and_beyond_the_bound() -> None:
    now = [0.0]
    requests: IdempotentRequests[str] = IdempotentRequests(
        ttl_s=10, max_ended=2, clock=lambda: now[0]
    )
    work = Work()
    work.release.set()
    for key in ("a", "b", "c"):
        await requests.run("k", key, "f", work)
    assert await requests.run("k", "c", "f", work) == "answer 3"  # kept
    assert await requests.run("k", "a", "f", work) == "answer 4"  # the oldest went first
    now[0] = 11.0
    assert await requests.run("k", "c", "f", work) == "answer 5"  # past its time
