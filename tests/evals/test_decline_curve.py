"""Every decline threshold's outcome from one run at threshold 1, and the threshold chosen."""

import json
from pathlib import Path

import pytest

from tests.learning.test_record import webgpt
from webgpt.agent.errors import DataError
from webgpt.evals.decline_curve import chosen_threshold, decline_curve


def outcome(kind: str, probability: float | None, correct: bool = False, declined: bool = False):  # type: ignore[no-untyped-def]
    return {
        "kind": kind,
        "decline_probability": probability,
        "correct": correct,
        "declined": declined,
    }


# Ten answerable questions (two factoids right) and two unanswerable ones.
OUTCOMES = [
    outcome("unanswerable", 0.2),
    outcome("unanswerable", 0.004),
    outcome("factoid", 0.06, correct=True),  # declined from 0.05 down: a right answer lost
    outcome("factoid", 0.001, correct=True),
    outcome("factoid", 0.003),
    outcome("factoid", None),  # no answer (no quote): nothing to decline
    *[outcome("longform", 0.0001)] * 5,
    outcome("longform", 0.0001, declined=True),  # a decline written anyway stays one
]


def test_each_threshold_declines_what_reaches_it_and_keeps_the_rest() -> None:
    points = {p.threshold: p for p in decline_curve(OUTCOMES, (0.5, 0.1, 0.05, 0.003, 0.0001))}
    assert (points[0.5].unanswerable_declined, points[0.5].answerable_declined) == (0, 1)
    assert (points[0.1].unanswerable_declined, points[0.1].answerable_declined) == (1, 1)
    assert points[0.1].factoids_right == 2 and points[0.05].factoids_right == 1
    assert (points[0.003].unanswerable_declined, points[0.003].answerable_declined) == (2, 3)
    assert points[0.0001].answerable_declined == 9 and points[0.0001].factoids_right == 0
    assert (points[0.5].unanswerable, points[0.5].answerable, points[0.5].factoids) == (2, 10, 4)


def test_the_lowest_threshold_within_the_bound_on_answerable_declines_is_chosen() -> None:
    # 0.1 declines 1 of 10 answerable (10%, allowed); 0.05 declines 2 (20%)
    chosen = chosen_threshold(decline_curve(OUTCOMES, (0.5, 0.1, 0.05)))
    assert chosen is not None and chosen.threshold == 0.1
    assert chosen_threshold(decline_curve(OUTCOMES, (0.003, 0.001))) is None
    with pytest.raises(DataError, match="--decline-threshold 1"):
        decline_curve([outcome("factoid", None)])


@pytest.mark.slow  # starts a process
def test_the_cli_prints_each_curve_and_refuses_a_file_without_probabilities(
    tmp_path: Path,
) -> None:
    recorded = tmp_path / "recorded.json"
    recorded.write_text(json.dumps([{"figures": {"policy": "v13"}, "outcomes": OUTCOMES}]))
    result = webgpt("eval", "--decline-curve", str(recorded), home=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "recorded.json: v13"
    [chosen] = [line for line in lines if line.endswith("<- chosen")]
    assert chosen.split()[:2] == ["0.1", "1/2"]
    plain = tmp_path / "plain.json"
    plain.write_text(
        json.dumps([{"figures": {"policy": "v5"}, "outcomes": [outcome("factoid", None)]}])
    )
    refused = webgpt("eval", "--decline-curve", str(plain), home=tmp_path)
    assert refused.returncode == 1 and "--decline-threshold 1" in refused.stderr
    missing = webgpt("eval", "--decline-curve", str(tmp_path / "none.json"), home=tmp_path)
    assert missing.returncode == 1 and "none.json" in missing.stderr
    both = webgpt(
        "eval", "--decline-curve", str(recorded), "--questions", str(recorded), home=tmp_path
    )
    assert both.returncode == 1 and "earlier runs" in both.stderr
