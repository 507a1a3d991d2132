"""Best-of-n end to end: `webgpt answer --n 4 --json --reward-model CKPT` with a tiny
trained reward model, the scripted policy and a real offline web."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reward.config import RewardTrainConfig
from reward.train import train_reward_model
from tests.agent.fake_policy import Script, fake_policy_app
from tests.reward.tiny import build_tiny_backbone, write_comparisons
from tests.servers import serve


@pytest.fixture(scope="module")
def reward_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bon")
    comparisons = folder / "c.jsonl"
    write_comparisons(comparisons, stories=120)
    config = RewardTrainConfig(
        comparisons=[comparisons],
        backbone=build_tiny_backbone(folder / "backbone"),
        out=folder / "registry",
        version="rm-bon",
        epochs=4,
        learning_rate=3e-3,
        ema_decay=0.9,
        validation_fraction=0.2,
        max_length=96,
    )
    return train_reward_model(config, log=lambda _: None).checkpoint


def test_answer_n4_picks_the_answer_the_reward_model_prefers(
    reward_checkpoint: Path, offline_store: Path
) -> None:
    script = Script(oracle_quote="Crows are birds of the genus Corvus.")
    # Four episodes run at once, so which episode gets which answer is arbitrary.
    script.answers = [f"in story 7 the sky is {c} [1]" for c in ("green", "blue", "red", "purple")]
    with serve(fake_policy_app(script)) as base:
        env = {
            "PATH": "/usr/bin:/bin",
            "WEBGPT_HOME": str(offline_store.parent),
            "WEBGPT_OFFLINE_STORE": str(offline_store),
        }
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "service.cli",
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


def test_bad_reward_checkpoints_are_clear_errors(offline_store: Path, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "WEBGPT_HOME": str(tmp_path)}
    for folder in (tmp_path / "missing", offline_store.parent):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "service.cli",
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
