"""Best-of-n measured (`webgpt eval --best-of N`): the unbiased estimator of Appendix I
and the paired comparison of two policies against hand-computed figures, then end to end
with the tiny reward model."""

import json
import math
import statistics
from pathlib import Path

import pytest

from tests.agent.fake_policy import Script, fake_policy_app
from tests.learning.test_record import webgpt
from tests.servers import serve
from webgpt.evals.best_of_n import (
    BestOfSamples,
    Sample,
    best_of_n,
    best_of_table,
    gain_over_one,
    paired_difference,
)


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


def test_two_policies_are_compared_question_by_question() -> None:
    questions = ["q1", "q2", "q3"]
    base = BestOfSamples(
        "bc", questions, [[0.0, 1.0], [0.0, 0.0], [-math.inf, 2.0]], [[False, True]] * 3
    )
    other = BestOfSamples("rl", questions, [[1.0, 1.0], [0.5, 0.5], [2.0, 4.0]], [[True, True]] * 3)
    one, two = paired_difference(base, other)
    # best of 1, per question (rl - bc): reward 1 - 0.5, 0.5 - 0, 3 - 2 (no answer at
    # bc's floor 2.0); correct 1 - 0.5 on every question.
    assert one.reward == pytest.approx((0.5 + 0.5 + 1.0) / 3)
    assert one.reward_se == pytest.approx(statistics.stdev([0.5, 0.5, 1.0]) / math.sqrt(3))
    assert (one.correct, one.correct_se) == pytest.approx((0.5, 0.0))
    # best of 2: bc picks its reward-1 / tied / reward-2 answer, rl its best
    assert two.reward == pytest.approx(((1 - 1) + (0.5 - 0) + (4 - 2)) / 3)
    # bc's tie on q2 picks its correct answer half the time
    assert two.correct == pytest.approx(((1 - 1) + (1 - 0.5) + (1 - 1)) / 3)
    with pytest.raises(ValueError, match="other questions"):
        paired_difference(base, BestOfSamples("x", ["q1"], [[0.0, 1.0]], [[True, True]]))


def test_best_of_n_is_compared_with_one_sample_question_by_question() -> None:
    samples = BestOfSamples(
        "bc", ["q1", "q2", "q3"], [[0.0, 1.0], [0.0, 0.0], [-math.inf, 2.0]],
        [[False, True], [True, False], [False, True]],
    )  # fmt: skip
    one, two = gain_over_one(samples)
    assert (one.reward, one.correct, one.correct_se) == pytest.approx((0.0, 0.0, 0.0))
    # best of 2 minus one sample: q1 picks its right answer (1 - 0.5), q2's tie stays a coin
    # (0.5 - 0.5), q3 picks the one answer, right (1 - 0.5)
    assert two.correct == pytest.approx((0.5 + 0.0 + 0.5) / 3)
    assert two.correct_se == pytest.approx(statistics.stdev([0.5, 0.0, 0.5]) / math.sqrt(3))
    # rewards: q1 1 - 0.5, q2 0, q3 2 - (2 + 2) / 2 (no answer counts at the floor, 2.0)
    assert two.reward == pytest.approx((0.5 + 0.0 + 0.0) / 3)


def best_of_file(path: Path, *samples: BestOfSamples) -> Path:
    """What `eval --best-of --json-out` keeps of these samples (all that --pool reads)."""
    path.write_text(json.dumps({"samples": {s.policy: s.to_json() for s in samples}}))
    return path


@pytest.mark.slow  # starts a process
def test_eval_pool_reports_questions_evaluated_in_parts_as_one_run(tmp_path: Path) -> None:
    questions = ["q1", "q2", "q3"]
    rewards = {
        "bc": [[0.0, 1.0], [0.0, 0.0], [-math.inf, 2.0]],
        "rl": [[1.0, 1.0], [0.5, 0.5], [2.0, 4.0]],
    }
    correct = {"bc": [[False, True]] * 3, "rl": [[True, True]] * 3}
    whole = {p: BestOfSamples(p, questions, rewards[p], correct[p]) for p in rewards}

    def part(name: str, cut: slice) -> Path:
        samples = [
            BestOfSamples(p, questions[cut], rewards[p][cut], correct[p][cut]) for p in rewards
        ]
        return best_of_file(tmp_path / name, *samples)

    parts = [part("part1.json", slice(0, 2)), part("part2.json", slice(2, 3))]
    out = tmp_path / "pooled.json"
    pooled = webgpt(
        "eval", "--pool", str(parts[0]), "--pool", str(parts[1]), "--json-out", str(out),
        home=tmp_path,
    )  # fmt: skip
    assert pooled.returncode == 0, pooled.stderr
    assert "rl minus bc, paired over 3 questions" in pooled.stdout
    assert "bc: best-of-n minus one sample, paired over 3 questions" in pooled.stdout
    figures = json.loads(out.read_text())
    expected = paired_difference(whole["bc"], whole["rl"])
    assert [r["reward"] for r in figures["paired"]["rl"]["rows"]] == pytest.approx(
        [r.reward for r in expected]
    )
    assert [r["correct_se"] for r in figures["paired"]["rl"]["rows"]] == pytest.approx(
        [r.correct_se for r in expected]
    )
    assert figures["samples"]["bc"][2]["rewards"] == [None, 2.0]  # no answer stays no answer
    gain = gain_over_one(whole["rl"])
    assert [r["correct"] for r in figures["gain_over_one"]["rl"]] == pytest.approx(
        [r.correct for r in gain]
    )
    two = best_of_table(rewards["bc"], correct["bc"])[1]
    assert figures["best_of"]["bc"][1]["correct"] == pytest.approx(two.correct)


@pytest.mark.slow  # starts a process
def test_eval_pool_refuses_what_would_not_be_one_run(tmp_path: Path) -> None:
    bc = BestOfSamples("bc", ["q1"], [[0.0, 1.0]], [[False, True]])
    rl = BestOfSamples("rl", ["q1"], [[1.0, 1.0]], [[True, True]])
    part = best_of_file(tmp_path / "part.json", bc, rl)
    other_policies = best_of_file(tmp_path / "other.json", bc)
    not_samples = tmp_path / "figures.json"
    not_samples.write_text(json.dumps([{"policy": "bc", "correct": 0.5}]))

    def pool(*args: str) -> tuple[int, str]:
        result = webgpt("eval", *args, home=tmp_path)
        return result.returncode, result.stderr

    code, error = pool("--pool", str(part), "--pool", str(part))
    assert code == 1 and "1 questions sampled twice, e.g. 'q1'" in error
    code, error = pool("--pool", str(part), "--pool", str(other_policies))
    assert code == 1 and "policies ['bc'], the first file's are ['bc', 'rl']" in error
    code, error = pool("--pool", str(not_samples))
    assert code == 1 and "not a --best-of --json-out file" in error
    broken_row = tmp_path / "broken.json"
    row = {"question": "q2", "rewards": ["high", 1.0], "correct": [True, False]}
    broken_row.write_text(json.dumps({"samples": {"bc": [row], "rl": [row]}}))
    code, error = pool("--pool", str(part), "--pool", str(broken_row))
    assert code == 1 and "broken.json" in error and "rewards are numbers or null" in error
    code, error = pool("--pool", str(tmp_path / "missing.json"))
    assert code == 1 and "missing.json" in error
    code, error = pool("--pool", str(part), "--questions", str(part))
    assert code == 1 and "no --questions or --best-of" in error
    code, error = pool("--split", "dev")
    assert code == 1 and "eval needs --questions (or --pool, or --sealed)" in error


def crow_question(tmp_path: Path, skies: list[str]) -> tuple[Path, Script]:
    """One question whose gold answer is blue, and a scripted policy answering with these
    sky colours in turn (the tiny reward model prefers blue, the one correct answer)."""
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps({"question": "crow corvus", "gold_answers": ["blue"]}) + "\n")
    script = Script(oracle_quote="Crows are birds of the genus Corvus.")
    script.answers = [f"in story 7 the sky is {sky} [1]" for sky in skies]
    return questions, script


@pytest.mark.slow  # starts a process
def test_eval_best_of_samples_once_and_reports_every_n(
    reward_checkpoint: Path, offline_store: Path, tmp_path: Path
) -> None:
    questions, script = crow_question(tmp_path, ["green", "blue", "red"])
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


@pytest.mark.slow  # starts a process
def test_eval_best_of_never_counts_a_decline_as_correct(
    reward_checkpoint: Path, offline_store: Path, tmp_path: Path
) -> None:
    questions, script = crow_question(tmp_path, ["blue"])
    # the decline names the gold answer, yet declines: only the second answer is right
    script.answers = ["The pages I found do not say whether the sky is blue.", *script.answers]
    with serve(fake_policy_app(script)) as base:
        result = webgpt(
            "eval", "--questions", str(questions), "--policy", f"bc={base}/v1,scripted",
            "--best-of", "2", "--temperature", "0.9", "--reward-model", str(reward_checkpoint),
            "--store", str(offline_store), "--json-out", str(tmp_path / "best-of.json"),
            home=tmp_path,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    samples = json.loads((tmp_path / "best-of.json").read_text())["samples"]["bc"][0]
    assert all(math.isfinite(r) for r in samples["rewards"])  # both episodes answered
    assert sorted(samples["correct"]) == [False, True]  # in either order: sampled at once


@pytest.mark.slow  # starts a process
def test_eval_best_of_pairs_a_second_policy_with_the_first_and_keeps_the_samples(
    reward_checkpoint: Path, offline_store: Path, tmp_path: Path
) -> None:
    questions, script = crow_question(tmp_path, ["green", "blue", "red", "blue", "blue", "red"])
    with serve(fake_policy_app(script)) as base:
        result = webgpt(
            "eval", "--questions", str(questions), "--policy", f"bc={base}/v1,scripted",
            "--policy", f"rl={base}/v1,scripted", "--best-of", "3", "--temperature", "0.9",
            "--reward-model", str(reward_checkpoint), "--store", str(offline_store),
            "--json-out", str(tmp_path / "best-of.json"), home=tmp_path,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    figures = json.loads((tmp_path / "best-of.json").read_text())
    [sampled] = figures["samples"]["rl"]
    # The three episodes run at once, so which one got which scripted answer varies.
    assert sampled["question"] == "crow corvus"
    assert sorted(sampled["correct"]) == [False, True, True]
    wrong = sampled["correct"].index(False)  # "red", which the tiny reward model ranks last
    assert sampled["rewards"][wrong] == min(sampled["rewards"])
    assert figures["paired"]["rl"]["against"] == "bc"
    one, _, three = figures["paired"]["rl"]["rows"]
    assert one["correct"] == pytest.approx(2 / 3 - 1 / 3)
    assert three["correct"] == pytest.approx(0.0)  # both pick a "blue" answer out of three
    assert one["correct_se"] is None  # one question: no standard error
    assert "rl minus bc, paired over 1 questions" in result.stdout


@pytest.mark.slow  # starts a process
def test_eval_best_of_refuses_two_policies_with_one_label(tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps({"question": "q", "gold_answers": ["a"]}) + "\n")
    result = webgpt(
        "eval", "--questions", str(questions), "--policy", "x=http://127.0.0.1:9/v1,a",
        "--policy", "x=http://127.0.0.1:9/v1,b", "--best-of", "2", "--temperature", "0.9",
        "--reward-model", str(tmp_path), home=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1 and "distinct labels" in result.stderr


@pytest.mark.slow  # starts a process
def test_eval_best_of_needs_sampling(tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps({"question": "q", "gold_answers": ["a"]}) + "\n")
    base = ["eval", "--questions", str(questions), "--policy", "http://127.0.0.1:9/v1,x"]
    greedy = webgpt(*base, "--best-of", "4", "--reward-model", str(tmp_path), home=tmp_path)
    assert greedy.returncode == 1 and "--temperature > 0" in greedy.stderr
    # refused before the default reward model is prepared (which downloads the base)
    greedy_default = webgpt(*base, "--best-of", "4", home=tmp_path)
    assert greedy_default.returncode == 1 and "--temperature > 0" in greedy_default.stderr
    assert not (tmp_path / "registry").exists()
    plot_alone = webgpt(*base, "--plot", str(tmp_path / "p.png"), home=tmp_path)
    assert plot_alone.returncode == 1 and "give --best-of N too" in plot_alone.stderr
