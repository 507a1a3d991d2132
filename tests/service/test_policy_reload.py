"""Policy hot reload (service.policies, service.versions) against a scripted vLLM that
speaks the runtime LoRA API (tests/agent/fake_policy.py): the real app on loopback, the real
registry and its alias, concurrent clients. tests/service/test_policy_reload_vllm.py runs
the same swap against the real vLLM CPU server.
"""

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError
from starlette.applications import Starlette

from tests.agent.fake_policy import Script, fake_policy_app
from tests.agent.test_quote_ranking import WordRanker
from tests.agent.test_registry import make_adapter
from tests.conftest import CROW_QUOTE
from tests.servers import serve
from webgpt.agent.errors import ConfigurationError
from webgpt.agent.registry import PolicyRegistry
from webgpt.browser.web import Web, WebOptions
from webgpt.infra.checkpoints import load_manifest, point_alias
from webgpt.infra.errors import IncompatibleCheckpoint
from webgpt.service.app import create_app
from webgpt.service.metrics import Metrics
from webgpt.service.policies import Launcher, LoRAServer
from webgpt.service.server import policy_versions
from webgpt.service.serving import AnswerService
from webgpt.service.settings import ServiceSettings
from webgpt.service.store import FeedbackStore

QUESTION = {"question": "crow corvus", "max_actions": 10}


Outcome = tuple[float, float, int, str]  # started, ended, HTTP status, policy version


@contextmanager
def policy_service(
    offline_store: Path,
    policy_url: str,
    alias: Path,
    tmp_path: Path,
    base_model: str = "scripted",
    launcher: Launcher | None = None,
) -> Iterator[str]:
    settings = ServiceSettings(
        policy_url=policy_url,
        policy_model=base_model,  # the base the adapters are loaded on
        policy_checkpoint=alias,
        policy_reload_s=0.05,
        policy_canaries=["crow corvus"],
        max_concurrent_requests=32,
    )
    web = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
    versions = policy_versions(settings, web, None)
    versions.launcher = launcher
    store = FeedbackStore(tmp_path / "feedback.sqlite")
    service = AnswerService(settings, web, None, None, Metrics(), store, versions)
    with serve(create_app(service)) as base:
        # Live at once, ready once the first version is loaded and passed its canaries.
        wait_until(lambda: httpx.get(f"{base}/readyz").status_code == 200, timeout_s=900)
        yield base


class ScriptedLauncher:
    """Full-weight versions served blue/green, one server each, as VLLMLauncher starts vLLM
    processes: here a scripted policy server on loopback per version."""

    def __init__(self) -> None:
        self.running: dict[str, ExitStack] = {}
        self.started: list[str] = []
        self.scripts: dict[str, Script] = {}

    async def start(self, folder: Path, version: str) -> str:
        assert (folder / "config.json").is_file()
        script = Script(model=version, oracle_quote=CROW_QUOTE, delay_s=0.02)
        script.answers = ["Crows are corvids [1]."] * 10_000
        self.scripts[version] = script
        stack = ExitStack()
        base = await asyncio.to_thread(stack.enter_context, serve(fake_policy_app(script)))
        self.running[version] = stack
        self.started.append(version)
        return base + "/v1"

    def serves(self, version: str) -> bool:
        return version in self.running

    async def stop(self, version: str) -> None:
        await asyncio.to_thread(self.running.pop(version).close)

    async def aclose(self) -> None:
        for version in list(self.running):
            await self.stop(version)


def make_full_weights(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "llama"}')
    (folder / "model.safetensors").write_bytes(b"all the weights")
    return folder


def registry_of(tmp_path: Path, *versions: str) -> PolicyRegistry:
    registry = PolicyRegistry(tmp_path / "policy")
    for version in versions:
        registry.publish(make_adapter(tmp_path / "out" / version), version, base_model="scripted")
    return registry


def wait_until(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def served(base: str) -> str:
    response = httpx.post(f"{base}/answer", json=QUESTION, timeout=60)
    assert response.status_code == 200, response.text
    return str(response.json()["versions"]["policy"])


def reloads(base: str) -> dict[str, float]:
    counts = {}
    for line in httpx.get(f"{base}/metrics").text.splitlines():
        if line.startswith("webgpt_policy_reloads_total{"):
            outcome = line.split('outcome="', 1)[1].split('"', 1)[0]
            counts[outcome] = float(line.rsplit(" ", 1)[1])
    return counts


async def steady_load(base: str, clients: int, stop: asyncio.Event, done: list[Outcome]) -> None:
    """`clients` loops of requests until stop; each request's outcome goes into done."""

    async def client(http: httpx.AsyncClient) -> None:
        while not stop.is_set():
            started = time.monotonic()
            response = await http.post(f"{base}/answer", json=QUESTION)
            version = response.json()["versions"]["policy"] if response.status_code == 200 else ""
            done.append((started, time.monotonic(), response.status_code, version))

    async with httpx.AsyncClient(timeout=300) as http:
        await asyncio.gather(*(client(http) for _ in range(clients)))


async def promote_under_load(
    base: str,
    clients: int,
    settle_s: float,
    promote: Callable[[], None],
    swapped: Callable[[list[Outcome]], bool],
    timeout_s: float,
    min_done: int = 0,
) -> tuple[list[Outcome], float]:
    """Steady load; after settle_s, promote; once swapped(outcomes so far), settle_s more and
    until min_done requests have ended (a slow machine serves fewer a second), then stop.
    Every request's outcome, and when the promote happened."""
    stop, done = asyncio.Event(), []  # type: ignore[var-annotated]
    load = asyncio.create_task(steady_load(base, clients, stop, done))
    await asyncio.sleep(settle_s)
    promoted = time.monotonic()
    promote()
    async with asyncio.timeout(timeout_s):
        while not swapped(done):
            await asyncio.sleep(0.05)
    await asyncio.sleep(settle_s)
    async with asyncio.timeout(timeout_s):
        while len(done) < min_done:
            await asyncio.sleep(0.05)
    stop.set()
    await load
    return done, promoted


@pytest.mark.slow  # a load test
def test_a_promoted_version_is_swapped_in_under_load_without_a_failed_request(
    offline_store: Path, policy_url: str, script: Script, tmp_path: Path
) -> None:
    registry = registry_of(tmp_path, "v1", "v2")
    registry.promote("v1")
    script.answers = ["Crows are corvids [1]."] * 10_000
    script.delay_s = 0.02  # each policy call takes a while, so swaps meet answers in flight

    def swapped_and_drained(_: list[Outcome]) -> bool:
        return "v2" in script.adapters and "v1" not in script.adapters

    with policy_service(offline_store, policy_url, registry.current, tmp_path) as base:
        assert set(script.adapters) == {"v1"}  # the first version, loaded at start-up
        done, promoted = asyncio.run(
            promote_under_load(
                base, 6, 1.0, lambda: registry.promote("v2"), swapped_and_drained, 30, 31
            )
        )
        counts = reloads(base)
        loaded = set(script.adapters)

    assert len(done) > 30 and {status for _, _, status, _ in done} == {200}
    assert all(version == "v1" for started, _, _, version in done if started < promoted)
    first_new = min(ended for _, ended, _, version in done if version == "v2")
    assert all(version == "v2" for started, _, _, version in done if started > first_new)
    assert loaded == {"v2"}  # v1 was unloaded once its last answer finished
    assert counts == {"loaded": 2.0}  # the first version, then the promoted one


def test_a_restarted_policy_server_gets_the_serving_adapter_loaded_again(
    offline_store: Path, policy_url: str, script: Script, tmp_path: Path
) -> None:
    """vLLM forgets adapters loaded at run time when it restarts; the fault drill saw every
    answer fail with 404 until the next promote. The service loads the version again."""
    registry = registry_of(tmp_path, "v1")
    registry.promote("v1")
    script.answers = ["Crows are corvids [1]."] * 100
    with policy_service(offline_store, policy_url, registry.current, tmp_path) as base:
        assert served(base) == "v1"
        script.adapters.clear()  # the server restarted: only its base is served
        wait_until(lambda: "v1" in script.adapters)
        assert served(base) == "v1"
    assert script.lora_loads == ["v1", "v1"]


@pytest.mark.slow  # a load test
def test_full_weights_switch_blue_green_to_their_own_server_under_load(
    offline_store: Path, policy_url: str, script: Script, tmp_path: Path
) -> None:
    registry = registry_of(tmp_path, "v1")
    registry.publish(make_full_weights(tmp_path / "out" / "full"), "full-1", base_model="scripted")
    registry.promote("v1")
    script.answers = ["Crows are corvids [1]."] * 10_000
    script.delay_s = 0.02
    launcher = ScriptedLauncher()

    async def scenario(base: str) -> tuple[list[Outcome], float, float]:
        stop, done = asyncio.Event(), []
        load = asyncio.create_task(steady_load(base, 6, stop, done))
        await asyncio.sleep(1.0)
        promoted = time.monotonic()
        registry.promote("full-1")
        async with asyncio.timeout(60):
            while "v1" in script.adapters:  # full-1 serves and v1 has drained
                await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)
        rolled_back = time.monotonic()
        registry.rollback()
        async with asyncio.timeout(60):
            while launcher.running:  # v1 serves again and full-1's server has stopped
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        stop.set()
        await load
        return done, promoted, rolled_back

    with policy_service(
        offline_store, policy_url, registry.current, tmp_path, launcher=launcher
    ) as base:
        done, promoted, rolled_back = asyncio.run(scenario(base))
        counts = reloads(base)

    assert {status for _, _, status, _ in done} == {200}
    assert all(version == "v1" for started, _, _, version in done if started < promoted)
    full = [o for o in done if o[3] == "full-1"]
    assert len(full) >= 5 and all(started > promoted for started, *_ in full)
    first_back = min(e for s, e, _, v in done if s > rolled_back and v == "v1")
    assert all(v == "v1" for started, _, _, v in done if started > first_back)
    assert launcher.started == ["full-1"] and set(script.adapters) == {"v1"}
    assert counts == {"loaded": 3.0}


@pytest.mark.slow  # a load test
def test_rolling_back_or_promoting_again_while_a_version_drains_serves_it_again(
    offline_store: Path, policy_url: str, script: Script, tmp_path: Path
) -> None:
    """Under load, with an answer held in flight on the version being replaced: roll back
    to it, or promote it again, and it serves again - the same version, never loaded
    twice, never unloaded under its answers, one server for full weights."""
    registry = registry_of(tmp_path, "v1", "v2")
    registry.publish(make_full_weights(tmp_path / "out" / "full"), "full-1", base_model="scripted")
    registry.promote("v1")
    script.answers = ["Crows are corvids [1]."] * 10_000
    script.delay_s = 0.02
    launcher = ScriptedLauncher()

    def hold(on: Script, version: str) -> threading.Event:
        """The next policy call on version waits until the returned event is set."""
        on.released = threading.Event()
        on.hold_model = version
        return on.released

    async def swap(base: str, change: Callable[[], None]) -> None:
        loaded = reloads(base).get("loaded", 0.0)
        change()
        async with asyncio.timeout(60):
            while reloads(base).get("loaded", 0.0) == loaded:
                await asyncio.sleep(0.02)

    async def held(on: Script) -> None:
        async with asyncio.timeout(60):
            while on.hold_model is not None:  # taken by a request: a version in use
                await asyncio.sleep(0.02)

    async def scenario(base: str) -> list[Outcome]:
        stop, done = asyncio.Event(), []  # type: ignore[var-annotated]
        load = asyncio.create_task(steady_load(base, 6, stop, done))
        # adapters: v1 answers in flight, v2 promoted, rolled back to v1 at once
        release_v1 = hold(script, "v1")
        await held(script)
        await swap(base, lambda: registry.promote("v2"))
        await swap(base, registry.rollback)
        release_v1.set()
        # full weights: the same, then full-1 promoted again while it drains
        release_v1 = hold(script, "v1")
        await held(script)
        await swap(base, lambda: registry.promote("full-1"))
        release_full = hold(launcher.scripts["full-1"], "full-1")
        await held(launcher.scripts["full-1"])
        await swap(base, registry.rollback)
        await swap(base, lambda: registry.promote("full-1"))
        release_v1.set()
        release_full.set()
        async with asyncio.timeout(60):
            while script.adapters:  # v1 (and v2) drained and unloaded
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)
            while len(done) <= 30:  # load enough to count, however slow the machine
                await asyncio.sleep(0.05)
        stop.set()
        await load
        return done

    with policy_service(
        offline_store, policy_url, registry.current, tmp_path, launcher=launcher
    ) as base:
        done = asyncio.run(scenario(base))
        assert served(base) == "full-1"
        counts = reloads(base)

    assert len(done) > 30 and {status for _, _, status, _ in done} == {200}
    assert script.lora_loads == ["v1", "v2"]  # v1 served again while draining, not reloaded
    assert launcher.started == ["full-1"]  # promoted twice, one server
    assert counts == {"loaded": 6.0}


@pytest.mark.slow  # a load test
def test_refused_versions_leave_the_old_one_serving_and_rollback_returns(
    offline_store: Path, policy_url: str, script: Script, tmp_path: Path
) -> None:
    registry = registry_of(tmp_path, "v1", "corrupt", "other-format", "babbles", "v2")
    registry.publish(make_full_weights(tmp_path / "out" / "full"), "full", base_model="scripted")
    registry.promote("v1")
    (registry.root / "corrupt" / "adapter_model.safetensors").write_bytes(b"flipped")
    manifest = registry.root / "other-format" / "manifest.json"
    manifest.write_text(
        manifest.read_text().replace(
            '"observation_format_version": 1', '"observation_format_version": 99'
        )
    )
    script.garbage_models = {"babbles"}  # loads, then fails its canary episode
    script.answers = ["Crows are corvids [1]."] * 1000

    with policy_service(offline_store, policy_url, registry.current, tmp_path) as base:
        for refused, outcome, count in [
            ("corrupt", "corrupt", 1.0),
            ("other-format", "incompatible", 1.0),
            ("babbles", "canary_failed", 1.0),
            ("full", "incompatible", 2.0),  # an external policy server takes adapters only
        ]:
            point_alias(registry.current, refused)  # as an operator could, past `promote`
            wait_until(lambda o=outcome, n=count: reloads(base).get(o) == n)  # type: ignore[misc]
            assert served(base) == "v1"
            assert httpx.get(f"{base}/readyz").status_code == 200
        assert set(script.adapters) == {"v1"}  # the refused canary version was unloaded

        point_alias(registry.current, "v1")
        registry.promote("v2")
        wait_until(lambda: served(base) == "v2")
        registry.rollback()
        wait_until(lambda: served(base) == "v1")
        wait_until(lambda: set(script.adapters) == {"v1"})
        assert reloads(base) == {
            "corrupt": 1.0,
            "incompatible": 2.0,
            "canary_failed": 1.0,
            "loaded": 3.0,
        }


def test_a_missing_alias_or_a_server_without_the_lora_api_is_a_clear_error(
    offline_store: Path, tmp_path: Path
) -> None:
    web = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
    settings = ServiceSettings(
        policy_url="http://127.0.0.1:9/v1",
        policy_model="scripted",
        policy_checkpoint=tmp_path / "policy" / "current",
    )
    with pytest.raises(ConfigurationError, match="names no version"):
        policy_versions(settings, web, None)
    registry = registry_of(tmp_path, "v1")
    registry.promote("v1")
    no_lora = serve(Starlette(routes=[]))  # an OpenAI server started without --enable-lora
    with no_lora as base:
        versions = policy_versions(
            settings.model_copy(update={"policy_url": base + "/v1"}), web, None
        )
        with pytest.raises(ConfigurationError, match="--enable-lora"):
            asyncio.run(versions.bring_up(registry.current.resolve()))
    with pytest.raises(ValidationError):
        ServiceSettings(policy_reload_s=-1)
    with pytest.raises(ValidationError, match="policy_max_lora_rank"):
        ServiceSettings(policy_max_lora_rank=12)  # type: ignore[arg-type]  # not a vLLM rank


async def test_an_adapter_above_the_server_s_rank_is_refused_before_vllm_sees_it(
    policy_url: str, script: Script, tmp_path: Path
) -> None:
    registry = registry_of(tmp_path, "r16")
    wide = make_adapter(tmp_path / "out" / "r32")
    (wide / "adapter_config.json").write_text(json.dumps({"r": 32, "peft_type": "LORA"}))
    registry.publish(wide, "r32", base_model="scripted")
    server = LoRAServer(policy_url, "scripted", max_rank=16)

    with pytest.raises(IncompatibleCheckpoint, match=r"rank-32 .* up to 16 .*MAX_LORA_RANK"):
        await server.load(load_manifest(registry.root / "r32"), registry.root / "r32")
    await server.load(load_manifest(registry.root / "r16"), registry.root / "r16")

    assert set(script.adapters) == {"r16"}


async def test_canaries_are_answered_under_the_service_s_answer_rules(
    offline_store: Path, tmp_path: Path
) -> None:
    """A version's canaries run as the service answers (greedy), under its answer rules and
    with its quote ranker: a canary naming what its quotes do not show fails a version only
    where the service too would decline it."""
    web = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
    try:
        for grounded, quotes, relevant in ((True, 2, 0), (False, 1, 1)):
            settings = ServiceSettings(
                policy_url="http://127.0.0.1:9/v1",
                policy_model="scripted",
                policy_checkpoint=tmp_path,
                grounded_declines=grounded,
                explanation_quotes=quotes,
                relevant_quotes=relevant,
            )
            ranker = WordRanker("genus")
            canary = policy_versions(settings, web, None, quote_ranker=ranker).canary_episode
            assert (canary.temperature, canary.guided) == (0.0, True)
            assert canary.quote_ranker is ranker and canary.decline_judge is None
            assert (canary.grounded_declines, canary.explanation_quotes) == (grounded, quotes)
            assert canary.relevant_quotes == (relevant or None)
    finally:
        await web.aclose()
