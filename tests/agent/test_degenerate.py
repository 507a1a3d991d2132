"""agent.degenerate: the answers that are never served, each named by why."""

import re

import pytest

from webgpt.agent.declines import decline_answer
from webgpt.agent.degenerate import degeneracy
from webgpt.agent.grammar import cited_answer_regex, quoted_sentence_regex

QUESTION = "How does a refrigerator keep food cold?"


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("It uses python.py.X.X.X.X [1].", "loop"),
        ("A heat pump moves heat in in in the box [1].", "loop"),
        ("A heat pump moves heat out [1]. A heat pump moves heat out [2].", "repeat"),
        ("The fridge was from    in     in 1913 [1].", "blanks"),
        ("A heat pump moves heat out of the [1].", "cut"),
        ("A heat pump moves heat out [1]. It was", "cut"),  # no end mark: run on or cut off
        ("A refrigerator keeps food cold [1].", "restates"),
        ("Refrigerators keep the food cold [1].", "restates"),  # the question's words extended
    ],
)
def test_each_kind_of_degenerate_answer_is_named(answer: str, why: str) -> None:
    assert degeneracy(answer, QUESTION) == why


@pytest.mark.parametrize(
    "answer",
    [
        "A heat pump moves heat from inside the box to the room [1].",
        "A heat pump moves heat out [1]. The icebox came before it [2].",
        "It cools the food by a heat pump [1][2].",  # a citation after another ends no clause
        "Its compressor is rated in class A [1].",  # a capitalised open word is a name
        decline_answer(QUESTION),  # a decline is written by rule
        None,
        "",
    ],
)
def test_an_answer_that_says_something_whole_is_not(answer: str | None) -> None:
    assert degeneracy(answer, QUESTION) is None


def test_the_answer_grammar_forbids_the_stop_and_its_look_alikes() -> None:
    """A policy that wants to stop before its citation writes a look-alike of "■" and its
    sentence again; the answer text, cited or a sentence a quote, offers none of them."""
    cited = cited_answer_regex(["one quote"])
    assert re.fullmatch(cited, "The fridge was made in class A [1].")
    assert re.fullmatch(cited, 'Fridges cool ("coolers"). [1]')
    for stop in "■█□▪◼▀◿":
        assert not re.fullmatch(cited, f"Fridges cool.{stop}Fridges cool [1].")
        assert not re.fullmatch(quoted_sentence_regex(1), f" cool.{stop}Fridges cool [1].")
    assert re.fullmatch(quoted_sentence_regex(1), ' cool ("coolers"). [1]')
