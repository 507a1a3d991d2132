"""Hot reload of the reward model (service.scoring): re-point an alias, the service follows.

The real app on loopback with the trained tiny checkpoint scored in-process; a second
version is the same weights published with an offset 100 higher, so its rewards are
100 lower and an answer shows which version scored it.
"""

import asyncio
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.agent.fake_policy import Script
from tests.reward.tiny import answer
from webgpt.agent.scoring import ScoredAnswer
from webgpt.browser.observation import OBSERVATION_FORMAT_VERSION
from webgpt.infra.checkpoints import MANIFEST, load_manifest, publish
from webgpt.service.scoring import scorer_slot


def _republish(checkpoint: Path, registry: Path, version: str, offset_shift: float) -> Path:
    """The same weights as another version, its offset shifted."""
    manifest = load_manifest(checkpoint)
    staging = registry / f".{version}"
    shutil.copytree(checkpoint, staging, ignore=shutil.ignore_patterns(MANIFEST))
    publish(
        staging,
        registry / version,
        kind="reward",
        version=version,
        base_model=manifest.base_model,
        observation_format_version=OBSERVATION_FORMAT_VERSION,
        metrics={"offset": manifest.metrics["offset"] + offset_shift},
    )
    return registry / version


def _point(alias: Path, target: str) -> None:
    """Re-point alias atomically, as docs/deploy.md tells operators to."""
    fresh = alias.with_name(alias.name + ".new")
    os.symlink(target, fresh)
    os.replace(fresh, alias)


def _answer(base: str) -> dict[str, Any]:
    response = httpx.post(f"{base}/answer", json={"question": "crow corvus", "n": 2}, timeout=60)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _wait_for_version(base: str, version: str, script: Script) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        script.answers = [answer(7, "blue"), answer(7, "red")]
        body = _answer(base)
        if body["versions"]["reward"] == version or time.monotonic() > deadline:
            return body
        time.sleep(0.2)


def test_the_service_follows_the_alias_to_a_new_version(
    service_url: Callable[..., Any], script: Script, reward_checkpoint: Path, tmp_path: Path
) -> None:
    registry = tmp_path / "reward"
    registry.mkdir()
    shutil.copytree(reward_checkpoint, registry / "rm-bon")
    _republish(reward_checkpoint, registry, "rm-bon-2", offset_shift=100.0)
    (registry / "broken").mkdir()  # no manifest: never served
    alias = registry / "current"
    _point(alias, "rm-bon")

    with service_url(reward_model=alias, reward_reload_s=0.1) as base:
        script.answers = [answer(7, "blue"), answer(7, "red")]
        first = _answer(base)

        _point(alias, "broken")
        time.sleep(1.0)
        script.answers = [answer(7, "blue"), answer(7, "red")]
        during = _answer(base)
        ready = httpx.get(f"{base}/readyz")

        _point(alias, "rm-bon-2")
        second = _wait_for_version(base, "rm-bon-2", script)
        metrics = httpx.get(f"{base}/metrics").text

    assert first["versions"]["reward"] == "rm-bon"
    assert during["versions"]["reward"] == "rm-bon"  # a broken version is never swapped in
    assert ready.status_code == 200
    assert second["versions"]["reward"] == "rm-bon-2"
    first_rewards = sorted(c["reward"] for c in first["candidates"])
    second_rewards = sorted(c["reward"] for c in second["candidates"])
    assert second_rewards == pytest.approx([r - 100.0 for r in first_rewards], abs=1e-3)
    assert second["answer"] == answer(7, "blue")
    assert 'webgpt_reward_reloads_total{outcome="loaded"} 1.0' in metrics
    assert 'webgpt_reward_reloads_total{outcome="failed"} 1.0' in metrics  # tried once a minute


class _Recording:
    def __init__(self, name: str, closed: list[str]) -> None:
        self.name = name
        self._closed = closed

    async def score(self, answers: Sequence[ScoredAnswer]) -> list[float]:
        return [0.0] * len(answers)

    async def aclose(self) -> None:
        self._closed.append(self.name)


async def test_a_replaced_scorer_is_closed_after_its_last_user() -> None:
    closed: list[str] = []
    old, new = _Recording("old", closed), _Recording("new", closed)
    slot = scorer_slot(old)
    started, release = asyncio.Event(), asyncio.Event()

    async def answer_in_flight() -> str:
        async with slot.use() as scorer:
            started.set()
            await release.wait()
            assert scorer is not None
            return scorer.name

    task = asyncio.create_task(answer_in_flight())
    await started.wait()
    await slot.replace(new)
    assert closed == []  # still in use
    async with slot.use() as scorer:
        assert scorer is new  # new answers get the new one at once
    release.set()
    assert await task == "old"  # the answer finished with the scorer it started with
    await slot.retired("old")  # retired by the slot, after its last answer
    assert closed == ["old"]
    await slot.replace(_Recording("newer", closed))
    await slot.retired("new")
    assert closed == ["old", "new"]  # unused: retired at once
