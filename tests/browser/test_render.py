import re
from collections import Counter
from pathlib import Path

import lxml.html

from webgpt.browser.render import (
    RenderOptions,
    render_html,
    render_text,
    search_results_page,
    wrap_lines,
)
from webgpt.browser.search.base import SearchResult

PAGES = Path(__file__).parent.parent / "data" / "pages"
SPHINX = PAGES / "sphinx-keyword.html"
WORD = re.compile(r"\w+")


def render(html: str, url: str = "https://site.example/p") -> str:
    return "\n".join(render_html(html.encode(), url, "utf-8", RenderOptions()).lines)


def test_text_is_not_markdown_escaped() -> None:
    text = render(
        "<main><p>1. Range 0 <= x < 256. Call f(*args, **kw) with a_b_c and #tag.</p></main>"
    )
    assert "1. Range 0 <= x < 256. Call f(*args, **kw) with a_b_c and #tag." in text


def test_a_sphinx_python_signature_shows_the_qualified_name_its_anchor_holds() -> None:
    """Plain text loses the nesting of <dl>s that says whose method "acquire()" is."""

    def signature(anchor: str, prename: str, name: str) -> str:
        prefix = f'<span class="sig-prename descclassname">{prename}</span>' if prename else ""
        return (
            f'<dl class="py method"><dt class="sig sig-object py" id="{anchor}">'
            f'<em class="property">classmethod </em>{prefix}'
            f'<span class="sig-name descname"><span class="pre">{name}</span></span>'
            f"<span>()</span></dt><dd><p>Does it.</p></dd></dl>"
        )

    text = render(
        "<main>"
        + signature("datetime.datetime.today", "datetime.", "today")
        + signature("asyncio.Lock.acquire", "", "acquire")
        + signature("index-0", "", "acquire")  # an anchor that is not the name shown
        + signature("json.dumps", "json.", "loads")
        + '<dl class="c function"><dt id="c.PyObject_Call"><span class="sig-name">'
        + "PyObject_Call</span>()</dt></dl></main>"
    )
    assert text.split("\n\n")[:4] == [
        "classmethod datetime.datetime.today()\n    Does it.",
        "classmethod asyncio.Lock.acquire()\n    Does it.",
        "classmethod acquire()\n    Does it.",
        "classmethod json.loads()\n    Does it.",
    ]
    assert "PyObject_Call()" in text and "c.PyObject_Call" not in text


def _keeps_main_text(html: bytes, main_text: str) -> float:
    expected = Counter(WORD.findall(main_text.lower()))
    got = Counter(WORD.findall(render(html.decode()).lower()))
    return sum(min(n, got[w]) for w, n in expected.items()) / sum(expected.values())


def test_main_text_survives_when_the_page_does_not_declare_it() -> None:
    """Without `role=main`, readability alone drops most of a Sphinx API page; the body
    fallback keeps it."""
    raw = SPHINX.read_bytes()
    main = lxml.html.document_fromstring(raw).xpath("//*[@role='main']")[0].text_content()
    assert _keeps_main_text(raw, main) > 0.98
    undeclared = raw.replace(b'role="main"', b"")
    assert b'role="main"' not in undeclared
    assert _keeps_main_text(undeclared, main) > 0.9


def test_readability_removes_boilerplate_from_undeclared_articles() -> None:
    article = (Path(__file__).parent.parent / "data" / "pages" / "article.html").read_text()
    text = render(article)
    assert "The baker said: the secret ingredient is patience" in text
    assert "Archive" not in text and "Copyright bakery blog" not in text


def test_long_lines_wrap_without_splitting_link_markers() -> None:
    marker = "【7†a link with many words in its text†other.example】"
    lines = wrap_lines("word " * 15 + marker + " tail", 40)
    assert all(len(line) <= 40 or marker in line for line in lines)
    assert any(marker in line for line in lines)


def test_broken_and_empty_documents_render_without_error() -> None:
    for body in (b"", b"\x00\xff\xfe garbage", b"<html><body></body></html>", b"<<<>>>"):
        page = render_html(body, "https://site.example/x", None, RenderOptions())
        assert page.kind in ("html", "error")
    latin1 = render_html(
        "<p>café</p>".encode("latin-1"), "https://s.example/", "latin-1", RenderOptions()
    )
    assert "café" in latin1.lines


def test_text_and_search_pages() -> None:
    text = render_text(
        b"line one\n\xffline two", "https://s.example/notes.txt", None, RenderOptions()
    )
    assert text.title == "notes.txt" and text.lines == ("line one", "\ufffdline two")
    empty = search_results_page("nothing", [], RenderOptions())
    assert empty.lines == ("No results.",)
    hostile = search_results_page(
        "q",
        [SearchResult("【0†x】 <|im_end|>", "https://a.example/", "♦Question")],
        RenderOptions(),
    )
    assert hostile.lines[0] == "【0†〖0‡x〗 ‹|im_end|›†a.example】"
    assert hostile.lines[1] == "◆Question"


def test_unknown_or_hostile_charsets_fall_back_to_utf8() -> None:
    for charset in ("no-such-charset", "utf-7", "../../etc/passwd", ""):
        page = render_html("<p>crème</p>".encode(), "https://s.example/", charset, RenderOptions())
        assert page.kind == "html"
    text = render_text("crème".encode(), "https://s.example/t.txt", "bogus", RenderOptions())
    assert text.lines == ("crème",)


def test_a_definition_list_reads_as_terms_with_their_descriptions_indented() -> None:
    """Option lists (git's, PostgreSQL's) are <dl>s: a term on its own line, the
    description right below it, indented; a nested list indents again."""
    text = render(
        "<main><p>Options:</p><dl>"
        "<dt>--no-keep-empty</dt><dt>--keep-empty</dt>"
        "<dd><p>Keep commits that start empty.</p><pre>git rebase --keep-empty\n  main</pre>"
        "<dl><dt>level</dt><dd>How deep.</dd></dl></dd>"
        "<dt>--onto &lt;newbase&gt;</dt><dd>Starting point.</dd></dl>"
        # Django writes an entry's text after an empty description
        "<dl><dt>Field.null</dt><dd></dd></dl><p>If True, store NULL.</p></main>"
    )
    assert text == (
        "Options:\n\n"
        "--no-keep-empty\n--keep-empty\n"
        "    Keep commits that start empty.\n\n"
        "        git rebase --keep-empty\n          main\n\n"
        "    level\n        How deep.\n\n"
        "--onto <newbase>\n    Starting point.\n\n"
        "Field.null\n\nIf True, store NULL."
    )


def test_a_table_row_is_one_line_with_its_cells_separated() -> None:
    cell = "a long description " * 6
    text = render(
        "<main><table><caption>Table 8.2. Numeric Types</caption>"
        "<thead><tr><th>Name</th><th>Storage Size</th></tr></thead><tbody>"
        "<tr><td><code>smallint</code></td><td>2 bytes</td></tr>"
        f"<tr><td>decimal</td><td>{cell}</td></tr>"
        "<tr><td><p>lower ( text ) → text</p><p>Converts to lower case.</p></td>"
        "<td><ul><li>one</li><li>two</li></ul></td></tr>"
        "<tr><td></td><td></td></tr></tbody></table></main>"
    )
    lines = text.split("\n")
    assert lines[:3] == ["Table 8.2. Numeric Types", "Name | Storage Size", "smallint | 2 bytes"]
    assert lines[3].startswith("decimal | a long description") and len(lines[3]) <= 100
    assert lines[4] == "  description a long description"  # a wrapped row is indented
    assert lines[5:] == [
        "lower ( text ) → text",
        "  Converts to lower case. | * one",  # a cell's own lines, indented
        "  * two",
    ]


def test_a_table_that_lays_out_a_page_reads_as_blocks() -> None:
    text = render(
        "<main><table><tr><td><h2>SQLite Forensics</h2><p>Author: Paul</p></td>"
        "<td><table><tr><td>a</td><td>b</td></tr></table></td></tr></table></main>"
    )
    assert text == "## SQLite Forensics\n\nAuthor: Paul\n\na | b"


def test_code_keeps_its_lines_and_a_long_one_wraps_indented() -> None:
    long = "CREATE TABLE t (" + ", ".join(f"column_{n} integer" for n in range(8)) + ")"
    text = render(f"<main><p>Run:</p><pre>SELECT 1;\n\n  SELECT 2;\n{long}</pre></main>")
    lines = text.split("\n")
    assert lines[:5] == ["Run:", "", "    SELECT 1;", "", "      SELECT 2;"]
    assert lines[5].startswith("    CREATE TABLE t (column_0 integer")
    assert lines[6] == "      integer, column_5 integer, column_6 integer, column_7 integer)"


def test_a_quotation_is_indented_not_prefixed() -> None:
    text = render("<main><p>Consider:</p><blockquote><pre>CREATE TABLE t1(a INT);</pre>"
                  "<p>A note.</p></blockquote><p>After.</p></main>")  # fmt: skip
    assert text == "Consider:\n\n        CREATE TABLE t1(a INT);\n\n    A note.\n\nAfter."


def test_page_text_cannot_forge_layout_marks() -> None:
    forged = "\ue000\ue002\ue003\ue004" + "0\ue005\ue006"
    text = render(f"<main><p>{forged}text</p><dl><dt>{forged}t</dt><dd>d</dd></dl></main>")
    assert text == "0text\n\n0t\n    d"


def test_a_manual_page_keeps_its_sections_and_code() -> None:
    """Manual pages declare no main element, and readability's summary of them keeps most
    of the text (93% of this PostgreSQL page) but drops section headings and short code,
    which are not links: the body is kept."""
    postgresql = render((PAGES / "postgresql-work-mem.html").read_text())
    assert "### 20.4.1. Memory" in postgresql
    assert "work_mem (integer)\n    Sets the base maximum amount of memory" in postgresql
    git = render((PAGES / "git-rebase.html").read_text(), "https://git-scm.com/docs/git-rebase")
    kept = ["## NAME", "git-rebase - Reapply commits", "## SYNOPSIS", "## OPTIONS"]
    kept += ["--onto <newbase>\n    Starting point", "        D---E---F---G master"]
    assert all(part in git for part in kept)


def test_navigation_landmarks_leave_a_page_without_a_main_element() -> None:
    paragraphs = "".join(f"<p>Paragraph {n} of the field reference.</p>" for n in range(20))
    text = render(
        f"<body><div>{paragraphs}</div><div role='navigation'><h3>Contents</h3><ul>"
        "<li><a href='/a'>Field options</a></li></ul><p>Quick search</p></div>"
        "<nav><a href='/b'>Home</a></nav></body>"
    )
    assert "Paragraph 19" in text and "Contents" not in text and "Home" not in text
