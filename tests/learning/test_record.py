"""People's demonstrations: `webgpt browse --record` and the service's stored ones, exported
into the same schema, replay exactly on the offline web."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers import COMMAND_ENV
from webgpt.browser.web import Web
from webgpt.learning.demonstrations import load_demonstrations, replay
from webgpt.service.store import FeedbackStore

MONA = "The Mona Lisa is a half-length portrait painting by the Italian artist Leonardo da Vinci."


def webgpt(*args: str, home: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "webgpt.service.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**COMMAND_ENV, "WEBGPT_HOME": str(home)},
        check=False,
    )


@pytest.mark.slow  # starts a process
async def test_browse_record_round_trips(
    learning_store: Path, learning_web: Web, tmp_path: Path
) -> None:
    shutil.copy(learning_store, tmp_path / "offline-web.sqlite")
    record = tmp_path / "mine.jsonl"
    commands = f"Search Mona Lisa\nClicked on link 0\nQuote: {MONA}\nEnd: Answer\n"
    answer = "It was painted by Leonardo da Vinci [1].\n"
    result = webgpt(
        "browse",
        "-q",
        "Who painted the Mona Lisa?",
        "--js",
        "never",
        "--record",
        str(record),
        "--gold",
        "Leonardo da Vinci",
        home=tmp_path,
        stdin=commands + answer,
    )
    assert result.returncode == 0, result.stderr
    assert f"# recorded 4 steps to {record}" in result.stdout
    [demo], report = load_demonstrations([record])
    assert report.skipped == []
    assert demo.source == "person" and demo.gold_answers == ["Leonardo da Vinci"]
    assert [s.command for s in demo.steps] == commands.splitlines()
    assert demo.answer == answer.strip() and demo.quotes[0].extract == MONA
    assert demo.steps[0].observation in result.stdout  # what the person saw is what was kept
    assert await replay(demo, learning_web.session()) == []


@pytest.mark.slow  # starts a process
def test_browse_record_without_commands_is_a_clear_error(
    learning_store: Path, tmp_path: Path
) -> None:
    shutil.copy(learning_store, tmp_path / "offline-web.sqlite")
    result = webgpt(
        "browse", "-q", "q", "--js", "never", "--record", str(tmp_path / "r.jsonl"), home=tmp_path
    )
    assert result.returncode == 1 and "nothing to record" in result.stderr
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.slow  # starts a process
async def test_feedback_demonstrations_export_for_bc(
    learning_store: Path, learning_web: Web, tmp_path: Path
) -> None:
    store = FeedbackStore(tmp_path / "fb.sqlite")
    store.add_demonstration(
        "Who painted the Mona Lisa?",
        {
            "kind": "demonstration",
            "question": "Who painted the Mona Lisa?",
            "commands": ["Search Mona Lisa", "Clicked on link 0", f"Quote: {MONA}", "End: Answer"],
            "answer": "Leonardo da Vinci [1].",
            "quotes": [],
        },
    )
    store.close()
    out = tmp_path / "demos.jsonl"
    result = webgpt(
        "feedback",
        "export",
        "--demonstrations",
        "--db",
        str(tmp_path / "fb.sqlite"),
        "--store",
        str(learning_store),
        "--out",
        str(out),
        home=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "1 demonstrations exported" in result.stderr
    [demo], _ = load_demonstrations([out])
    assert demo.source == "person" and demo.answer == "Leonardo da Vinci [1]."
    assert len(demo.steps) == 4 and demo.quotes[0].extract == MONA
    assert await replay(demo, learning_web.session()) == []


async def test_teacher_demonstrations_keep_only_right_answers(learning_web: Web) -> None:
    from tests.agent.fake_policy import Script, fake_policy_app
    from tests.servers import serve
    from webgpt.agent.episode import EpisodeConfig
    from webgpt.agent.openai_policy import OpenAIPolicy
    from webgpt.evals.questions import Question
    from webgpt.learning.teacher import teacher_demonstration

    question = Question(question="Crow", gold_answers=["Corvus"], split="train")
    # First attempt answers wrong (rejected), the second right (kept).
    script = Script(
        oracle_quote="Crows are birds of the genus Corvus.",
        answers=["They are birds [1].", "Crows belong to the genus Corvus [1]."],
    )
    with serve(fake_policy_app(script)) as base:
        teacher = OpenAIPolicy(base + "/v1", "scripted", backoff_s=0.01)
        episode = EpisodeConfig(temperature=0.8)
        demo = await teacher_demonstration(question, learning_web, teacher, episode, attempts=2)
        await teacher.aclose()
    assert demo is not None and demo.source == "teacher"
    assert demo.answer == "Crows belong to the genus Corvus [1]." and demo.meta["attempt"] == 2
    assert [s.command for s in demo.steps][-1] == "End: Answer"
    assert await replay(demo, learning_web.session()) == []


@pytest.mark.slow  # starts a process
def test_demos_generate_keeps_a_teachers_right_episodes_in_question_order(
    learning_store: Path, tmp_path: Path
) -> None:
    """`--teacher URL,MODEL` with two questions in flight: the one its answer is right for
    is kept, the other (no gold answer stated, in any attempt) is not."""
    from tests.agent.fake_policy import Script, fake_policy_app
    from tests.servers import serve
    from webgpt.evals.questions import Question

    questions = tmp_path / "questions.jsonl"
    asked = [
        Question(question="Crow", gold_answers=["Tuba"], split="train"),
        Question(question="Crow", gold_answers=["Corvus"], split="train"),
        Question(question="Crow", gold_answers=["Oboe"], split="train"),
    ]
    questions.write_text("".join(q.model_dump_json() + "\n" for q in asked))
    out = tmp_path / "self.jsonl"
    script = Script(
        oracle_quote="Crows are birds of the genus Corvus.",
        answers=["Crows belong to the genus Corvus [1]."] * 6,
    )
    with serve(fake_policy_app(script)) as base:
        result = webgpt(
            "demos", "generate", "--teacher", f"{base}/v1,scripted", "--concurrency", "2",
            "--questions", str(questions), "--out", str(out), "--store", str(learning_store),
            home=tmp_path,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    [demo], report = load_demonstrations([out])
    assert not report.skipped and demo.source == "teacher"
    assert demo.gold_answers == ["Corvus"]
    assert len([r for r in script.requests if r["prompt"].endswith("■")]) == 5  # 2 + 1 + 2


@pytest.mark.slow  # starts a process
def test_a_chat_model_teaches_the_completion_format(learning_store: Path, tmp_path: Path) -> None:
    """`--teacher URL,MODEL --policy-format chat`: a chat model's tool calls, written as the
    commands a completion-format student learns, replayed byte for byte."""
    from tests.agent.test_chat_policy import chat_server
    from tests.servers import serve
    from webgpt.evals.questions import Question

    questions = tmp_path / "questions.jsonl"
    asked = Question(question="What genus are crows?", gold_answers=["Corvus"], split="train")
    questions.write_text(asked.model_dump_json() + "\n")
    out = tmp_path / "taught.jsonl"
    requests: list[dict[str, object]] = []
    with serve(chat_server("ollama", requests)) as base:
        result = webgpt(
            "demos", "generate", "--teacher", f"{base}/v1,qwen3:4b", "--policy-format", "chat",
            "--questions", str(questions), "--out", str(out), "--store", str(learning_store),
            home=tmp_path,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    [demo], report = load_demonstrations([out])
    assert not report.skipped and demo.meta["teacher"] == "qwen3:4b"
    assert [s.command for s in demo.steps] == [
        "Search crow corvus",
        "Clicked on link 0",
        "Quote: Crows are birds of the genus Corvus.",
        "End: Answer",
    ]
    assert demo.answer == "Crows are birds of the genus Corvus [1]."
    assert all("tools" in r for r in requests)


def test_an_episode_is_worth_learning_when_it_ends_as_its_kind_asks() -> None:
    """Expert iteration keeps right factoids, long-form answers in WebGPT's style and
    declines of unanswerable questions; nothing else."""
    from webgpt.agent.episode import EpisodeResult
    from webgpt.agent.trace import Reference
    from webgpt.evals.questions import Question
    from webgpt.learning.teacher import worth_learning

    refs = [
        Reference(n=n, title="Crow", url="https://x/", domain="x", extract="...") for n in (1, 2)
    ]
    factoid = Question(question="Which genus are crows?", gold_answers=["Corvus"])
    longform = Question(question="Why are crows clever?", kind="longform")
    unanswerable = Question(question="Who won the 2030 World Cup?", kind="unanswerable")
    decline = "The pages I found do not say who won the 2030 World Cup."
    two = "Crows are corvids [1]. They use tools [2]."
    cases = [
        (factoid, "Crows are of the genus Corvus [1].", refs, [], True),
        (factoid, "Crows are birds [1].", refs, [], False),  # no gold answer
        (factoid, "Crows are of the genus Corvus.", refs, [], False),  # cites nothing
        (factoid, "Crows are of the genus Corvus [1].", refs, [3], False),  # cited [3] too
        (factoid, decline, [], [], False),  # an answerable question declined
        (longform, two, refs, [], True),
        (longform, "Crows are corvids [1] and use tools [1].", refs, [], False),  # one quote
        (longform, "Crows are corvids [1][2].", refs, [], False),  # one sentence
        (longform, "Crows are corvids [1]. CROWS are corvids [2].", refs, [], False),  # repeated
        (longform, "Crow (en.wikipedia.org) [1]. They use tools [2].", refs, [], False),  # title
        (longform, "Crows are birds of [1] Crows are birds of [2]", refs, [], False),  # a loop
        (unanswerable, decline, [], [], True),
        (unanswerable, "Brazil won the 2030 World Cup [1].", refs, [], False),  # invented
        (unanswerable, None, [], [], False),
    ]
    for question, answer, references, dangling, kept in cases:
        result = EpisodeResult(0, answer, references, "answered", dangling_citations=dangling)
        assert worth_learning(question, result) is kept, (question.kind, answer)


@pytest.mark.slow  # starts a process
def test_demos_cli_rejects_bad_input_clearly(learning_store: Path, tmp_path: Path) -> None:
    bad_split = webgpt(
        "demos", "generate", "--scripted", "--out", str(tmp_path / "d.jsonl"),
        "--per-split", "train=lots", "--store", str(learning_store), home=tmp_path,
    )  # fmt: skip
    assert bad_split.returncode == 1 and "--per-split wants train=N" in bad_split.stderr
    assert not (tmp_path / "d.jsonl").exists()
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"question": "q"}\nnot json\n')
    checked = webgpt("demos", "check", str(broken), "--store", str(learning_store), home=tmp_path)
    assert checked.returncode == 1
    assert f"{broken}:1:" in checked.stdout and f"{broken}:2:" in checked.stdout
    no_teacher_model = webgpt(
        "demos", "generate", "--teacher", "http://127.0.0.1:9/v1", "--out", str(broken),
        home=tmp_path,
    )  # fmt: skip
    assert no_teacher_model.returncode == 1 and "give URL,MODEL" in no_teacher_model.stderr
    no_concurrency = webgpt(
        "demos", "generate", "--teacher", "http://127.0.0.1:9/v1,m", "--concurrency", "0",
        "--out", str(broken), home=tmp_path,
    )  # fmt: skip
    assert no_concurrency.returncode == 1 and "--concurrency" in no_concurrency.stderr
    assert broken.read_text().startswith('{"question": "q"}')  # nothing overwritten
