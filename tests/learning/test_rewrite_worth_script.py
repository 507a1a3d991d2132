"""scripts/rewrite_worth.py: each rewrite's worth on recorded outcomes, and run against run."""

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.scripts import load_script

worth = load_script("rewrite_worth")


def outcome(question: str, kind: str = "factoid", **extra: Any) -> dict[str, Any]:
    row = {
        "question": question,
        "kind": kind,
        "answer": "An answer [1].",
        "correct": False,
        "declined": False,
        "cited": True,
        "faithful": True,
        "wall_s": 2.0,
        "sentences": 1,
        "distinct_citations": 1,
        "key_points": None,
        "shaped_by": [],
        "quotes": [],
    }
    return {**row, **extra}


FULL = [
    outcome("f1", correct=True, shaped_by=["degenerate_retry"]),
    outcome("f2", correct=True),
    outcome("f3", correct=False, shaped_by=["degenerate_retry"]),
    outcome(
        "l1",
        "longform",
        sentences=2,
        distinct_citations=2,
        key_points=0.5,
        shaped_by=["degenerate_retry", "degenerate_decline"],
    ),
    outcome("u1", "unanswerable", declined=True, answer="The pages I found do not say."),
]


def write(path: Path, outcomes: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps([{"figures": {}, "outcomes": outcomes}]))
    return path


def test_figures_count_what_an_answer_can_move() -> None:
    shown = worth.figures(FULL)
    assert shown["factoids"] == (2, 3)
    assert shown["long-form"] == (1, 1) and shown["key points"] == 0.5
    assert shown["answerable declined"] == (0, 4) and shown["unanswerable declined"] == (1, 1)
    assert shown["unedited"] == (2, 5) and shown["degenerate"] == 0


def test_an_off_arm_is_the_full_run_with_its_reruns_in_place() -> None:
    rerun = [outcome("f1", correct=False), outcome("l1", "longform", sentences=1)]
    off = worth.replaced(FULL, rerun)
    assert [o["question"] for o in off] == [o["question"] for o in FULL]
    assert worth.figures(off)["factoids"] == (1, 3) and worth.figures(off)["long-form"] == (0, 1)
    assert worth.differences(off, FULL) == {"factoids": (1, 0), "long-form": (1, 0)}
    with pytest.raises(SystemExit, match="lacks"):
        worth.replaced(FULL, [outcome("not asked")])


def test_the_sign_test_is_one_sided_on_the_questions_that_differ() -> None:
    assert worth.sign_test(0, 0) == 1.0
    assert worth.sign_test(3, 0) == 1.0  # nothing lost
    assert worth.sign_test(0, 3) == 0.125  # all three lost: 1/8
    assert worth.sign_test(1, 1) == 0.75


def test_the_touched_questions_and_each_part_s_worth_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    full = write(tmp_path / "full.json", FULL)
    questions = tmp_path / "dev.jsonl"
    questions.write_text("".join(json.dumps({"question": o["question"]}) + "\n" for o in FULL))
    parts = tmp_path / "parts"
    command = ["touched", str(full), "--questions", str(questions), "--out", str(parts)]
    monkeypatch.setattr(sys, "argv", ["rewrite_worth.py", *command])
    assert worth.main() == 0
    retried = (parts / "degenerate_retry.jsonl").read_text().splitlines()
    assert [json.loads(line)["question"] for line in retried] == ["f1", "f3", "l1"]

    off = write(tmp_path / "off.json", [outcome("f1", correct=False)])
    command = ["worth", str(full), f"retry off={off}"]
    monkeypatch.setattr(sys, "argv", ["rewrite_worth.py", *command])
    assert worth.main() == 0
    printed = capsys.readouterr().out
    assert "retry off: factoids 1/3 (33.3%)" in printed
    assert "the full run against it: factoids 1 gained, 0 lost" in printed
    monkeypatch.setattr(sys, "argv", ["rewrite_worth.py", "worth", str(full), str(off)])
    with pytest.raises(SystemExit):
        worth.main()


def test_a_file_that_is_no_eval_output_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "missing.json"
    monkeypatch.setattr(sys, "argv", ["rewrite_worth.py", "compare", str(missing), str(missing)])
    with pytest.raises(SystemExit) as stopped:
        worth.main()
    assert stopped.value.code == 2
    assert "missing.json: not a `webgpt eval --json-out` file" in capsys.readouterr().err


def test_a_question_file_that_is_no_jsonl_of_questions_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    full = write(tmp_path / "full.json", FULL)
    for text in ("{not json\n", '{"kind": "factoid"}\n'):  # broken, or a row with no question
        questions = tmp_path / "dev.jsonl"
        questions.write_text(text)
        command = ["touched", str(full), "--questions", str(questions), "--out", str(tmp_path)]
        monkeypatch.setattr(sys, "argv", ["rewrite_worth.py", *command])
        with pytest.raises(SystemExit) as stopped:
            worth.main()
        assert stopped.value.code == 2
        assert "dev.jsonl: not a JSONL file of questions" in capsys.readouterr().err
    assert not list(tmp_path.glob("*_retry.jsonl"))  # nothing written


def test_a_median_under_a_second_is_printed_as_seconds() -> None:
    shown = worth.format_figures("x", {"s/question p50": 0.8, "key points": 0.5})
    assert shown == "x: s/question p50 0.8; key points 50.0%"
