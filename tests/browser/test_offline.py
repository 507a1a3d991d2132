"""The offline web: building, searching and browsing it, as the embedded default does."""

import dataclasses
import gzip
import json
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.servers import COMMAND_ENV
from webgpt.browser.corpus import (
    MANUALS,
    SECTION_WORDS,
    CorpusPage,
    Manual,
    build_corpus,
    folder_pages,
    installed,
    manual_pages,
    sections,
    wiki_url,
    wikipedia_pages,
)
from webgpt.browser.errors import CorpusError
from webgpt.browser.offline import OfflineWeb, fts_query
from webgpt.browser.text_fragments import split_text_fragment
from webgpt.browser.web import Web, WebOptions

PAGES = Path(__file__).parent.parent / "data" / "pages"
# The golden pages and their transcripts (.golden.txt) are the fixture folder's pages.
FIXTURE_PAGES = len([p for p in PAGES.iterdir() if p.suffix in (".html", ".txt")])
SUMMARIES = {
    "Crow": {
        "title": "Crow",
        "extract": "Crows are birds of the genus Corvus, related to the Raven "
        "and found on every continent except Antarctica.",
        "description": "Genus of birds",
        "topic": "Biology",
    },
    "Raven": {
        "title": "Raven",
        "extract": "A Raven is a large black bird; ravens and crows are both in the genus Corvus.",
        "description": "Bird",
        "topic": "Biology",
    },
    "Antarctica": {
        "title": "Antarctica",
        "extract": "Antarctica is Earth's southernmost continent.",
        "description": "Continent",
        "topic": "Geography",
    },
}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    summaries = tmp_path / "summaries.json"
    summaries.write_text(json.dumps(SUMMARIES))
    out = tmp_path / "web.sqlite"
    progress: list[tuple[str, int, int]] = []
    total = build_corpus(
        out,
        [
            ("wikipedia", wikipedia_pages(summaries)),
            ("fixtures", folder_pages(PAGES, "https://fixtures.example/docs", "fixtures")),
        ],
        lambda *event: progress.append(event),
    )
    assert total == 3 + FIXTURE_PAGES
    assert ("wikipedia", 3, 1) in progress and ("fixtures", FIXTURE_PAGES, 1) in progress
    return out


@pytest.fixture
async def web(store: Path) -> AsyncIterator[Web]:
    opened = Web(
        WebOptions(engine="offline", offline_store=store, offline_only=True, js_mode="never")
    )
    yield opened
    await opened.aclose()


def test_wiki_pages_link_other_articles_and_carry_attribution(tmp_path: Path) -> None:
    summaries = tmp_path / "s.json"
    summaries.write_text(json.dumps(SUMMARIES))
    crow = next(p for p in wikipedia_pages(summaries) if p.title == "Crow")
    html = crow.body.decode()
    assert crow.url == "https://en.wikipedia.org/wiki/Crow"
    assert f'<a href="{wiki_url("Raven")}">Raven</a>' in html
    assert f'<a href="{wiki_url("Antarctica")}">Antarctica</a>' in html
    assert "CC BY-SA 4.0" in html


def test_a_sentence_its_summary_broke_in_two_is_one_paragraph_again(tmp_path: Path) -> None:
    from webgpt.browser.corpus import summary_paragraphs

    broken = (
        "The basilica is in Barcelona, Spain. It is the tallest church\n"
        "in the world.\n\nThe city has a port.\nmore, it said, than any other.\n"
        "Its works include:\nthe nave, and\nthe towers"
    )
    assert summary_paragraphs(broken) == [
        "The basilica is in Barcelona, Spain. It is the tallest church in the world.",
        "The city has a port.",  # it ends a sentence: what follows stays apart
        "more, it said, than any other.",
        "Its works include:",
        "the nave, and the towers",
    ]
    summaries = tmp_path / "s.json"
    summaries.write_text(json.dumps({"Basilica": {"title": "Basilica", "extract": broken}}))
    [page] = wikipedia_pages(summaries)
    assert "<p>The basilica is in Barcelona, Spain. It is the tallest church in the world.</p>" in (
        page.body.decode()
    )
    assert "tallest church in the world" in page.text


def test_fts_query_cannot_inject_fts_syntax() -> None:
    assert fts_query('crow" OR title:* NEAR(') == '"crow" OR "or" OR "title" OR "near"'
    assert fts_query("?!") is None


async def test_search_click_and_link_between_pages(web: Web) -> None:
    session = web.session()
    session.reset("Which continent has no crows?")
    result = await session.step("Search crows genus corvus")
    titles = [r.title for r in result.event.results]  # type: ignore[union-attr]
    assert titles[:2] == ["Crow", "Raven"] or titles[:2] == ["Raven", "Crow"]
    crow_id = titles.index("Crow")
    opened = await session.step(f"Clicked on link {crow_id}")
    assert "Crow (en.wikipedia.org)" in opened.observation
    assert "【1†Antarctica】" in opened.observation  # same domain: no domain in the marker
    followed = await session.step("Clicked on link 1")
    assert followed.event.url == wiki_url("Antarctica")  # type: ignore[union-attr]
    quote = await session.step("Quote: southernmost continent")
    assert quote.event.quote.url == wiki_url("Antarctica")  # type: ignore[union-attr]


def _page(url: str, title: str, text: str) -> CorpusPage:
    body = f"<html><head><title>{title}</title></head><body><p>{text}</p></body></html>"
    return CorpusPage(url, title, "text/html", body.encode(), text, "test")


def test_a_long_page_ranks_by_its_best_section(tmp_path: Path) -> None:
    """bm25 weighs a match by the length of the text it is in: indexed whole, a long
    manual page whose one section names the query's rare word ranks under short pages that
    only say its common word in their titles; indexed by sections, it comes first."""
    docs = "https://docs.example/"
    sections_text = "\n".join(
        f"PQfunction{n} returns a part of a result; "
        + " ".join(f"it reads field {q} of row {n} from the answer." for q in range(12))
        for n in range(60)
    )
    long = _page(
        f"{docs}libpq-exec.html",
        "Command Execution Functions",
        sections_text + "\nPQftablecol returns the column number of a result column.",
    )
    short = [
        _page(f"{docs}app-{n}.html", f"PostgreSQL Client Application {n}",
              f"app{n} is a PostgreSQL client application for a PostgreSQL server.")
        for n in range(30)
    ]  # fmt: skip
    others = [  # the rest of the web, a fifth of it about PostgreSQL
        _page(wiki_url(f"Bird {n}"), f"Bird {n}", ("PostgreSQL " if n % 5 == 0 else "")
              + " ".join(f"Bird {n} is of genus {g}; it eats seeds and sings." for g in range(18)))
        for n in range(1000)
    ]  # fmt: skip
    query = "postgresql PQftablecol"
    firsts = []
    for words in (10**9, SECTION_WORDS):  # whole pages, then sections
        store = tmp_path / f"web-{words}.sqlite"
        build_corpus(store, [("test", [long, *short, *others])], section_words=words)
        results = OfflineWeb(store).search_sync(query, 3)
        firsts.append(results[0].url)
    assert firsts == [f"{docs}app-0.html", f"{docs}libpq-exec.html"]
    assert "PQftablecol returns the column number" in results[0].snippet  # its section's


async def test_a_result_past_a_long_page_s_first_section_opens_at_its_passage(
    tmp_path: Path,
) -> None:
    """A long page found by a later section links to the snippet's passage, and the
    browser opens it there; a page found by its first section opens at its top. The page
    is fetched and quoted at its own address."""
    docs = "https://docs.example/"
    paragraphs = [
        f"Option {n} sets part {n} of the server; " + "it is read once at start. " * 30
        for n in range(40)
    ] + ["The checkpoint_timeout option defaults to five minutes."]
    body = "".join(f"<p>{text}</p>" for text in paragraphs)
    html = f"<html><head><title>Server Options</title></head><body>{body}</body></html>"
    pages = [
        CorpusPage(f"{docs}options.html", "Server Options", "text/html", html.encode(),
                   "\n".join(paragraphs), "test"),
        _page(f"{docs}intro.html", "Introduction", "A glossary of the terms the server uses."),
    ]  # fmt: skip
    store = tmp_path / "web.sqlite"
    build_corpus(store, [("test", pages)])
    (deep,) = OfflineWeb(store).search_sync("checkpoint_timeout", 3)
    assert deep.url == f"{docs}options.html"  # the page's address, cited as it is
    assert deep.passage == "The checkpoint_timeout option defaults to five minutes."
    assert OfflineWeb(store).search_sync("glossary", 3)[0].passage is None

    web = Web(WebOptions(engine="offline", offline_store=store, offline_only=True,
                         js_mode="never"))  # fmt: skip
    try:
        session = web.session()
        session.reset("What does checkpoint_timeout default to?")
        searched = await session.step("Search checkpoint_timeout")
        link = searched.event.results[0].url  # type: ignore[union-attr]
        assert split_text_fragment(link) == (f"{docs}options.html", deep.passage)
        opened = await session.step("Clicked on link 0")
        assert opened.event.url == f"{docs}options.html"  # type: ignore[union-attr]
        assert "defaults to five minutes" in opened.observation
        assert "Option 0 sets" not in opened.observation  # not at the page's top
        assert session.at_opening_view  # the passage is where the page opened
        await session.step("Scrolled up 1")
        assert not session.at_opening_view
        await session.step("Find in page: defaults to five minutes")
        assert session.at_opening_view  # back at the passage
        quoted = await session.step(
            "Quote: The checkpoint_timeout option defaults to five minutes."
        )
        assert quoted.event.quote.url == f"{docs}options.html"  # type: ignore[union-attr]
        await session.step("Search glossary")
        top = await session.step("Clicked on link 0")
        assert "A glossary of the terms the server uses." in top.observation
    finally:
        await web.aclose()


def test_sections_pack_lines_up_to_a_number_of_words() -> None:
    text = "one two\nthree four five\nsix\n" + " ".join(["w"] * 7)
    assert sections(text, 4) == ["one two", "three four five six", "w w w w", "w w w"]
    assert sections("", 4) == [""]


def _html(title: str, body: str, head: str = "") -> str:
    return f"<html><head><title>{title}</title>{head}</head><body>{body}</body></html>"


def test_a_manual_is_served_at_its_sites_urls(tmp_path: Path) -> None:
    """git-scm.com serves git-log.html at /docs/git-log and technical/api-trace2.html at
    /docs/api-trace2: the stored pages carry those URLs, and their links point at them."""
    git = dataclasses.replace(
        next(m for m in MANUALS if m.name == "git-docs"), folder=tmp_path / "git-doc"
    )
    (git.folder / "technical").mkdir(parents=True)
    (git.folder / "howto").mkdir()
    links = '<a href="git-log.html#_options">git-log(1)</a> <a href="#_name">NAME</a>'
    links += ' <a href="technical/api-trace2.html">trace2</a>'
    (git.folder / "git-rebase.html").write_text(_html("git-rebase(1)", f"<p>See {links}.</p>"))
    (git.folder / "git-log.html").write_text(_html("git-log(1)", "<p>Show commit logs.</p>"))
    (git.folder / "git-log.txt").write_text("git-log(1)\n==========\n")  # the page's source
    (git.folder / "git-big.html.gz").write_bytes(
        gzip.compress(_html("git-big(1)", "<p>Big.</p>").encode())
    )
    (git.folder / "technical" / "api-trace2.html").write_text(
        _html("Trace2 API", '<p>Back to <a href="../git.html">git</a>.</p>')
    )
    # Not manual pages: a page git-scm.com does not publish, a second name for a page, a
    # redirect and an empty page.
    (git.folder / "howto" / "maintain-git.html").write_text(_html("Maintain", "<p>Hi.</p>"))
    (git.folder / "index.html").symlink_to("git-log.html")
    refresh = '<meta http-equiv="Refresh" content="0; url=git-log.html">'
    (git.folder / "moved.html").write_text(_html("Moved", "<p>Moved.</p>", refresh))
    (git.folder / "empty.html").write_text(_html("Empty", ""))

    pages = {page.url: page for page in manual_pages(git)}
    base = "https://git-scm.com/docs/"
    assert sorted(pages) == [f"{base}{name}" for name in ("api-trace2", "git-big", "git-log",
                                                          "git-rebase")]  # fmt: skip
    rebase = pages[f"{base}git-rebase"]
    assert rebase.title == "git-rebase(1)" and rebase.source == "git-docs"
    html = rebase.body.decode()
    assert f'href="{base}git-log#_options"' in html and f'href="{base}api-trace2"' in html
    assert 'href="#_name"' in html
    assert f'href="{base}git"' in pages[f"{base}api-trace2"].body.decode()


def test_a_manual_served_in_folders_links_to_its_pages_and_other_manuals(tmp_path: Path) -> None:
    django = dataclasses.replace(
        next(m for m in MANUALS if m.name == "django-docs"), folder=tmp_path / "django"
    )
    (django.folder / "topics" / "db").mkdir(parents=True)
    links = '<a href="../../ref/models/fields.html#django.db.models.Field.null">null</a>'
    links += ' <a href="/usr/share/doc/python3-doc/html/glossary.html#term-sequence">seq</a>'
    (django.folder / "topics" / "db" / "models.html").write_text(
        _html("Models", f"<p>Fields: {links}.</p>")
    )
    (django.folder / "topics" / "index.html").write_text(_html("Topics", "<p>Guides.</p>"))
    (django.folder / "index.html").write_text(_html("Django documentation", "<p>Start.</p>"))
    (django.folder / "search.html").write_text(_html("Search", "<p>Needs JavaScript.</p>"))

    pages = {page.url: page for page in manual_pages(django)}
    base = "https://docs.djangoproject.com/en/3.2/"
    assert sorted(pages) == [base, f"{base}topics/", f"{base}topics/db/models/"]
    html = pages[f"{base}topics/db/models/"].body.decode()
    assert f'href="{base}ref/models/fields/#django.db.models.Field.null"' in html
    assert 'href="https://docs.python.org/3.11/glossary.html#term-sequence"' in html


def test_a_missing_manual_is_named_with_the_package_that_installs_it(tmp_path: Path) -> None:
    here = Manual("here-docs", tmp_path, "https://here.example/", "here-doc")
    gone = Manual("gone-docs", tmp_path / "gone", "https://gone.example/", "gone-doc")
    away = Manual("away-docs", tmp_path / "away", "https://away.example/", "away-doc")
    assert installed([here]) == ([here], None)
    assert installed([gone, here, away]) == (
        [here],
        "note: building without gone-docs, away-docs (apt-get install gone-doc away-doc)",
    )


async def test_folder_pages_keep_their_urls_and_relative_links(web: Web) -> None:
    session = web.session()
    session.reset("q")
    result = await session.step("Search keyword iskeyword")
    urls = [r.url for r in result.event.results]  # type: ignore[union-attr]
    assert "https://fixtures.example/docs/sphinx-keyword.html" in urls
    page = await web.loader.load("https://fixtures.example/docs/sphinx-keyword.html#anchor")
    assert page.title.startswith("keyword")
    missing = await web.loader.load("https://fixtures.example/docs/nope.html")
    assert missing.kind == "error" and "not in the offline web" in missing.lines[0]


def test_missing_or_broken_store_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="webgpt corpus build"):
        OfflineWeb(tmp_path / "absent.sqlite")
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(CorpusError, match="not an offline-web file"):
        OfflineWeb(broken)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE x (y)").connection.close()
    with pytest.raises(CorpusError):
        OfflineWeb(other)
    # a file of the older format, whose search indexed whole pages: refused, not misread
    older = tmp_path / "older.sqlite"
    db = sqlite3.connect(older)
    db.executescript(
        "CREATE TABLE pages (id INTEGER PRIMARY KEY, url TEXT, title TEXT, content_type TEXT,"
        " source TEXT, body BLOB);"
        "CREATE VIRTUAL TABLE pages_fts USING fts5(title, text);"
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    )
    db.close()
    with pytest.raises(CorpusError, match="not their sections; rebuild it"):
        OfflineWeb(older)
    assert older.stat().st_size > 0  # left as it was


def test_build_replaces_the_store_atomically(tmp_path: Path, store: Path) -> None:
    before = OfflineWeb(store).page_count()

    def failing_pages():  # type: ignore[no-untyped-def]
        yield from folder_pages(PAGES, "https://x.example/", "x")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        build_corpus(store, [("x", failing_pages())])
    assert OfflineWeb(store).page_count() == before  # the old file is intact


@pytest.mark.slow
def test_the_debian_manuals_are_served_at_their_urls_and_found(tmp_path: Path) -> None:
    """The manuals scripts/install.sh installs, built as `webgpt corpus build` builds them."""
    store = tmp_path / "manuals.sqlite"
    build_corpus(store, [(manual.name, manual_pages(manual)) for manual in MANUALS])
    web = OfflineWeb(store)
    sources = {page.source for page in web.pages()}
    assert sources == {manual.name for manual in MANUALS}
    expected = {
        "postgresql work_mem default": "https://www.postgresql.org/docs/15/runtime-config-resource.html",
        "git rebase --onto": "https://git-scm.com/docs/git-rebase",
        "sqlite PRAGMA journal_mode WAL": "https://www.sqlite.org/pragma.html",
        "django model field null blank": "https://docs.djangoproject.com/en/3.2/ref/models/fields/",
    }
    for query, url in expected.items():
        assert url in [result.url for result in web.search_sync(query, 3)], query


@pytest.mark.slow
def test_embedded_default_builds_and_browses_from_the_cli(tmp_path: Path) -> None:
    """The real thing: the registry package and the Debian docs, through `webgpt`."""
    env = {**COMMAND_ENV, "WEBGPT_HOME": str(tmp_path)}
    webgpt = [sys.executable, "-m", "webgpt.service.cli"]
    built = subprocess.run(
        [*webgpt, "corpus", "build"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    assert "python-docs: 527 pages done" in built.stderr
    pages = int(built.stderr.rsplit("offline web: ", 1)[1].split()[0])
    assert pages > 10_000
    commands = "\n".join(
        [
            "Search json dumps",
            "Clicked on link 0",
            "Find in page: Serialize obj to a JSON formatted str",  # a quote is of the view
            "Quote: Serialize obj to a JSON formatted str",
            "End: Answer",
        ]
    )
    browsed = subprocess.run(
        [*webgpt, "browse", "--question", "What does json.dumps do?", "--js", "never"],
        input=commands,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert browsed.returncode == 0, browsed.stderr
    out = browsed.stdout
    assert "json — JSON encoder and decoder — Python 3.11.2 documentation (docs.python.org)" in out
    assert "Refused" not in out
    assert out.rstrip().endswith(
        "What does json.dumps do?■[1] json — JSON encoder and decoder — Python 3.11.2 "
        "documentation (docs.python.org)\n\nSerialize obj to a JSON formatted str■"
    )
