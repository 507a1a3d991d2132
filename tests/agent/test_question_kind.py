"""The learned reading of whether a question asks for an explanation: its features, its fit,
its file, training it from question files, and the episode and options that use it."""

import argparse
import json
from pathlib import Path

import pytest

from webgpt.agent.episode import EpisodeConfig
from webgpt.agent.errors import ConfigurationError, DataError
from webgpt.agent.question_kind import (
    MODEL_FILE,
    SHIPPED,
    QuestionKindModel,
    features,
    load_question_kind,
    words,
)
from webgpt.learning.question_kind import Row, accuracy, fit, rows_of, train

SUBJECTS = [
    "windmill", "glacier", "violin", "submarine", "telescope", "volcano", "bicycle",
    "lighthouse", "compass", "printing press", "vaccine", "rainbow", "thermostat",
    "parachute", "barometer", "harp", "canal lock", "sundial", "tuning fork", "kiln",
]  # fmt: skip
EXPLAINING = ["how does a {} work", "why is the {} important", "tell me about the {}"]
FACT_OF = ["who invented the {}", "when was the {} invented", "how heavy is a {}"]


def _rows(subjects: list[str]) -> list[Row]:
    return [
        Row(template.format(s), explanation, s)
        for s in subjects
        for templates, explanation in ((EXPLAINING, True), (FACT_OF, False))
        for template in templates
    ]


def test_words_and_features() -> None:
    """Code names, calls and numbers read as placeholders; the opening and the ending are
    marked."""
    assert words("What does json.dumps() do in Python 3?") == [
        "what", "does", "codename", "do", "in", "python", "<num>",
    ]  # fmt: skip
    assert words("How’s Ünïcode FOLDED") == ["how", "s", "unicode", "folded"]
    found = features("how does a kiln work")
    assert {"<s> how", "how does", "work </s>", "kiln"} <= set(found)
    assert found == sorted(set(found))
    assert features("") == ["<s> </s>"] and features("???") == ["<s> </s>"]


def test_fit_reads_the_kind_of_questions_about_unseen_subjects() -> None:
    """What the fit learns is the form of the question: subjects it never saw are read by
    their question's form, both ways."""
    model = fit(_rows(SUBJECTS[:15]))
    for subject in SUBJECTS[15:]:
        assert model.asks_for_explanation(f"how does a {subject} work")
        assert model.asks_for_explanation(f"tell me about the {subject}")
        assert not model.asks_for_explanation(f"who invented the {subject}")
        assert not model.asks_for_explanation(f"how heavy is a {subject}")
    scores = accuracy(model, _rows(SUBJECTS[15:]))
    assert scores["longform read right"] == 1.0 and scores["factoid read right"] == 1.0


def test_fit_needs_both_kinds() -> None:
    with pytest.raises(DataError, match="long-form and factoid"):
        fit([r for r in _rows(SUBJECTS) if r.explanation])


def test_model_file_round_trip_and_refusals(tmp_path: Path) -> None:
    model = fit(_rows(SUBJECTS))
    model.save(tmp_path / "m", {"kind": "question-kind"})
    assert QuestionKindModel.load(tmp_path / "m") == model
    with pytest.raises(ConfigurationError, match="train one with `webgpt train question-kind`"):
        QuestionKindModel.load(tmp_path / "empty")
    (tmp_path / "m" / MODEL_FILE).write_text('{"feature_format": 1, "weights": []}')
    with pytest.raises(DataError, match="is not a question-kind model"):
        QuestionKindModel.load(tmp_path / "m")
    (tmp_path / "m" / MODEL_FILE).write_text('{"feature_format": 99, "weights": {}}')
    with pytest.raises(DataError, match="feature format 99"):
        QuestionKindModel.load(tmp_path / "m")
    (tmp_path / "m" / MODEL_FILE).write_text("{not json")
    with pytest.raises(DataError, match="is not a question-kind model"):
        QuestionKindModel.load(tmp_path / "m")


def _question_file(path: Path, rows: list[Row], split: str = "train") -> Path:
    with path.open("w") as out:
        for row in rows:
            if row.explanation:
                line = {"question": row.question, "kind": "longform", "key_points": [["x"]]}
            else:
                line = {"question": row.question, "kind": "factoid", "gold_answers": ["x"]}
            out.write(json.dumps(line | {"url": f"https://example.org/{row.page}", "split": split}))
            out.write("\n")
        out.write(json.dumps({"question": "Who won in 2090?", "kind": "unanswerable"}) + "\n")
    return path


def test_train_from_question_files(tmp_path: Path) -> None:
    questions = _question_file(tmp_path / "train.jsonl", _rows(SUBJECTS))
    logged: list[str] = []
    model = train([questions], tmp_path / "model", logged.append)
    manifest = json.loads((tmp_path / "model" / "manifest.json").read_text())
    # the unanswerable question says nothing of the answer's form: left out
    assert manifest["longform"] == 60 and manifest["factoid"] == 60
    assert manifest["features"] == len(model.weights) > 0
    assert QuestionKindModel.load(tmp_path / "model") == model
    assert any("held out" in line for line in logged)
    assert any("wrote" in line for line in logged)


def test_questions_of_another_split_are_refused(tmp_path: Path) -> None:
    """A model that learned from dev questions could not be measured on them."""
    questions = _question_file(tmp_path / "dev.jsonl", _rows(SUBJECTS[:2]), split="dev")
    with pytest.raises(DataError, match="of split dev"):
        rows_of([questions])
    with pytest.raises(DataError, match="of split dev"):
        train([questions], tmp_path / "model", lambda _: None)
    assert not (tmp_path / "model").exists()  # nothing half-written


def test_the_episode_reads_questions_with_its_model() -> None:
    """What the model reads decides the browsing: an explanation collects explanation_quotes
    and is offered every sentence in view after its first."""
    always = QuestionKindModel(weights={}, bias=5.0)
    never = QuestionKindModel(weights={}, bias=-5.0)
    ranker = object()  # quote_choices asks only whether there is one
    explaining = EpisodeConfig(question_kind=always, quote_ranker=ranker)  # type: ignore[arg-type]
    stating = EpisodeConfig(question_kind=never, quote_ranker=ranker)  # type: ignore[arg-type]
    assert explaining.quotes_wanted("q") == explaining.explanation_quotes == 3
    assert explaining.quote_choices("q") == 1  # the first quote, as a fact's
    assert explaining.quote_choices("q", quotes_held=1) is None
    assert stating.quotes_wanted("q") == 1 and stating.quote_choices("q") == 1
    assert EpisodeConfig().question_kind == load_question_kind(SHIPPED)


def test_the_option_and_its_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--question-kind names a model folder; WEBGPT_QUESTION_KIND gives its default, as the
    service reads it; the shipped model otherwise."""
    from webgpt.agent.cli import add_answer_rules, answer_rules
    from webgpt.service.settings import ServiceSettings

    fit(_rows(SUBJECTS)).save(tmp_path / "m", {})
    parser = argparse.ArgumentParser()
    add_answer_rules(parser)
    assert answer_rules(parser.parse_args([]))["question_kind"] == load_question_kind(SHIPPED)
    monkeypatch.setenv("WEBGPT_QUESTION_KIND", str(tmp_path / "m"))
    parser = argparse.ArgumentParser()
    add_answer_rules(parser)
    model = answer_rules(parser.parse_args([]))["question_kind"]
    assert model == fit(_rows(SUBJECTS))
    assert ServiceSettings().answer_rules()["question_kind"] == model


def test_the_shipped_model_loads_and_reads_any_text() -> None:
    """Empty, punctuation-only and the longest questions are read without error."""
    model = load_question_kind()
    assert len(model.weights) > 100
    for question in ["", "   ", "???", "-- '' ’s", "A" * 2000, "Why " * 500]:
        assert 0.0 <= model.probability(question) <= 1.0


# Plain phrasings of each kind, made up for this test: the shipped model reads each as its
# writer means, with a margin (what a retrained model must still read).
PLAIN_EXPLANATIONS = [
    "How does a refrigerator keep food cold?",
    "how do i get the environment variables passed to my python script",
    "Why is the sky blue?",
    "Tell me about the Namib Desert",
    "what causes tides and rip currents",
    "how long was a cubit and why was it used",
    "What’s the difference between a crow and a raven",
    "how long was a furlong and what was it based on",
]
PLAIN_FACTS = [
    "How many people live in Tokyo?",
    "how tall is the eiffel tower",
    "What is the capital of North Macedonia?",
    "What is Hangul called in South Korea?",
    "What is the largest planet?",
    "When was Ada Lovelace born?",
    "what does the latin word aquila mean",
]


@pytest.mark.parametrize("question", PLAIN_EXPLANATIONS)
def test_the_shipped_model_reads_how_and_why_as_explanations(question: str) -> None:
    assert load_question_kind().probability(question) > 0.6


@pytest.mark.parametrize("question", PLAIN_FACTS)
def test_the_shipped_model_reads_questions_of_fact_as_facts(question: str) -> None:
    assert load_question_kind().probability(question) < 0.4
