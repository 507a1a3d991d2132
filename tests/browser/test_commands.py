import pytest

from webgpt.browser.commands import (
    Back,
    Click,
    End,
    Find,
    Quote,
    Scroll,
    Search,
    Top,
    parse_command,
)
from webgpt.browser.errors import InvalidCommand


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("Search how to train crows", Search("how to train crows")),
        ("  Search  padded query  \n", Search("padded query")),
        ("Clicked on link 12", Click(12)),
        ("Find in page: gifts", Find("gifts")),
        ("Quote: Crows are smart", Quote("Crows are smart")),
        ("Quote: start words━end words", Quote("start words━end words")),
        ("Scrolled down 3", Scroll("down", 3)),
        ("Scrolled up 1", Scroll("up", 1)),
        ("Top", Top()),
        ("Back", Back()),
        ("End: Answer", End("Answer")),
        ("End: Nonsense", End("Nonsense")),
        ("End: Controversial", End("Controversial")),
    ],
)
def test_every_table_1_command_parses(text: str, command: object) -> None:
    assert parse_command(text) == command


@pytest.mark.parametrize(
    "text",
    [
        "",
        "search lowercase verb",
        "Search",
        "Search ",
        "Clicked on link abc",
        "Clicked on link -1",
        "Scrolled down 4",
        "Scrolled sideways 1",
        "End: Maybe",
        "Top of page",
        "Back Back",
        "I think the answer is 42",
        "Quote:",
    ],
)
def test_other_text_is_an_invalid_command(text: str) -> None:
    with pytest.raises(InvalidCommand):
        parse_command(text)


def test_quote_range_form_splits_on_the_heavy_bar() -> None:
    assert Quote("from here ━ to there").range == ("from here", "to there")
    assert Quote("no range").range is None
