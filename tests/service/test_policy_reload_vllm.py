"""Policy hot reload against the real vLLM CPU server: runtime LoRA loading, under load.

Slow: starts vLLM (the embedded base, `--enable-lora`) and runs real episodes. The
versions are the shipped behavior-cloned adapter published under two names, and the same
policy merged into full weights, so the tests are about the swap, not about which answers
better.
"""

import asyncio
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.servers import free_port
from tests.service.test_policy_reload import Outcome, policy_service, promote_under_load
from webgpt.agent.model import (
    BASE_VERSION,
    SHIPPED_ADAPTER,
    prepare_base_model,
    prepare_default_model,
)
from webgpt.agent.registry import PolicyRegistry
from webgpt.infra.vllm_server import RunningServer, ServerConfig, serves, start, stop
from webgpt.service.policies import VLLMLauncher

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lora_vllm() -> Iterator[RunningServer]:
    base = prepare_base_model(print)
    config = ServerConfig(
        model_dir=base, served_name=BASE_VERSION, port=free_port(), runtime_lora=True
    )
    running = start(config, print, timeout_s=1200, record=False)
    yield running
    stop(running)


def serves_b(done: list[Outcome]) -> bool:
    """True once an answer came from the promoted version (bc-b or full-b)."""
    return any(version.endswith("-b") for *_, version in done)


def serves_b_unless_refused(caplog: pytest.LogCaptureFixture) -> Callable[[list[Outcome]], bool]:
    """serves_b, failing at once with the service's reason when it refuses the version (it
    would try again every minute, and the test would only time out)."""

    def swapped(done: list[Outcome]) -> bool:
        refused = [r.getMessage() for r in caplog.records if "reload_refused" in r.getMessage()]
        assert not refused, refused
        return serves_b(done)

    return swapped


def test_the_real_server_swaps_versions_under_load(
    offline_store: Path, lora_vllm: RunningServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    registry = PolicyRegistry(tmp_path / "policy")
    registry.publish(SHIPPED_ADAPTER, "bc-a")
    registry.publish(SHIPPED_ADAPTER, "bc-b")
    registry.promote("bc-a")

    with policy_service(
        offline_store, lora_vllm.url, registry.current, tmp_path, base_model=BASE_VERSION
    ) as base:
        done, promoted = asyncio.run(  # 2 answers at a time
            promote_under_load(
                base, 2, 15, lambda: registry.promote("bc-b"), serves_b_unless_refused(caplog), 600
            )
        )

    assert {status for _, _, status, _ in done} == {200}, done
    assert all(version == "bc-a" for started, _, _, version in done if started < promoted)
    first_new = min(ended for _, ended, _, version in done if version == "bc-b")
    assert all(version == "bc-b" for started, _, _, version in done if started > first_new)
    assert sum(version == "bc-b" for *_, version in done) >= 2


def test_full_weights_are_switched_blue_green_to_a_second_real_vllm(
    offline_store: Path, lora_vllm: RunningServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    registry = PolicyRegistry(tmp_path / "policy")
    registry.publish(SHIPPED_ADAPTER, "bc-a")
    registry.publish(prepare_default_model(print), "full-b")  # the adapter merged in
    registry.promote("bc-a")
    launcher = VLLMLauncher()

    with policy_service(
        offline_store,
        lora_vllm.url,
        registry.current,
        tmp_path,
        base_model=BASE_VERSION,
        launcher=launcher,
    ) as base:
        # A second vLLM starts on the spare core, then the canary: one answer at a time, as
        # on 2 CPU cores the load and the starting process share them.
        swapped = serves_b_unless_refused(caplog)
        done, promoted = asyncio.run(
            promote_under_load(base, 1, 15, lambda: registry.promote("full-b"), swapped, 900)
        )
        url = launcher.running["full-b"].url
        assert serves(url, "full-b")
        # Started on the spare core alone (infra.vllm_server.ServerConfig.start_cpus), its
        # front end may use every core once it answers.
        assert os.sched_getaffinity(launcher.running["full-b"].pid) == os.sched_getaffinity(0)

    assert {status for _, _, status, _ in done} == {200}, done
    assert all(version == "bc-a" for started, _, _, version in done if started < promoted)
    first_new = min(ended for _, ended, _, version in done if version == "full-b")
    assert all(version == "full-b" for started, _, _, version in done if started > first_new)
    assert not serves(url, "full-b")  # the service stopped the process it started
