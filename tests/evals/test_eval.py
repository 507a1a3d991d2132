"""`webgpt eval`'s figures for a scripted policy whose answers are known to be right, wrong
and unfaithful."""

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.agent.fake_policy import Script, fake_policy_app
from tests.conftest import LEARNING_ARTICLES
from tests.learning.test_record import webgpt
from tests.servers import serve
from webgpt.agent.episode import EpisodeConfig
from webgpt.agent.errors import DataError
from webgpt.agent.followups import Turn
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.trace import Reference
from webgpt.browser.corpus import build_corpus, wikipedia_pages
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web, WebOptions
from webgpt.evals.evaluate import PolicyReport, evaluate_policy, format_table, sentence_support
from webgpt.evals.questions import Question, load_questions, questions_digest

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


async def scripted_report(
    web: Web, questions: list[Question], script: Script, **options: Any
) -> PolicyReport:
    """evaluate_policy of the policy the script plays, unguided, 20 actions."""
    with serve(fake_policy_app(script)) as base:
        policy = OpenAIPolicy(base + "/v1", "scripted", backoff_s=0.01)
        try:
            return await evaluate_policy(
                "scripted",
                policy,
                web,
                questions,
                episode=EpisodeConfig(guided=False),
                session=SessionConfig(max_actions=20),
                **options,
            )
        finally:
            await policy.aclose()


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
    report = await scripted_report(learning_web, QUESTIONS, script, verify_web=verify)
    await verify.aclose()
    figures = report.figures()
    assert [o.correct for o in report.outcomes] == [True, False, True]
    assert [o.faithful for o in report.outcomes] == [True, True, False]
    assert [o.commands for o in report.outcomes] == COMMANDS  # an invalid one too
    assert figures["questions"] == 3
    assert figures["correct"] == round(2 / 3, 4)
    assert figures["cited"] == 1.0
    assert figures["faithful"] == round(2 / 3, 4)
    assert figures["invalid_action_rate"] == round(1 / 13, 4)
    assert figures["actions_median"] == 4 and figures["actions_mean"] == round(13 / 3, 2)
    # one sentence each; "born in 1900" stands in no word of its quote
    assert [o.checked_sentences for o in report.outcomes] == [1, 1, 1]
    assert [o.supported_sentences for o in report.outcomes][:2] == [1, 0]
    supported = sum(o.supported_sentences for o in report.outcomes)
    assert figures["support"] == round(supported / 3, 4)
    table = format_table([report])
    assert "66.7%" in table and "scripted" in table.splitlines()[2]


def test_support_checks_every_sentence_and_fails_one_citing_nothing() -> None:
    """A sentence is supported when its content words stand in the quotes it cites; one
    after the last citation cites nothing, so it is checked and fails."""
    mona = [Reference(n=1, title="Mona Lisa", url="u", domain="d", extract=MONA)]
    assert sentence_support("It was painted by Leonardo da Vinci [1].", mona) == (1, 1)
    assert sentence_support("It was painted in Florence [1].", mona) == (0, 1)
    two_uncited = "It was painted by Leonardo da Vinci [1]. It hangs in Paris. Really!"
    assert sentence_support(two_uncited, mona) == (1, 3)
    assert sentence_support("Leonardo painted it. He was Italian [1].", mona) == (1, 1)
    assert sentence_support("It was painted by Leonardo [1] [7].", mona) == (1, 1)
    assert sentence_support("It was painted by Leonardo [7].", mona) == (0, 0)  # no quote 7
    assert sentence_support("", mona) == (0, 0)
    assert sentence_support("Leonardo painted it.", mona) == (0, 1)


async def test_a_follow_up_is_browsed_made_standalone_or_as_typed(learning_web: Web) -> None:
    """A question with a history is browsed as the service browses it, its pronoun replaced
    from the conversation (agent.followups); with follow_ups off, as typed."""
    follow_up = Question.model_validate(
        {
            "question": "When was she born?",
            "gold_answers": ["1815"],
            "history": [
                {"role": "user", "content": "Who was the first computer programmer?"},
                {"role": "assistant", "content": "Ada Lovelace was the first programmer [1]."},
            ],
        }
    )
    asked = {}
    for follow_ups in (True, False):
        script = Script(commands=["End: Nonsense"])
        report = await scripted_report(learning_web, [follow_up], script, follow_ups=follow_ups)
        [outcome] = report.outcomes
        assert outcome.question == "When was she born?"
        asked[follow_ups] = outcome.asked
        assert f"♦Question\n{outcome.asked or outcome.question}\n" in script.requests[0]["prompt"]
    assert asked == {True: "When was Ada Lovelace born?", False: None}


def test_a_broken_conversation_is_refused_with_its_line(tmp_path: Path) -> None:
    """A history that is not a list of user and assistant messages stops the load at the
    line that holds it, and the file is left as it was."""
    good = {"question": "When was she born?", "gold_answers": ["1815"], "split": "dev"}
    for history in (
        [{"role": "bot", "content": "Ada Lovelace [1]."}],  # no such role
        [{"role": "user"}],  # no content
        "Who was Ada Lovelace?",  # not a list of messages
    ):
        path = tmp_path / "follow-ups.jsonl"
        text = json.dumps(good) + "\n" + json.dumps({**good, "history": history}) + "\n"
        path.write_text(text)
        with pytest.raises(DataError, match=f"{path}:2: not a question"):
            load_questions(path)
        assert path.read_text() == text


def test_a_follow_up_s_conversation_is_part_of_the_questions_digest() -> None:
    """Two conversations before the same words are two questions to the promotion gate;
    a question with none digests as it did before questions could have one (the figures a
    registry recorded then still compare)."""
    plain = Question(question="When was she born?", gold_answers=["1815"])
    conversation = [Turn("user", "Who was Ada Lovelace?"), Turn("assistant", "A writer [1].")]
    follow_up = plain.model_copy(update={"history": conversation})
    assert questions_digest([plain]) != questions_digest([follow_up])
    before = hashlib.sha256(plain.model_dump_json(exclude={"history"}).encode() + b"\n").hexdigest()
    assert questions_digest([plain]) == before


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
