"""scripts/answerability_declines.py: an answerability model's declines read off recorded runs."""

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.scripts import load_script
from webgpt.agent.answerability import AnswerabilityModel

script = load_script("answerability_declines")
KAZAN = "https://en.wikipedia.org/wiki/Kazan"


def outcome(question: str, kind: str, answer: str, correct: bool, **extra: Any) -> dict[str, Any]:
    declined = answer.startswith("The pages I found do not say")
    return {
        "question": question,
        "gold_answers": ["Volga"] if kind == "factoid" else [],
        "kind": kind,
        "answer": answer,
        "correct": correct,
        "cited": not declined,
        "faithful": None if declined else True,
        "declined": declined,
        "quotes": [{"title": "Kazan", "url": KAZAN, "extract": "Kazan is on the Volga river."}],
        "wall_s": 1.0,
        **extra,
    }


def test_the_model_declines_in_place_of_the_grounded_declines(
    learning_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    answered = outcome("Is Kazan on the Volga river?", "factoid", "It is, on the Volga [1].", True)
    # the grounded declines declined this one in the full run; its rerun answered it
    made_up = "Is Zenthar on the Volga river?"
    full = [answered, outcome(made_up, "unanswerable", "The pages I found do not say.", False)]
    rerun = [outcome(made_up, "unanswerable", "Zenthar is on the Volga [1].", False)]
    for name, outcomes in (("full", full), ("rerun", rerun)):
        (tmp_path / f"{name}.json").write_text(json.dumps([{"outcomes": outcomes}]))
    # answers only where the quotes show the whole question
    AnswerabilityModel(weights=(10.0, 0.0, 0.0, 0.0, 0.0, 0.0), bias=-9.0).save(tmp_path / "m", {})
    argv = [str(tmp_path / "full.json"), "--rerun", str(tmp_path / "rerun.json")]
    argv += ["--model", str(tmp_path / "m"), "--store", str(learning_store), "--list"]
    monkeypatch.setattr(sys, "argv", ["answerability_declines.py", *argv])
    script.main()
    printed = capsys.readouterr().out
    assert "grounded declines off: factoids 1/1 (100.0%)" in printed
    assert "unanswerable declined 0/1 (0.0%)" in printed  # the rerun's answer, undeclined
    judged = next(line for line in printed.splitlines() if line.startswith("answerability"))
    assert "factoids 1/1" in judged and "unanswerable declined 1/1 (100.0%)" in judged
    assert "answered" not in printed  # nothing the full run declined is answered
