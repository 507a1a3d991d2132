"""The `webgpt` entry point itself."""

import signal
import subprocess
import sys
from pathlib import Path


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
