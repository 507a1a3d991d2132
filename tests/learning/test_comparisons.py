"""Synthetic comparisons (`webgpt comparisons generate`): answers labelled by rule, every
pair a row that the reward model's loader reads."""

import itertools
import json
from pathlib import Path

import pytest

from tests.agent.fake_policy import Script, fake_policy_app
from tests.learning.test_record import webgpt
from tests.servers import serve
from webgpt.agent.trace import Reference
from webgpt.browser.observation import answer_prompt
from webgpt.evals.questions import Question
from webgpt.learning.comparisons import JudgedAnswer, comparison_rows
from webgpt.learning.demonstrations import Demonstration, DemoQuote, DemoStep
from webgpt.reward.data import load_comparisons

MONA = "The Mona Lisa is a half-length portrait painting by the Italian artist Leonardo da Vinci."
QUESTION = Question(
    question="Who painted the Mona Lisa?", gold_answers=["Leonardo da Vinci"], split="train"
)
QUOTE = Reference(
    n=1, title="Mona Lisa", url="https://en.wikipedia.org/wiki/Mona_Lisa",
    domain="en.wikipedia.org", extract=MONA,
)  # fmt: skip


def judged(answer: str, correct: bool, faithful: bool) -> JudgedAnswer:
    return JudgedAnswer(answer, (QUOTE,), correct=correct, faithful=faithful)


def test_the_rule_prefers_correct_and_faithful_and_ties_the_rest(tmp_path: Path) -> None:
    good = judged("Leonardo da Vinci painted it [1].", correct=True, faithful=True)
    wrong = judged("Raphael painted it [1].", correct=False, faithful=True)
    unfaithful = judged("Leonardo da Vinci, as [1] says.", correct=True, faithful=False)
    also_good = judged("Leonardo da Vinci [1].", correct=True, faithful=True)
    rows = comparison_rows(QUESTION, [good, wrong, unfaithful, also_good, good])
    pairs = {(row["a"]["answer"], row["b"]["answer"]): row["preference"] for row in rows}
    assert pairs == {
        (good.answer, wrong.answer): "a",
        (good.answer, unfaithful.answer): "a",
        (good.answer, also_good.answer): "tie",  # both good
        (wrong.answer, unfaithful.answer): "tie",  # neither
        (wrong.answer, also_good.answer): "b",
        (unfaithful.answer, also_good.answer): "b",
    }  # the two identical answers make no pair, and no pair is written twice
    assert len(rows) == 6
    assert {row["source"] for row in rows} == {"synthetic"}
    assert rows[1]["labels"] == {
        "a": {"correct": True, "faithful": True},
        "b": {"correct": True, "faithful": False},
    }
    assert rows[0]["a"]["quotes"] == [
        {"title": "Mona Lisa", "url": QUOTE.url, "domain": "en.wikipedia.org", "extract": MONA}
    ]
    file = tmp_path / "comparisons.jsonl"
    file.write_text("".join(json.dumps(row) + "\n" for row in rows))
    comparisons, report = load_comparisons([file])
    assert report.used == 6 and not report.skipped
    assert [c.label for c in comparisons] == [1.0, 1.0, 0.5, 0.5, 0.0, 0.0]
    assert comparisons[0].text_a.endswith(good.answer) and MONA in comparisons[0].text_a


@pytest.mark.slow  # starts a process
def test_generate_samples_real_episodes_and_writes_what_train_rm_reads(
    learning_store: Path, tmp_path: Path
) -> None:
    questions = tmp_path / "questions.jsonl"
    dev = QUESTION.model_copy(update={"split": "dev"})
    questions.write_text(QUESTION.model_dump_json() + "\n" + dev.model_dump_json() + "\n")
    script = Script(
        oracle_quote=MONA,  # each episode searches, opens the first result and quotes it
        answers=[
            "Leonardo da Vinci painted it [1].",  # good
            "Raphael painted it [1].",  # wrong
            "Leonardo da Vinci painted it.",  # cites nothing
        ],
    )
    out = tmp_path / "data" / "comparisons.jsonl"
    with serve(fake_policy_app(script)) as base:
        result = webgpt(
            "comparisons", "generate", "--questions", str(questions),
            "--policy", f"fake={base}/v1,scripted", "--samples", "3",
            "--store", str(learning_store), "--out", str(out), home=tmp_path,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "1 questions, 3 answers (33% good), 3 comparisons (2 preferences, 1 ties)" in (
        result.stderr
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3 and not out.with_name("comparisons.jsonl.partial").exists()
    assert {row["split"] for row in rows} == {"train"}  # the dev question was not used
    preferred = sorted(
        row[row["preference"]]["answer"] for row in rows if row["preference"] != "tie"
    )
    assert preferred == ["Leonardo da Vinci painted it [1]."] * 2
    [tie] = [row for row in rows if row["preference"] == "tie"]
    assert {tie["a"]["answer"], tie["b"]["answer"]} == {
        "Raphael painted it [1].",
        "Leonardo da Vinci painted it.",
    }
    for row in rows:  # each episode really browsed: its quote came from the page
        for side in ("a", "b"):
            assert row[side]["quotes"][0]["extract"] == MONA
            assert row[side]["quotes"][0]["title"] == "Mona Lisa"
    assert load_comparisons([out])[1].used == 3


def generate_answer_only(
    answers: list[str], learning_store: Path, tmp_path: Path
) -> tuple[Script, Path, str]:
    """`comparisons generate --answer-only` on QUESTION, with one sample per answer scripted
    (the browsing episode's answer first): the script, the comparisons file and stderr."""
    questions = tmp_path / "questions.jsonl"
    questions.write_text(QUESTION.model_dump_json() + "\n")
    script = Script(oracle_quote=MONA, answers=list(answers))
    out = tmp_path / "comparisons.jsonl"
    with serve(fake_policy_app(script)) as base:
        result = webgpt(
            "comparisons", "generate", "--questions", str(questions), "--answer-only",
            "--policy", f"fake={base}/v1,scripted", "--samples", str(len(answers)),
            "--store", str(learning_store), "--out", str(out), home=tmp_path,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return script, out, result.stderr


def test_generate_answer_only_writes_answers_from_one_browse_s_quotes(
    learning_store: Path, tmp_path: Path
) -> None:
    answers = ["Leonardo da Vinci [1].", "Raphael [1].", "Titian [1]."]
    script, out, stderr = generate_answer_only(answers, learning_store, tmp_path)
    assert "1 questions, 3 answers (33% good), 3 comparisons (2 preferences, 1 ties)" in stderr
    # one browsing episode (its answer the first sample), then one request for two more
    browsing = [r for r in script.requests if r["prompt"].endswith("♦Next action\n")]
    answering = [r for r in script.requests if not r["prompt"].endswith("♦Next action\n")]
    assert [r["prompt"].split("♦Question\n", 1)[1].split("\n", 1)[0] for r in browsing] == [
        QUESTION.question
    ] * len(browsing)
    assert [r.get("n", 1) for r in answering] == [1, 2]
    assert len({r["prompt"] for r in answering}) == 1  # both from the same quotes
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {frozenset((r["a"]["answer"], r["b"]["answer"])) for r in rows} == {
        frozenset(pair) for pair in itertools.combinations(answers, 2)
    }
    preferred = sorted(r[r["preference"]]["answer"] for r in rows if r["preference"] != "tie")
    assert preferred == [answers[0]] * 2
    assert all(r["a"]["quotes"] == r["b"]["quotes"] for r in rows)
    assert load_comparisons([out])[1].used == 3


def test_answer_only_samples_after_a_decline_may_cite_the_browse_s_quotes(
    learning_store: Path, tmp_path: Path
) -> None:
    decline = "The pages I found do not say who painted the Mona Lisa."
    answers = [decline, "Leonardo da Vinci [1]."]
    script, out, _ = generate_answer_only(answers, learning_store, tmp_path)
    # The declined episode has no references, but its quote is still there to be cited.
    sample = script.requests[-1]  # the one answer sampled after the browse
    assert "\\[1\\]" in sample["structured_outputs"]["regex"]
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row[row["preference"]]["answer"] == "Leonardo da Vinci [1]."
    assert row[row["preference"]]["quotes"][0]["extract"] == MONA


@pytest.mark.slow  # starts a process
def test_generate_from_demonstrations_writes_answers_from_their_quotes_without_browsing(
    learning_store: Path, tmp_path: Path
) -> None:
    quote = DemoQuote(title="Mona Lisa", url=QUOTE.url, domain=QUOTE.domain, extract=MONA)
    prompt = answer_prompt(QUESTION.question, [quote.collected()])
    steps = [DemoStep(observation="♦Question\nWho painted the Mona Lisa?", command="End: Answer")]
    quoted = Demonstration(
        id="quoted", question=QUESTION.question, source="scripted", steps=steps,
        quotes=[quote], answer_prompt=prompt, answer="Leonardo da Vinci [1].",
        gold_answers=QUESTION.gold_answers, split="train",
    )  # fmt: skip
    unquoted = Demonstration(
        id="unquoted", question="Who?", source="scripted", steps=steps, gold_answers=["x"],
        split="train",
    )  # fmt: skip
    dev = quoted.model_copy(update={"id": "dev", "split": "dev"})
    demos = tmp_path / "demos.jsonl"
    demos.write_text("".join(d.to_json() + "\n" for d in (quoted, unquoted, dev)))
    script = Script(answers=["Leonardo da Vinci [1].", "Raphael [1].", "Titian [1] [7]."])
    out = tmp_path / "comparisons.jsonl"
    with serve(fake_policy_app(script)) as base:
        result = webgpt(
            "comparisons", "generate", "--quotes-from", str(demos), "--samples", "3",
            "--policy", f"fake={base}/v1,scripted", "--store", str(learning_store),
            "--out", str(out), home=tmp_path,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "1 demonstrations without quotes or gold answers" in result.stderr
    assert "1 questions, 3 answers (33% good), 3 comparisons (2 preferences, 1 ties)" in (
        result.stderr
    )
    # no browsing: one request for all three answers, on the demonstration's answer prompt
    assert [(r["prompt"], r.get("n", 1)) for r in script.requests] == [(prompt, 3)]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["split"] for r in rows} == {"train"}
    answers = {r[side]["answer"] for r in rows for side in ("a", "b")}
    assert answers == {"Leonardo da Vinci [1].", "Raphael [1].", "Titian [1]."}  # [7]: no quote
    preferred = sorted(r[r["preference"]]["answer"] for r in rows if r["preference"] != "tie")
    assert preferred == ["Leonardo da Vinci [1]."] * 2
    assert all(r["a"]["quotes"] == r["b"]["quotes"] == [QUOTE.model_dump(exclude={"n", "type"})]
               for r in rows)  # fmt: skip
    assert load_comparisons([out])[1].used == 3


@pytest.mark.slow  # starts a process
def test_generate_refuses_demonstrations_with_no_quotes_and_two_sources(tmp_path: Path) -> None:
    steps = [DemoStep(observation="♦Question\nWho?", command="End: Answer")]
    demos = tmp_path / "demos.jsonl"
    unquoted = Demonstration(id="u", question="Who?", source="scripted", steps=steps, split="train")
    demos.write_text(unquoted.to_json() + "\n")
    common = ["--policy", "http://127.0.0.1:9/v1,x", "--out", str(tmp_path / "c.jsonl")]
    result = webgpt("comparisons", "generate", "--quotes-from", str(demos), *common, home=tmp_path)
    assert result.returncode == 1
    assert "no demonstrations with quotes and gold answers in 'train'" in result.stderr
    both = ["--quotes-from", str(demos), "--questions", str(demos)]
    result = webgpt("comparisons", "generate", *both, *common, home=tmp_path)
    assert result.returncode == 2 and "not allowed with argument" in result.stderr


@pytest.mark.slow  # starts a process
def test_generate_refuses_an_empty_split(tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text(QUESTION.model_dump_json() + "\n")
    result = webgpt(
        "comparisons", "generate", "--questions", str(questions), "--split", "dev",
        "--policy", "http://127.0.0.1:9/v1,x", "--out", str(tmp_path / "c.jsonl"), home=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1
    assert "no questions in split 'dev'" in result.stderr


@pytest.mark.slow  # starts a process
def test_generate_refuses_a_sample_count_out_of_range(tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text(QUESTION.model_dump_json() + "\n")
    for samples in ("0", "65"):
        result = webgpt(
            "comparisons", "generate", "--questions", str(questions), "--samples", samples,
            "--policy", "http://127.0.0.1:9/v1,x", "--out", str(tmp_path / "c.jsonl"),
            home=tmp_path,
        )  # fmt: skip
        assert result.returncode == 1
        assert "--samples must be between 1 and 64" in result.stderr
        assert not (tmp_path / "c.jsonl").exists()
