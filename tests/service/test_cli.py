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
    """`webgpt serve --reward-model default` (or WEBGPT_REWARD_MODEL=default) prepares the
    shipped reward model and follows registry/reward/current, which operators re-point."""
    from webgpt.service import cli

    prepared = tmp_path / "registry" / "reward" / "rm-shipped"
    monkeypatch.setattr(cli, "prepare_default_reward_model", lambda progress: prepared)
    args = cli.build_parser().parse_args(["serve", "--reward-model", "default"])
    assert cli._settings(args).reward_model == prepared.parent / "current"
    monkeypatch.setenv("WEBGPT_REWARD_MODEL", "default")
    assert cli._settings(cli.build_parser().parse_args(["serve"])).reward_model == (
        prepared.parent / "current"
    )
    given = cli.build_parser().parse_args(["serve", "--reward-model", str(tmp_path / "rm")])
    assert cli._settings(given).reward_model == tmp_path / "rm"
