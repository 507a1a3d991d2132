"""agent.degenerate: the answers that are never served, each named by why."""

import pytest

from webgpt.agent.declines import decline_answer
from webgpt.agent.degenerate import degeneracy

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
        decline_answer(QUESTION),  # a decline is written by rule
        None,
        "",
    ],
)
def test_an_answer_that_says_something_whole_is_not(answer: str | None) -> None:
    assert degeneracy(answer, QUESTION) is None
