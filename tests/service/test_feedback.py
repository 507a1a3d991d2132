"""Feedback lands in SQLite, survives a restart, and exports for reward training."""

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.agent.fake_policy import Script
from tests.service.answers import record_two_candidates
from webgpt.reward.data import load_comparisons

QUESTION = {"question": "crow corvus"}


@pytest.mark.slow  # starts a process
def test_comparison_survives_a_restart_and_exports(
    service_url, script: Script, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "feedback.sqlite"
    script.answers = ["Crows are corvids [1].", "Crows are birds [1]."]
    with service_url(feedback_db=str(db), reward_model=None) as base:
        # n=1 gives one candidate: a comparison within it is refused.
        answer = httpx.post(f"{base}/answer", json=QUESTION, timeout=60).json()
        bad = httpx.post(
            f"{base}/feedback", json={"answer_id": answer["id"], "better": 0, "worse": 1}
        )
        assert bad.status_code == 422 and "below 1" in bad.json()["error"]["message"]
        unknown = httpx.post(
            f"{base}/feedback", json={"answer_id": "ans_nope", "better": 0, "worse": 1}
        )
        assert (
            unknown.status_code == 422 and "unknown answer id" in unknown.json()["error"]["message"]
        )
        demo = httpx.post(
            f"{base}/feedback",
            json={
                "kind": "demonstration",
                "question": "q",
                "commands": ["Search crows", "End: Answer"],
                "answer": "Crows [1].",
                "quotes": [{"title": "Crow", "extract": "Crows are birds."}],
            },
        )
        assert demo.status_code == 200 and demo.json()["kind"] == "demonstration"
    record_two_candidates(db, answer, "Crows are birds [1].")
    with service_url(feedback_db=str(db)) as base:  # a restarted service on the same file
        ok = httpx.post(
            f"{base}/feedback",
            json={"answer_id": "ans_two", "better": 1, "worse": 0, "note": "shorter"},
        )
        assert ok.status_code == 200 and ok.json() == {"id": 1, "kind": "comparison"}
        tie = httpx.post(
            f"{base}/feedback", json={"answer_id": "ans_two", "better": 0, "worse": 1, "tie": True}
        )
        assert tie.status_code == 200
    out = tmp_path / "comparisons.jsonl"
    exported = subprocess.run(
        [
            sys.executable,
            "-m",
            "webgpt.service.cli",
            "feedback",
            "export",
            "--db",
            str(db),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert exported.returncode == 0, exported.stderr
    assert "2 comparisons exported" in exported.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0]["a"]["answer"] == "Crows are birds [1]." and rows[0]["preference"] == "a"
    assert rows[0]["a"]["quotes"][0]["url"] == "https://en.wikipedia.org/wiki/Crow"
    assert rows[1]["preference"] == "tie"
    assert rows[0]["versions"] == {
        "policy": "scripted",
        "reward": None,
        "quote_ranker": None,
        "format": 1,
    }
    comparisons, report = load_comparisons([out])  # what `webgpt train rm` reads
    assert report.used == 2 and [c.label for c in comparisons] == [1.0, 0.5]
