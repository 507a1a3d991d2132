"""Blue/green on one GPU or two: the GPU memory share of every vLLM server the service
starts (service.policies, infra.vllm_server), the check that they fit, and the CPU build's
command line left as it was. No vLLM starts: the tests read the command lines and
environments the servers would be started with, and a refused configuration is refused
before anything starts."""

import asyncio
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.service.test_policy_reload import make_full_weights, registry_of
from webgpt.agent.errors import ConfigurationError
from webgpt.browser.web import Web, WebOptions
from webgpt.infra.vllm_server import LORA_PORT, RunningServer, ServerConfig, lora_server_config
from webgpt.service.policies import (
    MAX_GPU_SHARES,
    VLLMLauncher,
    check_gpu_shares,
    launch_cpu_binds,
)
from webgpt.service.server import policy_versions
from webgpt.service.settings import ServiceSettings


def flag(command: list[str], name: str) -> str | None:
    """The value after a flag on a command line, None where the flag is absent."""
    return command[command.index(name) + 1] if name in command else None


def test_a_launched_cuda_server_carries_its_share_and_its_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # the service's, where blue serves
    folder = make_full_weights(tmp_path / "full-2")
    launcher = VLLMLauncher(cpu_binds=("1",), gpu_memory_share=0.45, gpus="1", device="cuda")
    config = launcher.config(folder, "full-2")
    assert flag(config.command(), "--gpu-memory-utilization") == "0.45"
    assert flag(config.command(), "--served-model-name") == "full-2"
    assert config.env()["CUDA_VISIBLE_DEVICES"] == "1"
    # Without a GPU of its own, green shares blue's: the environment it inherits.
    same = VLLMLauncher(cpu_binds=("1",), gpu_memory_share=0.3, device="cuda").config(folder, "v")
    assert flag(same.command(), "--gpu-memory-utilization") == "0.3"
    assert same.env()["CUDA_VISIBLE_DEVICES"] == "0"


def test_a_full_weight_version_launched_beside_another_takes_the_cores_it_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between two full-weight versions two launched servers run at once; the second is
    bound to the cores the first does not hold, never to its busy one (docs/deploy.md)."""
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert launch_cpu_binds() == ("3", "0,1,2")  # the spare CPU, then the serving worker's
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {5})
    assert launch_cpu_binds() == ("5",)
    folder = make_full_weights(tmp_path / "full")
    launcher = VLLMLauncher(cpu_binds=("3", "0,1,2"), device="cpu")
    assert launcher.config(folder, "full-1").cpu_bind == "3"
    launcher.held_binds["full-1"] = "3"  # full-1 serving (no process here)
    assert launcher.config(folder, "full-2").cpu_bind == "0,1,2"
    launcher.held_binds = {"full-2": "0,1,2"}  # full-1 drained and stopped
    assert launcher.config(folder, "full-3").cpu_bind == "3"
    alone = VLLMLauncher(cpu_binds=("8-15",), device="cpu")  # WEBGPT_POLICY_LAUNCH_CPUS
    alone.held_binds["full-1"] = "8-15"
    assert alone.config(folder, "full-2").cpu_bind == "8-15"


def test_the_serving_server_carries_its_share(tmp_path: Path) -> None:
    config = lora_server_config(tmp_path / "base", "base", 16, 0.3, device="cuda")
    command = config.command()
    assert flag(command, "--gpu-memory-utilization") == "0.3"
    assert "--enable-lora" in command and flag(command, "--port") == str(LORA_PORT)
    # Alone on its GPU (no checkpoint to follow), a server takes the manifests' 0.9.
    alone = ServerConfig(tmp_path / "model", "default", device="cuda")
    assert flag(alone.command(), "--gpu-memory-utilization") == "0.9"


def test_the_cpu_build_command_line_asks_for_small_cache_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    folder = make_full_weights(tmp_path / "full-2")
    launcher = VLLMLauncher(cpu_binds=("1",), gpu_memory_share=0.45, gpus="1", device="cpu")
    config = launcher.config(folder, "full-2")
    # On the CPU build --gpu-memory-utilization would be a share of the machine's memory.
    assert "--gpu-memory-utilization" not in config.command()
    assert config.command()[3:] == [
        "--model", str(folder), "--served-model-name", "full-2", "--host", "127.0.0.1",
        "--port", str(config.port), "--max-model-len", "4096", "--dtype", config.dtype,
        "--block-size", "32",
    ]  # fmt: skip
    env = config.env()
    assert "CUDA_VISIBLE_DEVICES" not in env
    assert env["VLLM_CPU_OMP_THREADS_BIND"] == "1" and env["VLLM_CPU_KVCACHE_SPACE"] == "2"
    serving = lora_server_config(folder, "base", 16, 0.3, device="cpu")
    assert "--gpu-memory-utilization" not in serving.command()
    on_gpu = VLLMLauncher(cpu_binds=("1",), device="cuda").config(folder, "full-2").command()
    assert "--block-size" not in on_gpu


def test_the_default_shares_fit_one_gpu_and_two_gpus_fit_larger_ones() -> None:
    defaults = ServiceSettings()
    assert (defaults.policy_gpu_memory_share, defaults.policy_launch_gpu_memory_share) == (0.3, 0.3)
    assert defaults.policy_launch_gpus is None
    check_gpu_shares(0.3, 0.3, None, None)  # one GPU: 0.3 + 2 x 0.3 = 0.9
    check_gpu_shares(0.3, 0.3, "0", "0")
    # Two GPUs: blue alone on GPU 0 at 0.9, green (two versions during a swap) on GPU 1.
    check_gpu_shares(0.9, 0.45, "1", None)
    check_gpu_shares(0.9, 0.45, "3", "2,3")
    check_gpu_shares(0.9, 0.0, None, None)  # adapters only: nothing is ever launched


@pytest.mark.parametrize(
    ("serving", "launched", "launch_gpus", "visible", "message"),
    [
        # One GPU, shares that look fine for two servers: a full-weight swap needs three.
        (0.45, 0.45, None, None, r"=0\.45 \+ 2 x WEBGPT_POLICY_LAUNCH_GPU_MEMORY_SHARE=0\.45"),
        (0.5, 0.25, "0", None, "= 1.00 of GPU 0, over 0.9"),  # "0" is the serving GPU
        (0.3, 0.3001, "2", "2,3", "of GPU 2, over 0.9"),
        # Two GPUs at 0.9 each: the second launched version would not start.
        (0.9, 0.9, "1", None, r"2 x WEBGPT_POLICY_LAUNCH_GPU_MEMORY_SHARE=0\.9 = 1\.80 of GPU 1"),
    ],
)
def test_shares_that_do_not_fit_are_refused(
    serving: float, launched: float, launch_gpus: str | None, visible: str | None, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        check_gpu_shares(serving, launched, launch_gpus, visible)


def test_an_over_committed_gpu_is_refused_at_start_before_vllm_starts(
    offline_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = registry_of(tmp_path, "v1")
    registry.promote("v1")
    monkeypatch.setenv("WEBGPT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("WEBGPT_POLICY_CHECKPOINT", str(registry.current))
    monkeypatch.setenv("WEBGPT_POLICY_GPU_MEMORY_SHARE", "0.45")
    monkeypatch.setenv("WEBGPT_POLICY_LAUNCH_GPU_MEMORY_SHARE", "0.45")
    web = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
    try:
        with pytest.raises(ConfigurationError) as refused:
            policy_versions(ServiceSettings(), web, None)
    finally:
        asyncio.run(web.aclose())
    message = str(refused.value)
    assert "WEBGPT_POLICY_GPU_MEMORY_SHARE=0.45" in message
    assert "WEBGPT_POLICY_LAUNCH_GPU_MEMORY_SHARE=0.45" in message
    assert f"= 1.35 of GPU 0, over {MAX_GPU_SHARES}" in message
    assert not (tmp_path / "home" / "logs").exists()  # no vLLM was started (its log)


def test_the_settings_parse_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEBGPT_POLICY_GPU_MEMORY_SHARE", "0.9")
    monkeypatch.setenv("WEBGPT_POLICY_LAUNCH_GPU_MEMORY_SHARE", "0.45")
    monkeypatch.setenv("WEBGPT_POLICY_LAUNCH_GPUS", "1")
    settings = ServiceSettings()
    assert settings.policy_gpu_memory_share == 0.9
    assert settings.policy_launch_gpu_memory_share == 0.45
    assert settings.policy_launch_gpus == "1"
    monkeypatch.setenv("WEBGPT_POLICY_LAUNCH_CPUS", "8-15|16,18")
    assert ServiceSettings().policy_launch_cpus == "8-15|16,18"
    monkeypatch.delenv("WEBGPT_POLICY_LAUNCH_CPUS")
    for name, value in [
        ("GPU_MEMORY_SHARE", "0"),  # the serving server needs some memory
        ("GPU_MEMORY_SHARE", "1.5"),
        ("LAUNCH_GPU_MEMORY_SHARE", "-0.1"),
        ("LAUNCH_GPUS", "1, 2"),
        ("LAUNCH_CPUS", "last"),  # a core list, as VLLM_CPU_OMP_THREADS_BIND writes it
        ("LAUNCH_CPUS", "1-"),
    ]:
        monkeypatch.setenv(f"WEBGPT_POLICY_{name}", value)
        with pytest.raises(ValidationError):
            ServiceSettings()
        monkeypatch.delenv(f"WEBGPT_POLICY_{name}")


def test_a_third_full_weight_server_waits_for_one_to_drain(tmp_path: Path) -> None:
    """The shares are checked for the serving server and two launched ones: a promote while
    an older full-weight version still drains is refused (and retried), never started."""
    launcher = VLLMLauncher(cpu_binds=("1",), device="cuda")
    for version in ("full-1", "full-2"):  # running as far as the launcher knows; no process
        launcher.running[version] = RunningServer(0, "http://127.0.0.1:1/v1", version, "")
    folder = make_full_weights(tmp_path / "full-3")
    with pytest.raises(ConfigurationError, match="full-3 waits for a server to drain"):
        asyncio.run(launcher.start(folder, "full-3"))
    assert set(launcher.running) == {"full-1", "full-2"}
