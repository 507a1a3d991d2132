"""`--decline-judge` or `--quote-ranker` naming no reward checkpoint is refused with the
folder named, before any question is answered; so is WEBGPT_QUOTE_RANKER at the service's
start."""

from pathlib import Path

import pytest

from tests.learning.test_record import webgpt
from webgpt.infra.checkpoints import CheckpointError
from webgpt.service.scoring import build_quote_ranker
from webgpt.service.settings import ServiceSettings


@pytest.mark.slow  # starts a process
@pytest.mark.parametrize("option", ["--decline-judge", "--quote-ranker"])
def test_a_scorer_that_is_no_checkpoint_is_refused(option: str, tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"question": "What are crows?", "gold_answers": ["corvids"]}\n')
    (tmp_path / "empty").mkdir()
    for judge in ("missing", "empty"):
        out = tmp_path / f"{judge}.json"
        run = webgpt(
            "eval",
            "--questions", str(questions),
            "--policy", "http://127.0.0.1:9/v1,scripted",
            option, str(tmp_path / judge),
            "--json-out", str(out),
            home=tmp_path / "home",
        )  # fmt: skip
        assert run.returncode == 1
        assert f"{tmp_path / judge} has no readable manifest.json" in run.stderr
        assert not out.exists()  # nothing was evaluated


def test_a_service_quote_ranker_that_is_no_checkpoint_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    settings = ServiceSettings(quote_ranker=tmp_path / "empty")
    with pytest.raises(CheckpointError, match=r"has no readable manifest\.json"):
        build_quote_ranker(settings)
    assert build_quote_ranker(ServiceSettings(quote_ranker="none")) is None
