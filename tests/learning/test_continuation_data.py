"""scripts/continuation_data.py: what a CPU continuation trains on is cut as documented."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scripts import SCRIPTS, load_script

SCRIPT = SCRIPTS / "continuation_data.py"
continuation_data = load_script("continuation_data")

OPENING = "♦Text\n# Malawi\n\nCountry in Africa\n\nMalawi is a landlocked country in Africa."
LATER = OPENING + " " + "It has lakes. " * 10 + "It is bordered by Zambia to the west."


def step(observation: str, command: str) -> dict[str, str]:
    return {"observation": observation, "command": command}


def episode(number: int, kind: str, quote_at: str, *, find: bool = False) -> dict[str, object]:
    quote = "It is bordered by Zambia" if quote_at == LATER else "Malawi is a landlocked"
    steps = [step("♦Question", "Search Malawi"), step("results", "Clicked on link 0")]
    if find:
        steps.append(step(OPENING, "Find in page: bordered"))
    steps += [step(quote_at, f"Quote: {quote}"), step(quote_at, "End: Answer")]
    return {
        "id": f"d{number}",
        "question": f"question {number}",
        "split": "train",
        "gold_url": "https://en.wikipedia.org/wiki/Malawi",
        "meta": {"kind": kind},
        "steps": steps,
    }


def test_a_quote_past_the_opening_is_told_from_one_in_it() -> None:
    assert not continuation_data.quotes_past_opening(episode(0, "factoid", OPENING))
    assert continuation_data.quotes_past_opening(episode(1, "factoid", LATER))
    assert continuation_data.quotes_past_opening(episode(2, "factoid", OPENING, find=True))
    kept = continuation_data.on_last_page(episode(3, "factoid", OPENING, find=True))
    assert [s["command"].split()[0] for s in kept["steps"]] == ["Find", "Quote:", "End:"]


@pytest.mark.slow  # starts a process
def test_the_script_draws_each_kind_cut_and_leaves_out_an_earlier_runs_questions(
    tmp_path: Path,
) -> None:
    rows = [episode(i, "factoid", LATER if i % 2 else OPENING) for i in range(8)]
    rows += [episode(8 + i, "unanswerable", OPENING) for i in range(3)]
    demos = tmp_path / "demos.jsonl"
    demos.write_text("".join(json.dumps(r) + "\n" for r in rows))
    earlier = tmp_path / "earlier.jsonl"
    earlier.write_text(json.dumps(rows[1]) + "\n")  # a later-quote factoid trained on before
    out = tmp_path / "out.jsonl"
    options = ["--declines", "2", "--declines-whole", "--on-page", "4", "--later-quotes", "3"]
    subprocess.run(
        [sys.executable, str(SCRIPT), str(demos), str(out), *options, "--exclude", str(earlier)],
        check=True,
        capture_output=True,
    )
    kept = [json.loads(line) for line in out.read_text().splitlines()]
    declines = [r for r in kept if r["meta"]["kind"] == "unanswerable"]
    on_page = [r for r in kept if r["meta"]["kind"] == "factoid"]
    assert len(declines) == 2 and all(len(r["steps"]) == 3 for r in declines)
    assert len(on_page) == 4 and "question 1" not in {r["question"] for r in on_page}
    assert sum(continuation_data.quotes_past_opening(r) for r in on_page) == 3
    assert all(r["steps"][0]["command"].startswith("Quote:") for r in on_page)


@pytest.mark.slow  # starts a process
def test_counts_that_cannot_be_drawn_are_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    demos = tmp_path / "demos.jsonl"
    demos.write_text(json.dumps(episode(0, "factoid", LATER)) + "\n")
    out = tmp_path / "out.jsonl"
    for options in (["--on-page", "1", "--later-quotes", "2"], ["--declines", "-1"]):
        run = subprocess.run(
            [sys.executable, str(SCRIPT), str(demos), str(out), *options],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 2 and "--later-quotes at most --on-page" in run.stderr
    assert not out.exists()
