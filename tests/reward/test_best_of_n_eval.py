"""Best-of-n measured (`webgpt eval --best-of N`): the unbiased estimator of Appendix I
against hand-computed figures, then end to end with the tiny reward model."""

import json
import math
from pathlib import Path

import pytest

from agent.best_of_n import Sample, best_of_n, best_of_table
from tests.agent.fake_policy import Script, fake_policy_app
from tests.agent.test_record import webgpt
from tests.servers import serve


def test_the_estimator_matches_a_hand_computed_example() -> None:
    # Rewards 0.1, 0.5, 0.3; only the 0.5 answer is correct. Best of 2 over the three
    # pairs: {0.1, 0.5} -> correct, {0.1, 0.3} -> not, {0.5, 0.3} -> correct: 2/3.
    samples = [Sample(0.1, 0.0), Sample(0.5, 1.0), Sample(0.3, 0.0)]
    assert [best_of_n(samples, n) for n in (1, 2, 3)] == pytest.approx([1 / 3, 2 / 3, 1.0])
    # Four samples, values 10, 20, 30, 40 by rising reward; best of 2 over the 6 pairs:
    # (20 + 30 + 40 + 30 + 40 + 40) / 6 = 200 / 6.
    four = [Sample(r, v) for r, v in ((4, 40), (1, 10), (3, 30), (2, 20))]
    assert best_of_n(four, 2) == pytest.approx(200 / 6)
    assert best_of_n(four, 3) == pytest.approx((30 + 40 + 40 + 40) / 4)
    # A tie: the pick among tied rewards is random, so their values are averaged.
    assert best_of_n([Sample(1.0, 0.0), Sample(1.0, 1.0)], 2) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="between 1 and 3"):
        best_of_n(samples, 4)


def test_the_table_averages_questions_and_ranks_answerless_episodes_last() -> None:
    rows = best_of_table(
        rewards=[[0.1, 0.5, 0.3], [-math.inf, 2.0, 1.0]],
        correct=[[False, True, False], [False, False, True]],
    )
    assert [row.n for row in rows] == [1, 2, 3]
    assert rows[0].correct == pytest.approx((1 / 3 + 1 / 3) / 2)
    assert rows[2].correct == pytest.approx((1.0 + 0.0) / 2)  # reward picks the wrong one
    # No answer counts as the question's lowest answered reward (1.0) in the mean reward.
    assert rows[0].reward == pytest.approx((0.3 + (1.0 + 2.0 + 1.0) / 3) / 2)
    assert rows[2].reward == pytest.approx((0.5 + 2.0) / 2)


def test_eval_best_of_samples_once_and_reports_every_n(
    reward_checkpoint: Path, offline_store: Path, tmp_path: Path
) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps({"question": "crow corvus", "gold_answers": ["blue"]}) + "\n")
    script = Script(oracle_quote="Crows are birds of the genus Corvus.")
    # The tiny reward model prefers the sky being blue, the one correct answer here.
    script.answers = [f"in story 7 the sky is {c} [1]" for c in ("green", "blue", "red")]
    with serve(fake_policy_app(script)) as base:
        result = webgpt(
            "eval", "--questions", str(questions), "--policy", f"bc={base}/v1,scripted",
            "--best-of", "3", "--temperature", "0.9", "--reward-model", str(reward_checkpoint),
            "--store", str(offline_store), "--plot", str(tmp_path / "best-of.png"),
            "--json-out", str(tmp_path / "best-of.json"), home=tmp_path,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    answer_requests = [r for r in script.requests if "♦Question\n" not in r["prompt"]]
    assert len(answer_requests) == 3  # sampled once; every n is estimated from these three
    rows = json.loads((tmp_path / "best-of.json").read_text())["best_of"]["bc"]
    assert [row["n"] for row in rows] == [1, 2, 3]
    assert [row["correct"] for row in rows] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert rows[0]["reward"] < rows[1]["reward"] < rows[2]["reward"]
    assert "best-of-n for bc" in result.stdout and "100.0%" in result.stdout
    assert (tmp_path / "best-of.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_eval_best_of_needs_a_reward_model_and_sampling(tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps({"question": "q", "gold_answers": ["a"]}) + "\n")
    base = ["eval", "--questions", str(questions), "--policy", "http://127.0.0.1:9/v1,x"]
    no_model = webgpt(*base, "--best-of", "4", "--temperature", "0.9", home=tmp_path)
    assert no_model.returncode == 1 and "needs --reward-model" in no_model.stderr
    greedy = webgpt(*base, "--best-of", "4", "--reward-model", str(tmp_path), home=tmp_path)
    assert greedy.returncode == 1 and "--temperature > 0" in greedy.stderr
    plot_alone = webgpt(*base, "--plot", str(tmp_path / "p.png"), home=tmp_path)
    assert plot_alone.returncode == 1 and "give --best-of N too" in plot_alone.stderr
