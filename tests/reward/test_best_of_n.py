"""Best-of-n end to end: `webgpt answer --n 4 --json --reward-model CKPT` with a tiny
trained reward model (tests/reward/conftest.py), the scripted policy and a real offline
web; scored in-process, or on a server speaking vLLM's /classify with `--reward-url`."""

import json
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.agent.fake_policy import Script, fake_policy_app
from tests.reward.fake_vllm import ClassifyScript, fake_vllm_classify_app
from tests.servers import COMMAND_ENV, serve


@pytest.mark.slow  # starts a process
@pytest.mark.parametrize("placement", ["in-process", "reward-server"])
def test_answer_n4_picks_the_answer_the_reward_model_prefers(
    reward_checkpoint: Path, offline_store: Path, placement: str
) -> None:
    script = Script(oracle_quote="Crows are birds of the genus Corvus.")
    # Four episodes run at once, so which episode gets which answer is arbitrary.
    script.answers = [f"in story 7 the sky is {c} [1]" for c in ("green", "blue", "red", "purple")]
    classify = ClassifyScript(reward_checkpoint, served_name="rm-bon")
    with ExitStack() as servers:
        base = servers.enter_context(serve(fake_policy_app(script)))
        reward_args = []
        if placement == "reward-server":
            reward_base = servers.enter_context(serve(fake_vllm_classify_app(classify)))
            reward_args = ["--reward-url", reward_base + "/v1"]
        env = {
            **COMMAND_ENV,
            "WEBGPT_HOME": str(offline_store.parent),
            "WEBGPT_OFFLINE_STORE": str(offline_store),
        }
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "webgpt.service.cli",
                "answer",
                "crow corvus",
                "--n",
                "4",
                "--json",
                "--js",
                "never",
                "--policy-url",
                base + "/v1",
                "--policy-model",
                "scripted",
                "--reward-model",
                str(reward_checkpoint),
                *reward_args,
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    candidates = body["candidates"]
    assert len(candidates) == 4
    assert all(c["reward"] is not None and c["answer"] for c in candidates)
    best = max(candidates, key=lambda c: c["reward"])
    assert body["best"] == candidates.index(best)
    assert body["answer"] == best["answer"] == "in story 7 the sky is blue [1]"
    assert body["versions"]["reward"] == "rm-bon"
    assert body["usage"]["pages_fetched"] == 1
    assert len(classify.requests) == (1 if placement == "reward-server" else 0)


@pytest.mark.slow  # starts a process
def test_bad_reward_checkpoints_are_clear_errors(offline_store: Path, tmp_path: Path) -> None:
    env = {**COMMAND_ENV, "WEBGPT_HOME": str(tmp_path)}
    for folder in (tmp_path / "missing", offline_store.parent):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "webgpt.service.cli",
                "answer",
                "q",
                "--n",
                "2",
                "--policy-url",
                "http://127.0.0.1:9/v1",
                "--policy-model",
                "m",
                "--reward-model",
                str(folder),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            check=False,
        )
        assert result.returncode == 1
        assert "manifest.json" in result.stderr and result.stderr.startswith("error: ")


@pytest.mark.slow  # starts a process
def test_a_reward_url_without_its_checkpoint_is_a_clear_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "webgpt.service.cli",
            "answer",
            "q",
            "--reward-url",
            "http://127.0.0.1:9/v1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**COMMAND_ENV, "WEBGPT_HOME": str(tmp_path)},
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.startswith("error: ")
    assert "--reward-url needs --reward-model" in result.stderr
