"""The service's policy versions: LoRA adapters loaded into vLLM at run time, canaries.

With `WEBGPT_POLICY_CHECKPOINT` (an alias such as registry/policy/current, agent.registry),
the service serves the version the alias names and follows it (service.versions). Each
version is a LoRA adapter on the base model the vLLM server serves; it is loaded under its
own name with vLLM's runtime LoRA API (`POST /v1/load_lora_adapter`, which needs
`VLLM_ALLOW_RUNTIME_LORA_UPDATING=True` and `--enable-lora`), so two versions are served
side by side during a swap and an episode's requests all name the version it started with.
A version is never reloaded under an old name: vLLM keys its prefix cache by adapter, so
a fresh name cannot hit a stale block, and unloading the old adapter once its last episode
has finished frees its blocks (docs/deploy.md).

A version with full weights cannot be loaded into a running server, so when the service
started its own vLLM it is switched blue/green: a second vLLM process is started for it
(`VLLMLauncher`), canaried, routed to, and stopped once drained. On a GPU each server takes
a fixed share of its GPU's memory, and the shares are checked at start to fit together
(`check_gpu_shares`). Behind an external policy server (`WEBGPT_POLICY_URL`) full weights
are refused and roll out as a new vLLM Deployment instead (docs/deploy.md says why).

Before a version serves, its files must match its manifest, its observation format must be
this build's, its base must be the served base, and canary episodes must pass: every
guided command is accepted by the browser and the answer cites the quotes it collected.
"""

import asyncio
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import httpx

from webgpt.agent.episode import EpisodeConfig, run_episode
from webgpt.agent.errors import ConfigurationError
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.registry import adapter_rank, is_adapter, load_policy_manifest
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web
from webgpt.infra.checkpoints import Manifest
from webgpt.infra.errors import IncompatibleCheckpoint
from webgpt.infra.vllm_server import (
    Device,
    RunningServer,
    ServerConfig,
    default_device,
    free_port,
    start,
    stop,
)
from webgpt.service.versions import CanaryFailed, log_event

CANARY_MAX_ACTIONS = 10
CANARY_TIMEOUT_S = 300.0
# Full-weight servers running at once: the version serving and the next one coming up. A
# third (a promote while an older version still drains) waits until one has drained.
MAX_LAUNCHED = 2
# vLLM's --gpu-memory-utilization is a per-process fraction of the whole GPU's memory,
# which vLLM requires free when the process starts (or it exits: "Free memory on device
# ... is less than desired GPU memory utilization"). Each process's CUDA context is made
# before that check, outside its share, so servers on one GPU may together take at most
# this: a tenth of the GPU left for their contexts and anything else on it, the headroom
# vLLM's long-standing default (0.9) left one server alone.
MAX_GPU_SHARES = 0.9
ONE_GPU_SHARE = 0.3  # serving + MAX_LAUNCHED launched, one GPU (ServiceSettings' default)


@dataclass
class LoRAServer:
    """A vLLM server (base_url ends in /v1) that serves `base` and loads adapters at run time."""

    base_url: str
    base: str  # the served base model's version; every adapter must be trained on it
    api_key: str | None = None
    timeout_s: float = 120.0
    max_rank: int | None = None  # the server's --max-lora-rank, where the service set it

    async def load(self, manifest: Manifest, folder: Path) -> None:
        if not is_adapter(folder):
            raise IncompatibleCheckpoint(
                f"{manifest.version} is full weights; a running policy server only takes LoRA "
                "adapters at run time (docs/deploy.md: full weights roll out as a new vLLM "
                "Deployment, or blue/green when the service starts its own vLLM with "
                "WEBGPT_POLICY_LAUNCH_GPU_MEMORY_SHARE above 0)"
            )
        if manifest.base_model != self.base:
            raise IncompatibleCheckpoint(
                f"{manifest.version} is an adapter on {manifest.base_model}; the policy server "
                f"serves {self.base}"
            )
        if self.max_rank is not None and (rank := adapter_rank(folder)) > self.max_rank:
            raise IncompatibleCheckpoint(
                f"{manifest.version} is a rank-{rank} adapter; the policy server takes ranks up "
                f"to {self.max_rank} (raise WEBGPT_POLICY_MAX_LORA_RANK and restart the service)"
            )
        if await self.serves(manifest.version):
            return  # loaded by this service before it restarted: same name, same files
        await self._post(
            "load_lora_adapter", {"lora_name": manifest.version, "lora_path": str(folder)}
        )

    async def serves(self, version: str) -> bool:
        return version in (await self.served_models() or set())

    async def served_models(self) -> set[str] | None:
        """The names the server serves now (its base and loaded adapters); None when it
        does not answer."""
        async with httpx.AsyncClient(timeout=self.timeout_s, trust_env=False) as client:
            try:
                response = await client.get(
                    f"{self.base_url.rstrip('/')}/models", headers=self._headers()
                )
                return {model.get("id") for model in response.json().get("data", [])}
            except (httpx.HTTPError, ValueError, AttributeError):
                return None

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    async def unload(self, version: str) -> None:
        """Unload version; one the server no longer has (it restarted) is done already."""
        await self._post("unload_lora_adapter", {"lora_name": version}, missing_is_done=True)

    async def _post(self, route: str, body: dict[str, str], missing_is_done: bool = False) -> None:
        async with httpx.AsyncClient(timeout=self.timeout_s, trust_env=False) as client:
            try:
                response = await client.post(
                    f"{self.base_url.rstrip('/')}/{route}", json=body, headers=self._headers()
                )
            except httpx.HTTPError as error:
                raise ConfigurationError(f"{route} at {self.base_url} failed: {error!r}") from error
        # 404 is both a route vLLM does not have (runtime LoRA off: FastAPI's "Not Found")
        # and an adapter it does not have (its own error body).
        if response.status_code == 404 and _no_such_route(response):
            raise ConfigurationError(
                f"{self.base_url} has no /{route}: start vLLM with --enable-lora and "
                "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True"
            )
        if response.status_code == 404 and missing_is_done:
            return
        if response.status_code != 200:
            raise ConfigurationError(
                f"{route} {body.get('lora_name')} at {self.base_url}: HTTP "
                f"{response.status_code} {response.text[:300]}"
            )


def _no_such_route(response: httpx.Response) -> bool:
    try:
        return bool(response.json() == {"detail": "Not Found"})
    except ValueError:
        return True


async def run_canaries(
    policy: OpenAIPolicy, web: Web, questions: list[str], episode: EpisodeConfig
) -> None:
    """Raise CanaryFailed unless every canary episode is clean and ends in a cited answer."""
    for question in questions:
        cache = web.new_cache()
        session = web.session(cache, SessionConfig(max_actions=CANARY_MAX_ACTIONS))
        try:
            async with asyncio.timeout(CANARY_TIMEOUT_S):
                result = await run_episode(0, session, policy, question, episode)
        except Exception as error:  # the version cannot run an episode at all
            raise CanaryFailed(f"{policy.name}: canary {question!r} failed: {error!r}") from error
        finally:
            await cache.aclose()
        problems = []
        if result.invalid_actions:
            problems.append(f"{result.invalid_actions} commands the browser refused")
        if result.answer is None:
            problems.append(f"no answer (ended by {result.end_reason})")
        elif not result.references or "[1]" not in result.answer or result.dangling_citations:
            problems.append(f"the answer does not cite its quotes: {result.answer[:200]!r}")
        if problems:
            raise CanaryFailed(f"{policy.name}: canary {question!r}: {'; '.join(problems)}")


class Launcher(Protocol):
    """Serves full-weight versions, one server process each (blue/green)."""

    async def start(self, folder: Path, version: str) -> str:
        """Start serving folder as `version`; the server's base URL (ending in /v1)."""
        ...

    def serves(self, version: str) -> bool: ...

    async def stop(self, version: str) -> None: ...

    async def aclose(self) -> None:
        """Stop every server still running."""
        ...


def spare_cpu() -> str:
    """The CPU that vLLM's "auto" binding leaves to the serving server's front end (the
    highest-numbered one this process may run on), for a server started beside it. Its
    worker threads must not share the serving worker's cores: two OpenMP pools on one core
    wait on each other at every barrier, and a canary on a "nobind" second server ran at
    0.4 tokens/s and timed out (docs/deploy.md)."""
    return str(max(os.sched_getaffinity(0)))


def launch_cpu_binds() -> tuple[str, ...]:
    """The core lists launched servers take in turn (CPU build), by default: the spare CPU,
    then every other CPU this process may run on, which the serving server's worker is
    bound to. A swap between two full-weight versions holds two launched servers, and the
    second must not share the first's busy core: on this project's 2-core VMs a process
    bound to a core another server's worker keeps busy did not run at all for minutes
    (docs/deploy.md). The serving server's worker is then idle, as the launched version
    serves every answer."""
    spare = spare_cpu()
    rest = sorted(os.sched_getaffinity(0) - {int(spare)})
    return (spare, ",".join(map(str, rest))) if rest else (spare,)


def check_gpu_shares(
    serving: float, launched: float, launch_gpus: str | None, visible_gpus: str | None
) -> None:
    """Refuse, before any vLLM starts, GPU memory shares that cannot be resident together:
    the serving server's on its GPU (the first of visible_gpus, the service's
    CUDA_VISIBLE_DEVICES) and MAX_LAUNCHED launched servers' on the first of launch_gpus
    (None: the serving GPU). A launched share of 0: no server is ever launched."""
    if launched == 0:
        return
    serving_gpu = _first_gpu(visible_gpus)
    launch_gpu = serving_gpu if launch_gpus is None else _first_gpu(launch_gpus)
    why = (
        f"during a swap {MAX_LAUNCHED} launched vLLM servers (a full-weight version serving "
        "and the next one coming up) are resident, and a vLLM server takes its share of the "
        "whole GPU and does not start unless that much is free"
    )
    if launch_gpu == serving_gpu:
        total = serving + MAX_LAUNCHED * launched
        if round(total, 6) > MAX_GPU_SHARES:
            raise ConfigurationError(
                f"WEBGPT_POLICY_GPU_MEMORY_SHARE={serving} + {MAX_LAUNCHED} x "
                f"WEBGPT_POLICY_LAUNCH_GPU_MEMORY_SHARE={launched} = {total:.2f} of GPU "
                f"{serving_gpu}, over {MAX_GPU_SHARES}: {why}, beside the serving one. Lower "
                f"them (one GPU: {ONE_GPU_SHARE} each), launch on another GPU "
                "(WEBGPT_POLICY_LAUNCH_GPUS), or set WEBGPT_POLICY_LAUNCH_GPU_MEMORY_SHARE=0 "
                "to serve adapters only (docs/deploy.md)"
            )
    elif round(MAX_LAUNCHED * launched, 6) > MAX_GPU_SHARES:
        raise ConfigurationError(
            f"{MAX_LAUNCHED} x WEBGPT_POLICY_LAUNCH_GPU_MEMORY_SHARE={launched} = "
            f"{MAX_LAUNCHED * launched:.2f} of GPU {launch_gpu} (WEBGPT_POLICY_LAUNCH_GPUS), "
            f"over {MAX_GPU_SHARES}: {why}. Give each at most {MAX_GPU_SHARES / MAX_LAUNCHED} "
            "(docs/deploy.md)"
        )


def _first_gpu(cuda_visible_devices: str | None) -> str:
    """The GPU a single-GPU vLLM uses under this CUDA_VISIBLE_DEVICES (unset: GPU 0)."""
    return (cuda_visible_devices or "0").split(",")[0].strip()


@dataclass
class VLLMLauncher:
    """One local vLLM process per full-weight version, on a free loopback port, at most
    MAX_LAUNCHED at once (the GPU shares are sized for that; check_gpu_shares).

    cpu_binds (CPU build only; no effect on a GPU) are the core lists a new process's
    OpenMP threads are bound to: the first no running launched server holds
    (launch_cpu_binds), else the first.
    gpu_memory_share and gpus (CUDA build only) are each process's
    --gpu-memory-utilization and CUDA_VISIBLE_DEVICES (None: the serving server's GPU)."""

    start_timeout_s: float = 900.0
    cpu_binds: tuple[str, ...] = field(default_factory=launch_cpu_binds)
    gpu_memory_share: float = ONE_GPU_SHARE
    gpus: str | None = None
    device: Device = field(default_factory=default_device)
    running: dict[str, RunningServer] = field(default_factory=dict)
    held_binds: dict[str, str] = field(default_factory=dict)  # version: its cpu_bind

    def config(self, folder: Path, version: str) -> ServerConfig:
        """The server a full-weight version is started in."""
        held = set(self.held_binds.values())
        return ServerConfig(
            model_dir=folder,
            served_name=version,
            port=free_port(),
            cpu_bind=next((b for b in self.cpu_binds if b not in held), self.cpu_binds[0]),
            device=self.device,
            gpu_memory_share=self.gpu_memory_share,
            gpus=self.gpus,
        )

    async def start(self, folder: Path, version: str) -> str:
        if version in self.running:  # the slot reuses a draining version; never two servers
            raise ConfigurationError(f"{version} already has a server running")
        if len(self.running) >= MAX_LAUNCHED:  # refused now, tried again once a minute
            raise ConfigurationError(
                f"{version} waits for a server to drain: {', '.join(self.running)} still run, "
                f"and at most {MAX_LAUNCHED} full-weight versions are served at once"
            )
        config = self.config(folder, version)
        log_event("policy_process_starting", version, config.url)
        running = await asyncio.to_thread(
            start, config, lambda line: None, self.start_timeout_s, False
        )
        self.running[version] = running
        self.held_binds[version] = config.cpu_bind
        return running.url

    def serves(self, version: str) -> bool:
        return version in self.running

    async def stop(self, version: str) -> None:
        running = self.running.pop(version, None)
        self.held_binds.pop(version, None)
        if running is not None:
            await asyncio.to_thread(stop, running)

    async def aclose(self) -> None:
        for version in list(self.running):
            await self.stop(version)


@dataclass
class PolicyVersions:
    """Brings policy versions up (adapters on a LoRAServer, full weights through the
    launcher) and takes them down when they drain."""

    server: LoRAServer
    web: Web
    canaries: list[str]
    process: RunningServer | None = None  # the local vLLM server, when the service started it
    launcher: Launcher | None = None  # full-weight versions; None: they are refused
    # How canaries are answered: greedy, under the service's answer rules
    canary_episode: EpisodeConfig = field(default_factory=lambda: EpisodeConfig(temperature=0.0))

    # Adapters brought up on the LoRA server, by version: what keep_served loads again.
    adapters: dict[str, tuple[Manifest, Path]] = field(default_factory=dict)

    _reloading: asyncio.Lock = field(default_factory=asyncio.Lock)

    def client(self, version: str) -> OpenAIPolicy:
        """A client of the adapter version; a 404 for it (the server lost it) loads it again
        and resends, so answers do not fail in the moments before keep_served would."""

        async def load_again() -> None:
            await self.load_again(version)

        return OpenAIPolicy(
            self.server.base_url,
            version,
            api_key=self.server.api_key,
            on_missing_model=load_again,
        )

    async def keep_served(self, policy: OpenAIPolicy) -> None:
        """Load the serving adapter again into a policy server that answers without it: a
        vLLM restarted (crashed, OOM-killed, rescheduled) forgets every adapter loaded at
        run time, and every answer would fail with 404 until the next promote."""
        await self.load_again(policy.name)

    async def load_again(self, version: str) -> None:
        """Load an adapter version brought up before into the server, if the server answers
        and no longer serves it; one at a time (many episodes see the 404 together)."""
        loaded = self.adapters.get(version)
        if loaded is None:
            return  # full weights on their own server, or no longer serving
        async with self._reloading:
            served = await self.server.served_models()
            if served is None or version in served:
                return  # down (it is restarting: try again later) or fine
            manifest, folder = loaded
            await self.server.load(manifest, folder)
            log_event("policy_adapter_reloaded", str(folder), f"{version}: the server had lost it")

    async def bring_up(self, folder: Path) -> OpenAIPolicy:
        """Check the version in folder, serve it beside the served one, run its canaries."""
        manifest = await asyncio.to_thread(load_policy_manifest, folder, True)
        if is_adapter(folder) or self.launcher is None:
            await self.server.load(manifest, folder)
            self.adapters[manifest.version] = (manifest, folder)
            policy = self.client(manifest.version)
        else:
            policy = OpenAIPolicy(
                await self.launcher.start(folder, manifest.version), manifest.version
            )
        try:
            await run_canaries(policy, self.web, self.canaries, self.canary_episode)
        except BaseException:
            await self.retire(policy)
            raise
        return policy

    async def retire(self, policy: OpenAIPolicy) -> None:
        """Unload (or stop the process of) a version no episode uses any more. This runs as
        the last answer on it finishes: a failure is logged, never passed to that answer."""
        await policy.aclose()
        self.adapters.pop(policy.name, None)
        try:
            if self.launcher is not None and self.launcher.serves(policy.name):
                await self.launcher.stop(policy.name)
            else:
                await self.server.unload(policy.name)
        except (ConfigurationError, OSError) as error:
            log_event("policy_unload_failed", policy.name, str(error), logging.WARNING)

    async def aclose(self) -> None:
        if self.launcher is not None:
            await self.launcher.aclose()
        if self.process is not None:
            await asyncio.to_thread(stop, self.process)
