"""The answerability model: its features, its fit, its file, and training it from eval runs."""

import json
from pathlib import Path

import pytest

from tests.agent.fake_policy import Script
from tests.agent.test_agent import CROW_EPISODE, collect_into
from webgpt.agent.answerability import (
    FEATURES,
    MODEL_FILE,
    Answerability,
    AnswerabilityModel,
    TermRarity,
    features,
    name_words,
    words_of,
)
from webgpt.agent.declines import decline_answer
from webgpt.agent.episode import EpisodeConfig, run_episode
from webgpt.agent.errors import ConfigurationError, DataError
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.trace import ShapedEvent, TraceEvent
from webgpt.browser.web import Web
from webgpt.learning.answerability import (
    MAX_ANSWERABLE_DECLINED,
    Row,
    fit,
    label,
    train,
    with_threshold,
)


def test_words_are_folded() -> None:
    assert words_of("Who composed Dvořák’s NEW World, in 1893?") == [
        "who", "composed", "dvorak", "s", "new", "world", "in", "1893",
    ]  # fmt: skip


def test_rarity_weighs_rare_words_more(learning_store: Path) -> None:
    rarity = TermRarity(learning_store)
    # "the" is on every page of the learning web, "tomato" on one, "zenthar" on none
    assert rarity.weight("the") < rarity.weight("tomato") < rarity.weight("zenthar") == 1.0
    assert TermRarity(None).weight("tomato") == 1.0  # without an offline web: all alike


def test_features_of_shown_and_unshown_questions(learning_store: Path) -> None:
    rarity = TermRarity(learning_store)
    quote = "Kazan\nKazan is a city in Russia on the Volga river."
    # every word of it is in the learning web, and in the quote
    shown = features("Is Kazan on the Volga river?", [quote], [], rarity)
    assert shown == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    made_up = features("Is Zenthar on the Volga river?", [quote], [], rarity)
    assert made_up[FEATURES.index("rarest_off_page")] == 1.0
    assert made_up[FEATURES.index("rarest_off_page_name")] == 1.0  # written as a name
    lower = features("is zenthar on the volga river?", [quote], [], rarity)
    assert lower[FEATURES.index("rarest_off_page")] == 1.0
    assert lower[FEATURES.index("rarest_off_page_name")] == 0.0
    assert made_up[FEATURES.index("quote_coverage")] < shown[FEATURES.index("quote_coverage")]
    # a word the quote shows in another form counts as shown ("rivers" by "river")
    assert features("Kazan rivers", [quote], [], rarity)[0] == 1.0
    # the quoted page shows what the quote does not
    page = "Kazan is the capital of Tatarstan."
    on_page = features("capital of Tatarstan", [quote], [page], rarity)
    assert on_page[FEATURES.index("page_coverage")] == 1.0
    assert on_page[FEATURES.index("quote_coverage")] < 1.0


def test_words_written_as_names() -> None:
    assert name_words("Who won the 2031 Tour de France?") == {"2031", "tour", "france"}
    assert name_words("who won the tour de france") == set()  # the first word aside


def _rows() -> list[Row]:
    answerable = [Row(f"a{i}", [0.9, 1.0, 0.1 + i / 100, 0, 0, 0], True) for i in range(20)]
    unanswerable = [Row(f"u{i}", [0.4, 0.5, 1.0, 1.0 - i / 100, 1, 1], False) for i in range(10)]
    return answerable + unanswerable


def test_fit_separates_and_is_deterministic() -> None:
    model = fit(_rows())
    assert model == fit(_rows())
    assert all((model.probability(r.values) >= model.threshold) == r.answerable for r in _rows())
    with pytest.raises(DataError, match="answerable and unanswerable"):
        fit([r for r in _rows() if r.answerable])


def test_the_threshold_declines_few_answerable_training_rows() -> None:
    rows = [*_rows(), Row("odd", [0.4, 0.5, 1.0, 1.0, 1, 1], True)]  # looks unanswerable
    model = with_threshold(fit(rows), rows)
    scores = sorted(model.probability(r.values) for r in rows if r.answerable)
    declined = [s for s in scores if s < model.threshold]
    assert len(declined) == 1 <= MAX_ANSWERABLE_DECLINED * len(scores)  # the odd one
    assert model.threshold == scores[1]  # the highest threshold that declines no more


def test_model_file_round_trip_and_refusals(tmp_path: Path) -> None:
    model = fit(_rows())
    model.save(tmp_path / "m", {"kind": "answerability"})
    assert AnswerabilityModel.load(tmp_path / "m") == model
    with pytest.raises(ConfigurationError, match="webgpt train answerability"):
        AnswerabilityModel.load(tmp_path)
    stored = json.loads((tmp_path / "m" / MODEL_FILE).read_text())
    (tmp_path / "m" / MODEL_FILE).write_text(json.dumps({**stored, "features": ["other"]}))
    with pytest.raises(DataError, match="features"):
        AnswerabilityModel.load(tmp_path / "m")
    with pytest.raises(DataError, match=f"a model of {len(FEATURES)}"):
        model.probability([1.0])


def _outcome(question: str, kind: str, extract: str, gold: list[str]) -> dict[str, object]:
    quote = {"title": "Kazan", "url": "https://en.wikipedia.org/wiki/Kazan", "extract": extract}
    return {"question": question, "kind": kind, "gold_answers": gold, "quotes": [quote]}


def test_labels() -> None:
    river = "Kazan is a city in Russia on the Volga river."
    assert label(_outcome("Which river is Kazan on?", "factoid", river, ["Volga"])) is True
    assert label(_outcome("Who founded Kazan?", "factoid", river, ["Ivan"])) is None  # unknown
    assert label(_outcome("Who will rule Kazan in 2090?", "unanswerable", river, [])) is False
    assert label(_outcome("Why is Kazan on a river?", "longform", river, [])) is True
    assert label({"question": "q", "kind": "factoid", "quotes": []}) is None


def test_train_from_eval_runs(learning_store: Path, tmp_path: Path) -> None:
    river = "Kazan is a city in Russia on the Volga river."
    outcomes = [
        _outcome("Which river is Kazan on?", "factoid", river, ["Volga"]),
        _outcome("Which country is Kazan in?", "factoid", river, ["Russia"]),
        _outcome("Who founded Kazan?", "factoid", river, ["Ivan"]),
        _outcome("Who is the mayor of Zenthar?", "unanswerable", river, []),
        _outcome("What is Kazan's favourite colour?", "unanswerable", river, []),
    ]
    run = tmp_path / "run.json"
    run.write_text(json.dumps([{"figures": {}, "outcomes": outcomes}]))
    logged: list[str] = []
    model = train([run], learning_store, tmp_path / "model", logged.append)
    manifest = json.loads((tmp_path / "model" / "manifest.json").read_text())
    assert manifest["rows"] == 4 and manifest["answerable"] == 2  # the unknown one left out
    assert AnswerabilityModel.load(tmp_path / "model") == model
    judge = Answerability(model, TermRarity(learning_store))
    page = ["https://en.wikipedia.org/wiki/Kazan\nKazan is a city in Russia."]
    shown = judge.probability("Which river is Kazan on?", [f"Kazan\n{river}"], page)
    unshown = judge.probability("Who is the mayor of Zenthar?", [f"Kazan\n{river}"], page)
    assert shown > unshown
    assert any("wrote" in line for line in logged)


async def test_an_episode_declines_where_the_model_judges_no_answer(
    web: Web, policy: OpenAIPolicy, script: Script, offline_store: Path
) -> None:
    """With an answerability model the episode declines below its threshold, with nothing
    sampled, and the trace names it; above it the policy answers. It decides in place of
    the grounded declines: a question naming what no quote shows is answered when the
    model finds the quotes answer."""
    rarity = TermRarity(offline_store)
    # a model that answers where the quotes show the whole question, and declines below
    coverage = AnswerabilityModel(weights=(10.0, 0.0, 0.0, 0.0, 0.0, 0.0), bias=-9.0)
    config = EpisodeConfig(answerability=Answerability(coverage, rarity))
    question = "Which crow won the 2031 Tour de France?"
    script.commands = list(CROW_EPISODE)
    events: list[TraceEvent] = []
    result = await run_episode(0, web.session(), policy, question, config, collect_into(events))
    assert result.answer == decline_answer(question)
    assert result.answerability is not None and result.answerability < 0.5
    assert not [r for r in script.requests if r.get("stream")]
    assert result.shaped_by == ["answerability_decline"]
    [shaped] = [e for e in events if isinstance(e, ShapedEvent)]
    assert shaped.part == "answerability_decline"

    always = AnswerabilityModel(weights=(0.0,) * len(FEATURES), bias=5.0)
    script.commands, script.requests = list(CROW_EPISODE), []
    script.answers = ["Crows are corvids [1]."]
    config = EpisodeConfig(answerability=Answerability(always, rarity))
    result = await run_episode(0, web.session(), policy, question, config)
    assert result.answer == "Crows are corvids [1]." and result.shaped_by == []
    assert result.unshown == ["2031", "Tour", "France"]  # what the grounded rule would decline


def test_the_option_and_its_variable(
    learning_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--answerability names a model folder; WEBGPT_ANSWERABILITY gives its default, as the
    service reads it; `none` is off."""
    import argparse

    from webgpt.agent.cli import add_answer_rules, answer_rules
    from webgpt.service.settings import ServiceSettings

    fit(_rows()).save(tmp_path / "m", {})
    monkeypatch.setenv("WEBGPT_ANSWERABILITY", str(tmp_path / "m"))
    monkeypatch.setenv("WEBGPT_OFFLINE_STORE", str(learning_store))
    parser = argparse.ArgumentParser()
    add_answer_rules(parser)
    judge = answer_rules(parser.parse_args([]))["answerability"]
    assert isinstance(judge, Answerability) and judge.model == fit(_rows())
    assert ServiceSettings().answer_rules()["answerability"].model == judge.model
    assert answer_rules(parser.parse_args(["--answerability", "none"]))["answerability"] is None


def test_a_file_that_is_no_eval_run_is_a_clear_error(learning_store: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(DataError, match="not a `webgpt eval --json-out` file"):
        train([broken], learning_store, tmp_path / "model", lambda _: None)
    assert not (tmp_path / "model").exists()  # nothing half-written
    broken.write_text('{"figures": {}}')
    with pytest.raises(DataError, match="no outcomes list"):
        train([broken], learning_store, tmp_path / "model", lambda _: None)
    with pytest.raises(DataError, match="not a `webgpt eval --json-out` file"):
        train([tmp_path / "missing.json"], learning_store, tmp_path / "model", lambda _: None)
