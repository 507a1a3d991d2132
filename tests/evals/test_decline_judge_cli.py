"""`--decline-judge` naming no reward checkpoint is refused with the folder named, before
any question is answered."""

from pathlib import Path

import pytest

from tests.learning.test_record import webgpt


@pytest.mark.slow  # starts a process
def test_a_decline_judge_that_is_no_checkpoint_is_refused(tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"question": "What are crows?", "gold_answers": ["corvids"]}\n')
    (tmp_path / "empty").mkdir()
    for judge in ("missing", "empty"):
        out = tmp_path / f"{judge}.json"
        run = webgpt(
            "eval",
            "--questions", str(questions),
            "--policy", "http://127.0.0.1:9/v1,scripted",
            "--decline-judge", str(tmp_path / judge),
            "--json-out", str(out),
            home=tmp_path / "home",
        )  # fmt: skip
        assert run.returncode == 1
        assert f"{tmp_path / judge} has no readable manifest.json" in run.stderr
        assert not out.exists()  # nothing was evaluated
