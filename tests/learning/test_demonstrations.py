"""Demonstrations: questions from the offline web, the scripted demonstrator, the schema,
replay, and the prompts behavior cloning trains on being the agent's own."""

import json
import random
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.agent.fake_policy import Script, fake_policy_app
from tests.conftest import LEARNING_ARTICLES
from tests.servers import serve
from webgpt.agent.episode import EpisodeConfig, run_episode
from webgpt.agent.grammar import answer_regex
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.browser.corpus import build_corpus, wikipedia_pages
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web, WebOptions
from webgpt.evals.questions import contains_gold, normalize, split_of
from webgpt.learning.bc import examples_of
from webgpt.learning.demonstrations import (
    Demonstration,
    load_demonstrations,
    replay,
    write_demonstrations,
)
from webgpt.learning.question_generator import generate_questions, wikipedia_questions
from webgpt.learning.scripted import ScriptedConfig, demonstrate


@pytest.fixture
async def detour_web(tmp_path: Path) -> AsyncIterator[Web]:
    """The learning web and a page that shares the crow's words: a search of the question's
    own words shows a wrong result to open and leave (the wrong-result detour)."""
    raven = {
        "title": "Raven",
        "description": "Bird of the genus Corvus",
        "extract": "Ravens are large birds of the genus Corvus, the genus of crows.",
    }
    summaries = tmp_path / "summaries.json"
    summaries.write_text(json.dumps({**LEARNING_ARTICLES, "Raven": raven}))
    build_corpus(tmp_path / "web.sqlite", [("wikipedia", wikipedia_pages(summaries))])
    options = WebOptions(offline_store=tmp_path / "web.sqlite", offline_only=True, js_mode="never")
    opened = Web(options)
    yield opened
    await opened.aclose()


async def scripted_demos(web: Web, detour_share: float = 0.0, seed: int = 0) -> list[Demonstration]:
    assert web.offline is not None
    rng = random.Random(seed)
    demos = []
    for question in generate_questions(web.offline, seed=seed, per_page=5):
        if question.kind != "factoid":  # long-form and declines: test_people_questions.py
            continue
        session = web.session(config=SessionConfig(max_actions=20))
        demo = await demonstrate(question, session, rng, ScriptedConfig(detour_share=detour_share))
        if demo is not None:
            demos.append(demo)
    return demos


def test_questions_come_in_many_styles_with_gold_answers_on_their_page(
    learning_store: Path,
) -> None:
    from webgpt.browser.offline import OfflineWeb

    questions = list(generate_questions(OfflineWeb(learning_store), per_page=5))
    by_text = {q.question: q for q in questions}
    assert {q.style for q in questions} >= {"when", "who", "how many", "what"}
    born = next(q for q in questions if "born" in q.question)
    assert born.gold_answers == ["1815"] and born.answer == "Ada Lovelace was born in 1815 [1]."
    assert by_text["Who painted the Mona Lisa?"].gold_answers == ["Leonardo da Vinci"]
    population = next(q for q in questions if q.style == "how many")
    assert population.gold_answers == ["1,308,660"]
    for question in (q for q in questions if q.kind == "factoid"):
        assert question.split == split_of(question.url or "")
        assert contains_gold(question.evidence or "", question.gold_answers)


@pytest.mark.parametrize(
    ("sentence", "golds"),
    [
        (
            "Electrical engineering is an engineering discipline concerned with it.",
            ["engineering discipline"],
        ),
        ("The calorie is a unit of energy that was defined.", ["unit of energy"]),
        ("The Permian is a geologic period and stratigraphic system.", ["geologic period"]),
        ("Cumulonimbus is a dense, towering, vertical cloud.", None),  # "dense" is no answer
        ("The rule of law is a political and legal ideal.", None),
        ("Zeta is a name used for things.", None),
    ],
)
def test_what_questions_have_a_checkable_gold_answer(
    sentence: str, golds: list[str] | None
) -> None:
    made = wikipedia_questions("https://w/x", "X", "", [sentence], "Science", random.Random(0))
    what = [q.gold_answers for q in made if q.style == "what"]
    assert what == ([golds] if golds else [])


def test_place_questions_skip_an_adjective_that_looks_like_a_place() -> None:
    sentence = "Ahmedabad is the most populous city in the Indian state of Gujarat."
    made = wikipedia_questions(
        "https://w/a", "Ahmedabad", "", [sentence], "Places", random.Random(0)
    )
    assert not [q for q in made if q.style in ("where", "which")]
    sentence = "Tajikistan is a landlocked country in Central Asia."
    made = wikipedia_questions(
        "https://w/t", "Tajikistan", "", [sentence], "Places", random.Random(0)
    )
    assert [q.gold_answers for q in made if q.style in ("where", "which")] == [["Central Asia"]]


def test_a_gold_answer_that_joins_two_also_accepts_the_first() -> None:
    made = wikipedia_questions(
        "https://w/s",
        "Richard Strauss",
        "German composer and conductor (1864–1949)",
        [],
        "People",
        random.Random(0),
    )
    who = next(q for q in made if q.style == "who")
    assert who.gold_answers == ["German composer and conductor", "German composer"]


def test_answer_normalisation_ignores_case_punctuation_and_articles() -> None:
    assert normalize("The  Mona-Lisa, a painting!") == "mona lisa painting"
    assert contains_gold("It was painted by LEONARDO da Vinci [1].", ["Leonardo da Vinci"])
    assert not contains_gold("Leonardo [1].", ["Leonardo da Vinci"])
    assert not contains_gold("in 18150 [1]", ["1815"])  # whole words only


async def test_scripted_demonstrations_reach_the_answer_and_replay_exactly(
    detour_web: Web,
) -> None:
    demos = await scripted_demos(detour_web, detour_share=0.5)
    assert len(demos) >= 6
    assert any(d.meta["detour"] for d in demos)
    for demo in demos:
        assert demo.source == "scripted" and demo.answer is not None
        assert contains_gold(demo.answer, demo.gold_answers)
        assert json.loads(demo.to_json())["schema_version"] == 1
        import re

        assert re.fullmatch(answer_regex(demo.quotes), demo.answer)
        assert demo.steps[-1].command == "End: Answer"
        # the environment reproduces every observation byte for byte
        assert await replay(demo, detour_web.session()) == []
        # every quote occurs verbatim in its page
        for quote in demo.quotes:
            page = await detour_web.loader.load(quote.url)
            assert page.text_index.find(quote.extract) is not None


async def test_quoted_answers_state_the_fact_in_the_quote_s_own_words(learning_web: Web) -> None:
    """`--answers quoted`: a factoid's answer is its quote's sentence, cited, where the
    reference answer says the fact in other words; every answer still fits the grammar."""
    assert learning_web.offline is not None
    questions = [
        q for q in generate_questions(learning_web.offline, per_page=5) if q.kind == "factoid"
    ]
    styles: dict[str, list[Demonstration]] = {"reference": [], "quoted": []}
    for answers in ("reference", "quoted"):
        for question in questions:
            session = learning_web.session(config=SessionConfig(max_actions=20))
            config = ScriptedConfig(detour_share=0, answers=answers)  # type: ignore[arg-type]
            if (demo := await demonstrate(question, session, random.Random(0), config)) is not None:
                styles[answers].append(demo)
    reference = {d.question: d for d in styles["reference"]}
    # a reference answer the grammar refuses is dropped; its quoted answer may fit
    assert {d.question for d in styles["quoted"]} >= set(reference)
    painted = next(d for d in styles["quoted"] if d.question == "Who painted the Mona Lisa?")
    said = "It was painted by Leonardo da Vinci in the early sixteenth century [1]."
    assert painted.answer == said
    assert reference[painted.question].answer != painted.answer
    for demo in styles["quoted"]:
        assert demo.answer is not None and contains_gold(demo.answer, demo.gold_answers)
        assert re.fullmatch(answer_regex(demo.quotes), demo.answer)
        if demo.question not in reference:
            continue
        assert demo.steps == reference[demo.question].steps  # only the answer differs
        if demo.answer != reference[demo.question].answer:
            said = normalize(demo.answer.removesuffix(" [1]."))
            assert said in normalize(demo.quotes[0].extract)


def test_an_unknown_answer_style_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    from webgpt.service.cli import build_parser

    command = ["demos", "generate", "--scripted", "--out", "d.jsonl", "--answers", "short"]
    with pytest.raises(SystemExit):
        build_parser().parse_args(command)
    assert "--answers: invalid choice: 'short'" in capsys.readouterr().err


def test_an_answer_stating_a_number_nothing_shows_is_not_demonstrated() -> None:
    from webgpt.learning.demonstrations import DemoQuote
    from webgpt.learning.scripted import states_unshown_number

    quotes = [DemoQuote(title="Census of 2020", extract="It had 1,460,148 people in 2019.")]
    question = "How many people lived there?"
    for shown in ("It had 1,460,148 people in 2019 [1].", "The census of 2020 counted them [1]."):
        assert not states_unshown_number(shown, question, quotes), shown
    assert not states_unshown_number("Its 3 districts [1].", "Which of its 3 districts?", quotes)
    for invented in ("It had 1,460 people [1].", "It had 1,460,148 people from 2019 to 2023 [1]."):
        assert states_unshown_number(invented, question, quotes), invented
    assert not states_unshown_number("It grew [1]. It grew more [2].", question, quotes)  # [n]


def test_a_quoted_answer_is_its_quote_s_whole_sentence() -> None:
    from webgpt.evals.questions import Question
    from webgpt.learning.scripted import quoted_answer

    late = "x" * 80
    quote = f"The river, {late}, flows north, {late}, into the Irrawaddy."
    question = Question(
        question="what river does it flow into",
        kind="factoid",
        gold_answers=["Irrawaddy"],
        answer="It flows into the Irrawaddy [1].",
    )
    # whole, however long: a clause cut at a bound would lose the answer at its end
    assert quoted_answer(quote, question) == f"{quote.removesuffix('.')} [1]."
    elsewhere = Question(**{**question.model_dump(), "gold_answers": ["Mekong"]})
    assert quoted_answer(quote, elsewhere) is None  # it does not state the gold answer
    entry = Question(
        question="what does json.dumps() do",
        kind="factoid",
        gold_answers=["Serialize obj"],
        answer="json.dumps() — Serialize obj to a JSON formatted str [1].",
    )
    assert quoted_answer("Serialize obj to a JSON formatted str.", entry) is None


async def _demonstrate_docs_entry(
    tmp_path: Path, page: str, body: str, title: str
) -> Demonstration:
    """The scripted demonstration for the question about `title` on one docs page."""
    from webgpt.browser.corpus import PYTHON_DOCS_URL, build_corpus, folder_pages
    from webgpt.browser.web import WebOptions

    (tmp_path / "docs" / "library").mkdir(parents=True)
    (tmp_path / "docs" / "library" / f"{page}.html").write_text(body)
    store = tmp_path / "web.sqlite"
    build_corpus(
        store, [("python-docs", folder_pages(tmp_path / "docs", PYTHON_DOCS_URL, "python-docs"))]
    )
    web = Web(WebOptions(offline_store=store, offline_only=True, js_mode="never"))
    try:
        assert web.offline is not None
        question = next(q for q in generate_questions(web.offline, per_page=5) if q.title == title)
        session = web.session(config=SessionConfig(max_actions=30))
        demo = await demonstrate(
            question, session, random.Random(0), ScriptedConfig(detour_share=0)
        )
        assert demo is not None
        return demo
    finally:
        await web.aclose()


async def test_a_method_documented_far_down_its_page_is_found_by_its_bare_name(
    tmp_path: Path,
) -> None:
    """Docs show a method as `fetchmany(size=…)` inside its class, not by its qualified name;
    the demonstrator finds it by the bare name once the qualified one is not on the page.
    (Its opening names the method most, so the search links to the page's top.)"""
    filler = "".join(f"<p>Paragraph {i} about databases in general.</p>" for i in range(80))
    opening = "<p>A sqlite3 Cursor fetches rows: sqlite3 Cursor fetchmany, Cursor fetchmany.</p>"
    demo = await _demonstrate_docs_entry(
        tmp_path,
        "sqlite3",
        "<html><head><title>sqlite3 — DB-API 2.0 interface for SQLite databases</title></head>"
        f"<body><main><h1>sqlite3 — DB-API 2.0 interface</h1>{opening}{filler}"
        '<dl class="py class"><dt id="sqlite3.Cursor">class sqlite3.Cursor</dt><dd>'
        "<p>A cursor over a result.</p>"
        '<dl class="py method"><dt id="sqlite3.Cursor.fetchmany">fetchmany(size=1)</dt>'
        "<dd><p>Return the next set of rows of a query result, as a list.</p></dd></dl>"
        f"</dd></dl>{filler}</main></body></html>",
        "sqlite3.Cursor.fetchmany",
    )
    commands = [step.command for step in demo.steps]
    assert "Find in page: fetchmany(" in commands
    assert demo.quotes[0].extract.startswith("Return the next set of rows")


async def test_a_function_whose_examples_come_first_is_found_by_repeating_the_find(
    tmp_path: Path,
) -> None:
    """The json page shows `json.dumps(` in eight examples before its entry: the demonstrator
    repeats the Find until the entry is in view, so the policy learns to do the same."""
    examples = "".join(
        f"<pre>json.dumps(example_{i})</pre>"
        + "".join(f"<p>Note {i}.{j} on encoding.</p>" for j in range(30))
        for i in range(8)
    )
    demo = await _demonstrate_docs_entry(
        tmp_path,
        "json",
        "<html><head><title>json — JSON encoder and decoder</title></head>"
        f"<body><main><h1>json — JSON encoder and decoder</h1>{examples}"
        '<dl class="py function"><dt id="json.dumps">json.dumps(obj, *, skipkeys=False)</dt>'
        "<dd><p>Serialize obj to a JSON formatted str using this conversion table.</p></dd>"
        "</dl></main></body></html>",
        "json.dumps",
    )
    finds = [step.command for step in demo.steps if step.command.startswith("Find in page")]
    assert finds == ["Find in page: json.dumps("] * 9
    assert demo.quotes[0].extract.startswith("Serialize obj to a JSON formatted str")


async def test_replay_reports_an_observation_that_no_longer_matches(learning_web: Web) -> None:
    demo = (await scripted_demos(learning_web))[0]
    stale = demo.steps[0].model_copy(update={"observation": "stale"})
    changed = demo.model_copy(update={"steps": [stale, *demo.steps[1:]]})
    assert await replay(changed, learning_web.session()) == ["step 1: the observation differs"]


async def test_schema_errors_are_reported_by_line_and_skipped(
    learning_web: Web, tmp_path: Path
) -> None:
    good = (await scripted_demos(learning_web))[0]
    row = json.loads(good.to_json())
    wrong_format = {**row, "observation_format": 99}
    no_steps = {**row, "steps": []}
    bad_answer = {**row, "answer_prompt": "not the prompt"}
    path = tmp_path / "demos.jsonl"
    path.write_text(
        "\n".join(
            [
                good.to_json(),
                "{not json",
                json.dumps(no_steps),
                "",
                json.dumps(wrong_format),
                json.dumps(bad_answer),
                json.dumps({**row, "source": "oracle"}),
            ]
        )
        + "\n"
    )
    demos, report = load_demonstrations([path])
    assert [d.id for d in demos] == [good.id]
    assert [line for _, line, _ in report.skipped] == [2, 3, 5, 6, 7]
    reasons = {line: reason for _, line, reason in report.skipped}
    assert "steps" in reasons[3]
    assert "observation format 99" in reasons[5]
    assert "answer prompt" in reasons[6]
    assert "source" in reasons[7]
    assert f"{path}:2:" in report.summary()


async def test_training_prompts_are_the_prompts_the_live_agent_sends(
    detour_web: Web, tmp_path: Path
) -> None:
    """Train/serve skew: each example's prompt equals what the agent sends for that state."""
    demo = next(d for d in await scripted_demos(detour_web, detour_share=1.0) if len(d.steps) > 4)
    path = tmp_path / "d.jsonl"
    write_demonstrations(path, [demo])
    [loaded], _ = load_demonstrations([path])
    script = Script(commands=[s.command for s in loaded.steps], answers=[loaded.answer or ""])
    with serve(fake_policy_app(script)) as base:
        policy = OpenAIPolicy(base + "/v1", "scripted", backoff_s=0.01)
        session = detour_web.session(config=loaded.session.config())
        result = await run_episode(0, session, policy, loaded.question, EpisodeConfig(guided=False))
        await policy.aclose()
    assert result.answer == loaded.answer
    sent = [request["prompt"] for request in script.requests]
    examples = examples_of(loaded)
    assert sent == [e.prompt for e in examples]
    assert [e.completion for e in examples] == [s.command + "\n" for s in loaded.steps] + [
        f"{loaded.answer}■"
    ]


@pytest.mark.parametrize("bad", ["", "   "])
def test_demonstrations_file_without_rows_loads_nothing(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text(bad)
    assert load_demonstrations([path])[0] == []
