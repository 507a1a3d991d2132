"""Questions about the entries of the software manuals (an option, setting or term and its
description) and the scripted demonstrator reaching them deep in their pages, on a small
offline web of real manual pages (the Debian packages scripts/install.sh installs)."""

import dataclasses
import json
import random
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import lxml.html
import pytest

from webgpt.agent.grammar import answer_regex
from webgpt.browser.corpus import MANUALS, build_corpus, manual_pages
from webgpt.browser.offline import OfflineWeb
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web, WebOptions
from webgpt.evals.questions import Question, contains_gold, split_of
from webgpt.learning.demonstrations import DemoQuote, replay
from webgpt.learning.question_generator import (
    generate_questions,
    is_manual_question,
    manual_entries,
)
from webgpt.learning.scripted import ScriptedConfig, demonstrate
from webgpt.service.cli import main

# A few real pages of two manuals: long ones whose entries lie far down, and a neighbour
# of each that search has to tell apart from it (training pages all: split_of).
PAGES = {
    "git-docs": ["git-merge.html", "git-pull.html"],
    "postgresql-docs": [
        "runtime-config-resource.html",
        "runtime-config-wal.html",
        "sql-altertable.html",
    ],
}
GIT_MERGE = "https://git-scm.com/docs/git-merge"
RESOURCES = "https://www.postgresql.org/docs/15/runtime-config-resource.html"
ALTER_TABLE = "https://www.postgresql.org/docs/15/sql-altertable.html"


@pytest.fixture(scope="module")
def manual_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("manual-web")
    sources = []
    for manual in MANUALS:
        if manual.name not in PAGES:
            continue
        copy = dataclasses.replace(manual, folder=folder / manual.name)
        copy.folder.mkdir()
        for name in PAGES[manual.name]:
            shutil.copy(manual.folder / name, copy.folder / name)
        sources.append((manual.name, list(manual_pages(copy))))
    build_corpus(folder / "web.sqlite", sources)
    return folder / "web.sqlite"


@pytest.fixture(scope="module")
def generated(manual_store: Path) -> list[Question]:
    # per_page large enough that no page's questions are capped
    return list(generate_questions(OfflineWeb(manual_store), per_page=100))


@pytest.fixture
async def manual_web(manual_store: Path) -> AsyncIterator[Web]:
    opened = Web(WebOptions(offline_store=manual_store, offline_only=True, js_mode="never"))
    yield opened
    await opened.aclose()


def asked(questions: list[Question], title: str, style: str) -> Question:
    return next(q for q in questions if q.title == title and q.style == style)


def test_an_option_is_asked_about_with_its_descriptions_opening_as_gold(
    generated: list[Question],
) -> None:
    autostash = asked(generated, "--autostash", "manual option")
    assert autostash.url == GIT_MERGE and autostash.split == split_of(GIT_MERGE) == "train"
    assert "git merge" in autostash.question and "--autostash" in autostash.question
    assert autostash.evidence == (
        "Automatically create a temporary stash entry before the operation begins, record it "
        "in the special ref MERGE_AUTOSTASH and apply it after the operation ends."
    )
    assert autostash.gold_answers == ["Automatically create a temporary stash entry"]
    # the whole sentence is longer than a first citation allows: the answer says the gold
    assert autostash.answer == "--autostash — automatically create a temporary stash entry [1]."


def test_a_setting_is_asked_about_by_its_software_and_its_default_where_stated(
    generated: list[Question],
) -> None:
    setting = asked(generated, "shared_buffers", "manual setting")
    assert setting.url == RESOURCES and setting.split == split_of(RESOURCES)
    assert "PostgreSQL" in setting.question or "postgresql" in setting.question
    assert setting.evidence == (
        "Sets the amount of memory the database server uses for shared memory buffers."
    )
    default = asked(generated, "shared_buffers", "manual default")
    assert default.gold_answers == ["128 megabytes"]
    assert default.evidence is not None
    assert default.evidence.startswith("The default is typically 128 megabytes (128MB)")
    assert default.answer == "The default of shared_buffers is 128 megabytes [1]."


def test_a_keyword_of_an_sql_command_is_asked_about_in_that_command(
    generated: list[Question],
) -> None:
    keyword = asked(generated, "IF EXISTS", "manual term")
    assert keyword.url == ALTER_TABLE and "PostgreSQL ALTER TABLE" in keyword.question
    assert keyword.gold_answers == ["Do not throw an error if the table does not"]
    assert keyword.answer == "IF EXISTS — do not throw an error if the table does not exist [1]."


def test_every_reference_answer_states_its_gold_and_is_one_the_grammar_admits(
    generated: list[Question],
) -> None:
    questions = [q for q in generated if is_manual_question(q)]
    assert {q.style for q in questions} >= {"manual option", "manual setting", "manual term"}
    for question in questions:
        assert question.answer is not None and question.evidence is not None
        assert contains_gold(question.evidence, question.gold_answers), question
        assert contains_gold(question.answer, question.gold_answers), question
        quote = DemoQuote(title="page", extract=question.evidence)
        assert re.fullmatch(answer_regex([quote]), question.answer), question


def test_names_that_are_not_an_entrys_own_are_skipped(generated: list[Question]) -> None:
    """A short option whose long form names it too, a placeholder, and the values listed
    inside another option's description give no question."""
    titles = {q.title for q in generated if q.url == GIT_MERGE}
    assert "--edit" in titles and "-e" not in titles
    assert "--strategy-option" in titles and not titles & {"theirs", "ignore-space-change"}
    titles = {q.title for q in generated if q.url == ALTER_TABLE}
    assert "SET TABLESPACE" in titles and not titles & {"name", "column_name"}


def test_an_entry_without_a_name_or_a_description_to_quote_is_skipped() -> None:
    description = "<dd><p>A description long enough to answer with here.</p></dd>"
    doc = lxml.html.document_fromstring(
        "<html><body><dl>"
        "<dt>--good</dt><dd><p>Makes the command do a good thing quickly.</p></dd>"
        f"<dt>--{'far-too-long-' * 4}option</dt>{description}"
        "<dt>--terse</dt><dd><p>Obsolete.</p></dd>"
        f"<dt>Value Storage</dt>{description}"
        f"<dt><em>name</em></dt>{description}"
        f'<dt><a href="other.html">other(1)</a></dt>{description}'
        f"<dt>--twice</dt>{description}<dt>--twice</dt>{description}"
        "</dl></body></html>"
    )
    assert [entry.name for entry in manual_entries(doc)] == ["--good"]


@pytest.mark.parametrize(
    ("title", "style"),
    [("--autostash", "manual option"), ("bgwriter_delay", "manual default")],
)
async def test_the_demonstrator_reaches_the_term_deep_in_its_page_and_quotes_its_answer(
    manual_web: Web, generated: list[Question], title: str, style: str
) -> None:
    """Where the search's link opens the page away from the term, a Find of it brings it
    into view; where it opens at the term's passage, the demonstrator quotes at once."""
    question = asked(generated, title, style)
    session = manual_web.session(config=SessionConfig(max_actions=30))
    demo = await demonstrate(question, session, random.Random(0), ScriptedConfig(detour_share=0))

    assert demo is not None and demo.answer is not None
    commands = [step.command for step in demo.steps]
    finds = [at for at, command in enumerate(commands) if command.startswith("Find in page:")]
    assert {commands[at] for at in finds} <= {f"Find in page: {title}"}
    assert commands[-2:] == [f"Quote: {question.evidence}", "End: Answer"]
    assert commands.index(f"Quote: {question.evidence}") > max(finds, default=-1)
    assert [quote.extract for quote in demo.quotes] == [question.evidence]
    assert contains_gold(demo.answer, question.gold_answers)
    assert await replay(demo, manual_web.session()) == []


async def test_a_term_that_no_page_holds_gets_no_demonstration(
    manual_web: Web, generated: list[Question]
) -> None:
    autostash = asked(generated, "--autostash", "manual option")
    absent = autostash.model_copy(
        update={
            "question": "What does the --frobnicate option of git merge do?",
            "title": "--frobnicate",
            "evidence": "Frobnicate the index before committing it.",
            "gold_answers": ["Frobnicate the index"],
            "answer": "--frobnicate — frobnicate the index before committing it [1].",
        }
    )
    session = manual_web.session(config=SessionConfig(max_actions=30))
    config = ScriptedConfig(detour_share=0)
    assert await demonstrate(absent, session, random.Random(0), config) is None


def test_quote_comparisons_draw_the_manuals_factoids_beside_the_rest(
    manual_store: Path, tmp_path: Path
) -> None:
    """`--manual-questions N` adds N of the manuals' factoids, whatever --generated and
    --limit draw: rows of their long pages, the answering sentence against another."""
    out = tmp_path / "quotes.jsonl"
    command = ["comparisons", "quotes", "--generated", "0", "--manual-questions", "6"]
    assert main([*command, "--store", str(manual_store), "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    questions = generate_questions(OfflineWeb(manual_store))  # as the command draws them
    by_text = {q.question: q for q in questions if is_manual_question(q)}
    assert 1 <= len({row["question"] for row in rows}) <= 6
    for row in rows:
        question = by_text[row["question"]]  # a manual question, and one of its pages
        assert row["url"] == question.url and split_of(row["url"]) == "train"
        winner = row[f"quote_{row['preference']}"]
        loser = row["quote_b" if row["preference"] == "a" else "quote_a"]
        assert contains_gold(winner, question.gold_answers)
        assert not contains_gold(loser, question.gold_answers)

    fewer = tmp_path / "fewer.jsonl"
    assert main([*command[:-1], "2", "--store", str(manual_store), "--out", str(fewer)]) == 0
    asked_fewer = {json.loads(line)["question"] for line in fewer.read_text().splitlines()}
    assert 1 <= len(asked_fewer) <= 2


def test_a_negative_count_of_manual_questions_is_refused_and_writes_nothing(
    manual_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "quotes.jsonl"
    command = ["comparisons", "quotes", "--manual-questions", "-3", "--store", str(manual_store)]
    assert main([*command, "--out", str(out)]) != 0
    assert "--manual-questions wants 0 or more, not -3" in capsys.readouterr().err
    assert not out.exists()
