"""`webgpt answer` as a user runs it, against the scripted policy server."""

import json
import subprocess
import sys
from pathlib import Path

from tests.agent.fake_policy import Script
from tests.servers import free_port


def answer(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "WEBGPT_HOME": str(store.parent),
        "WEBGPT_OFFLINE_STORE": str(store),
    }
    return subprocess.run(
        [sys.executable, "-m", "webgpt.service.cli", "answer", *args, "--js", "never"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def test_answer_prints_the_answer_and_references(
    offline_store: Path, policy_url: str, script: Script
) -> None:
    script.oracle_quote = "Crows are birds of the genus Corvus."
    script.answers = ["Crows are corvids [1]."]
    result = answer(
        offline_store, "crow corvus", "--policy-url", policy_url, "--policy-model", "scripted"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "Crows are corvids [1].\n\n[1] Crow — https://en.wikipedia.org/wiki/Crow\n"
    )


def test_answer_json(offline_store: Path, policy_url: str, script: Script) -> None:
    script.oracle_quote = "Crows are birds of the genus Corvus."
    script.answers = ["Crows are corvids [1]."]
    result = answer(
        offline_store,
        "crow corvus",
        "--policy-url",
        policy_url,
        "--policy-model",
        "scripted",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["answer"] == "Crows are corvids [1]."
    assert body["references"][0]["url"] == "https://en.wikipedia.org/wiki/Crow"
    assert body["usage"]["actions"] == 4 and body["usage"]["pages_fetched"] == 1
    assert body["versions"] == {"policy": "scripted", "reward": None, "format": 1}
    assert set(body["timings"]) >= {"total_s", "policy_s", "fetch_s", "render_s"}


def test_answer_errors_are_one_clear_line(offline_store: Path, policy_url: str) -> None:
    no_scorer = answer(
        offline_store, "q", "--n", "4", "--policy-url", policy_url, "--policy-model", "m"
    )
    assert no_scorer.returncode == 1 and "needs a reward model" in no_scorer.stderr
    half = answer(offline_store, "q", "--policy-url", policy_url)
    assert half.returncode == 1 and "together" in half.stderr
    down = answer(
        offline_store,
        "q",
        "--policy-url",
        f"http://127.0.0.1:{free_port()}/v1",
        "--policy-model",
        "m",
    )
    assert down.returncode == 1
    assert down.stderr.startswith("error: cannot connect") and len(down.stderr.splitlines()) == 1
