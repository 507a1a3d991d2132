"""The `webgpt` entry point itself."""

import signal
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow  # starts a process
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


def test_reward_model_is_the_shipped_one_on_first_use_a_folder_or_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`webgpt serve` (and `webgpt mcp`) use the shipped reward model unless told otherwise,
    and prepare nothing at start: the service loads it on the first request for more than
    one episode (tests/service/test_best_of_n.py). `none` turns best-of-n off."""
    from webgpt.agent.model import DEFAULT_REWARD
    from webgpt.service import cli

    monkeypatch.setenv("WEBGPT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("WEBGPT_REWARD_MODEL", raising=False)
    parse = cli.build_parser().parse_args
    for command in ("serve", "mcp"):
        assert cli._settings(parse([command])).reward_model == Path(DEFAULT_REWARD)
        assert cli._settings(parse([command, "--reward-model", "none"])).reward_model is None
    given = parse(["serve", "--reward-model", str(tmp_path / "rm")])
    assert cli._settings(given).reward_model == tmp_path / "rm"
    monkeypatch.setenv("WEBGPT_REWARD_MODEL", "none")
    assert cli._settings(parse(["serve"])).reward_model is None
    assert not (tmp_path / "home").exists()  # nothing prepared
