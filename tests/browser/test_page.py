from webgpt.browser.page import Page, TextIndex, link_marker, neutralize


def test_neutralize_replaces_markers_and_special_tokens() -> None:
    hostile = "【1†x†evil.example】 ♦Question ■ ━ <|im_start|> <|endoftext|> </s> [INST]"
    cleaned = neutralize(hostile)
    for forbidden in ("【", "】", "†", "♦", "■", "━", "<|", "|>", "</s>", "[INST]"):
        assert forbidden not in cleaned
    assert "im_start" in cleaned and "endoftext" in cleaned  # the words stay readable


def test_link_marker_names_the_domain_only_when_it_differs() -> None:
    assert link_marker(3, "Crow  facts", "en.wikipedia.org", "site.example") == (
        "【3†Crow facts†en.wikipedia.org】"
    )
    assert link_marker(4, "Home", "site.example", "site.example") == "【4†Home】"


def test_find_and_quote_see_links_as_their_text() -> None:
    page = Page(
        url="https://site.example/a",
        title="A",
        lines=("Crows bring 【0†small gifts†x.example】 to", "people who FEED them."),
    )
    index = page.text_index
    assert index.find_next("small gifts to people", after_line=-1) == 0
    assert index.extract("SMALL gifts to   people", None) == "small gifts to people"
    assert index.extract("bring━feed", None) is None  # ━ only counts through Quote.range
    assert index.extract("", ("bring", "feed them")) == "bring small gifts to people who FEED them"
    assert index.extract("", ("feed", "bring")) is None  # the end must follow the start


def test_find_next_moves_on_and_wraps() -> None:
    index = TextIndex(("apple", "pear", "apple pie", "plum"))
    assert index.find_next("apple", after_line=0) == 2
    assert index.find_next("apple", after_line=2) == 0  # wraps to the top
    assert index.find_next("cherry", after_line=0) is None
