from webgpt.browser.page import Page, TextIndex, link_marker, neutralize
from webgpt.browser.text_fragments import passage_line, split_text_fragment, with_text_fragment


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


def test_a_text_fragment_names_where_its_page_opens() -> None:
    url = with_text_fragment(
        "https://docs.example/a.html", "The default is 5, or -1 & more words here"
    )
    assert "," not in url.partition("#")[2] and "&" not in url.partition("#")[2]
    assert split_text_fragment(url) == (
        "https://docs.example/a.html",
        "The default is 5, or -1 & more",
    )
    # an element's fragment stays part of the address; a prefix and a suffix are not the start
    kept = "https://docs.example/a.html#options:~:text=before-,the%20start,end,-after"
    assert split_text_fragment(kept) == ("https://docs.example/a.html#options", "the start")
    assert split_text_fragment("https://docs.example/a.html#options") == (
        "https://docs.example/a.html#options",
        None,
    )
    assert with_text_fragment("https://docs.example/a.html", "  ") == "https://docs.example/a.html"


def test_a_passage_the_renderer_writes_otherwise_is_found_by_a_run_of_its_words() -> None:
    index = TextIndex(("Title", "Basic Usage", "json.dump(obj, fp, *, skipkeys=False)", "Other"))
    assert passage_line(index, "Basic Usage¶ json.dump(obj, fp, *, skipkeys=False)") == 2
    assert passage_line(index, "basic   usage") == 1  # case and spacing as Find reads them
    assert passage_line(index, "nowhere on this page at all") is None


def test_a_hostile_fragment_is_read_only_as_far_as_a_link_names_words() -> None:
    index = TextIndex(tuple(f"line {n} of a long page" for n in range(2000)))
    hostile = "nowhere " * 100_000 + "line 1999"
    assert passage_line(index, hostile) is None  # its first words only: 5 searches, not 100,000
    url = "https://docs.example/a.html#:~:text=%ZZ%E2%28,,-,"
    assert split_text_fragment(url) == ("https://docs.example/a.html", "%ZZ\ufffd(")
