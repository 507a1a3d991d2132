"""`webgpt eval`'s figures for a scripted policy whose answers are known to be right, wrong
and unfaithful."""

import json
from pathlib import Path

import pytest

from tests.agent.fake_policy import Script, fake_policy_app
from tests.conftest import LEARNING_ARTICLES
from tests.learning.test_record import webgpt
from tests.servers import serve
from webgpt.agent.episode import EpisodeConfig
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.browser.corpus import build_corpus, wikipedia_pages
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web, WebOptions
from webgpt.evals.evaluate import evaluate_policy, format_table
from webgpt.evals.questions import Question

QUESTIONS = [
    Question(question="Who painted the Mona Lisa?", gold_answers=["Leonardo da Vinci"]),
    Question(question="When was Ada Lovelace born?", gold_answers=["1815"]),
    Question(question="What is a crow?", gold_answers=["bird"]),
]
MONA = "The Mona Lisa is a half-length portrait painting by the Italian artist Leonardo da Vinci."
# Right; wrong (with one invalid command); right words but the page changed since (unfaithful).
COMMANDS = [
    ["Search Mona Lisa", "Clicked on link 0", f"Quote: {MONA}", "End: Answer"],
    [
        "Search Ada Lovelace",
        "look around",
        "Clicked on link 0",
        "Quote: Augusta Ada King, Countess of Lovelace",
        "End: Answer",
    ],
    [
        "Search Crow",
        "Clicked on link 0",
        "Quote: Crows are birds of the genus Corvus.",
        "End: Answer",
    ],
]
ANSWERS = ["It was painted by Leonardo da Vinci [1].", "She was born in 1900 [1].", "A bird [1]."]


def changed_web(folder: Path) -> Path:
    """The same pages, except that the Crow page has changed since it was quoted."""
    articles = {**LEARNING_ARTICLES, "Crow": {**LEARNING_ARTICLES["Crow"], "extract": "Gone."}}
    summaries = folder / "changed.json"
    summaries.write_text(json.dumps(articles))
    build_corpus(folder / "changed.sqlite", [("wikipedia", wikipedia_pages(summaries))])
    return folder / "changed.sqlite"


async def test_eval_figures_for_right_wrong_and_unfaithful_answers(
    learning_web: Web, tmp_path: Path
) -> None:
    script = Script(commands=[c for episode in COMMANDS for c in episode], answers=list(ANSWERS))
    verify = Web(
        WebOptions(offline_store=changed_web(tmp_path), offline_only=True, js_mode="never")
    )
    with serve(fake_policy_app(script)) as base:
        policy = OpenAIPolicy(base + "/v1", "scripted", backoff_s=0.01)
        report = await evaluate_policy(
            "scripted",
            policy,
            learning_web,
            QUESTIONS,
            episode=EpisodeConfig(guided=False),
            session=SessionConfig(max_actions=20),
            verify_web=verify,
        )
        await policy.aclose()
    await verify.aclose()
    figures = report.figures()
    assert [o.correct for o in report.outcomes] == [True, False, True]
    assert [o.faithful for o in report.outcomes] == [True, True, False]
    assert figures["questions"] == 3
    assert figures["correct"] == round(2 / 3, 4)
    assert figures["cited"] == 1.0
    assert figures["faithful"] == round(2 / 3, 4)
    assert figures["invalid_action_rate"] == round(1 / 13, 4)
    assert figures["actions_median"] == 4 and figures["actions_mean"] == round(13 / 3, 2)
    table = format_table([report])
    assert "66.7%" in table and "scripted" in table.splitlines()[2]


@pytest.mark.slow  # starts a process
def test_eval_cli_prints_a_table_and_writes_json(learning_store: Path, tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        "".join(q.model_copy(update={"split": "dev"}).model_dump_json() + "\n" for q in QUESTIONS)
    )
    script = Script(commands=[c for episode in COMMANDS for c in episode], answers=list(ANSWERS))
    with serve(fake_policy_app(script)) as base:
        result = webgpt(
            "eval", "--questions", str(questions), "--split", "dev",
            "--policy", f"fake={base}/v1,scripted", "--no-guided", "--store", str(learning_store),
            "--json-out", str(tmp_path / "out.json"), home=tmp_path,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].split()[:4] == ["policy", "n", "correct", "cited"]
    assert "3/3" in result.stderr  # the progress bar
    [written] = json.loads((tmp_path / "out.json").read_text())
    assert written["figures"]["policy"] == "fake"
    assert written["figures"]["correct"] == round(2 / 3, 4)
    assert len(written["outcomes"]) == 3


@pytest.mark.slow  # starts a process
def test_eval_refuses_an_unknown_policy_target(tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(QUESTIONS[0].model_dump_json() + "\n")
    result = webgpt(
        "eval", "--questions", str(questions), "--policy", str(tmp_path / "missing"), home=tmp_path
    )
    assert result.returncode == 1
    assert "no checkpoint folder" in result.stderr
