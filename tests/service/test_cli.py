"""The `webgpt` entry point itself."""

import signal
import subprocess
import sys
from pathlib import Path

import pytest


def test_sigterm_ends_a_command_as_ctrl_c_does(offline_store: Path) -> None:
    """A killed command goes through its cleanup (as `webgpt eval` must, to stop the vLLM
    server it started for the run), not the default death by signal."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "webgpt.service.cli",
            "browse",
            "-q",
            "crows",
            "--store",
            str(offline_store),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "♦Question\n"  # browsing, waiting for a command
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err  # as after Ctrl-C (killed by the signal: -15)
    assert "Traceback" not in err


def test_reward_model_default_serves_the_shipped_one_through_its_alias(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`webgpt serve --reward-model default` (or WEBGPT_REWARD_MODEL=default) serves the
    shipped reward model (here already prepared, tiny) through registry/reward/current,
    which operators re-point."""
    from tests.reward.tiny import build_tiny_backbone, write_comparisons
    from webgpt.agent.model import DEFAULT_REWARD_VERSION
    from webgpt.reward.config import RewardTrainConfig
    from webgpt.reward.train import train_reward_model
    from webgpt.service import cli

    monkeypatch.setenv("WEBGPT_HOME", str(tmp_path / "home"))
    comparisons = tmp_path / "c.jsonl"
    write_comparisons(comparisons, stories=4)
    reward = tmp_path / "home" / "registry" / "reward"
    config = RewardTrainConfig(
        comparisons=[comparisons], backbone=build_tiny_backbone(tmp_path / "backbone"),
        out=reward, version=DEFAULT_REWARD_VERSION, epochs=1, max_length=64,
    )  # fmt: skip
    train_reward_model(config, log=lambda _: None)

    args = cli.build_parser().parse_args(["serve", "--reward-model", "default"])
    assert cli._settings(args).reward_model == reward / "current"
    assert (reward / "current").resolve() == reward / DEFAULT_REWARD_VERSION
    monkeypatch.setenv("WEBGPT_REWARD_MODEL", "default")
    assert cli._settings(cli.build_parser().parse_args(["serve"])).reward_model == (
        reward / "current"
    )
    given = cli.build_parser().parse_args(["serve", "--reward-model", str(tmp_path / "rm")])
    assert cli._settings(given).reward_model == tmp_path / "rm"
