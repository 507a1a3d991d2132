"""Plain-text layout of the blocks html2text writes as Markdown: tables, definition lists
and quotations, as manuals use them (option lists, parameter tables, indented notes).

The renderer calls `mark_blocks` on the main content after links have become markers, hands
the tree to html2text, and gives its text to `lay_out`, which the display wrapping reads:
- a data table becomes one line per row, cells joined by ` | `; a row longer than the
  display wraps under a two-space indent, so a wrapped row never reads as a new row, and a
  cell's own line breaks (paragraphs, list items, code lines) go on indented lines too.
  A table that holds a heading or another table lays a page out; its cells read as blocks;
- a definition list writes each term on its own line and its description right below it,
  indented: `--onto <newbase>` then `    Starting point at which ...`;
- a quotation (`<blockquote>`) is indented the same way rather than prefixed with `> `;
- a code block (`<pre>`) keeps its lines; one longer than the display wraps under a
  two-space indent, as a table row does.

html2text sees placeholders and marks in private-use characters that page text cannot
carry (`strip_marks` removes them from it first).
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass

import lxml.etree
import lxml.html

_INDENT = "    "  # of a description or a quotation, per level
_HANGING = 2  # extra indent of a wrapped table row or code line, and of a cell's further lines
_DESCRIPTION = "\ue000"  # starts a <dd>: its first line follows its term directly
_QUOTATION = "\ue001"  # starts a <blockquote>
_END = "\ue002"  # ends either
_TERM = "\ue003"  # starts a <dt>
_TABLE = "\ue004"  # "\ue004<n>\ue005" stands for table n
_TABLE_END = "\ue005"
_CODE = "\ue006"  # starts a line of a <pre>: a wrapped code line takes a hanging indent
MARK_RANGE = "\ue000-\ue006"
_MARKS = re.compile(f"[{MARK_RANGE}]")
_TABLE_PLACEHOLDER = re.compile("\ue004(\\d+)\ue005")
_HEADING_SPACE = re.compile(r"^(#+)  +")  # "#  Title" where a heading's text starts with a space
# Elements that end a line inside a table cell.
_CELL_BLOCKS = frozenset(
    {"p", "div", "br", "li", "dt", "dd", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "tr",
     "table", "ul", "ol", "dl", "blockquote", "section", "figure", "figcaption", "caption",
     "hr", "address", "header", "footer", "details", "summary"}
)  # fmt: skip
_LAYOUT_TABLE = "./descendant::*[self::table or self::h1 or self::h2 or self::h3 or self::h4]"


def strip_marks(text: str) -> str:
    """Page text without the private-use characters this module marks blocks with."""
    return _MARKS.sub("", text)


@dataclass(frozen=True)
class Line:
    """A line of laid-out text and the extra indent its wrapped continuations take."""

    text: str
    hanging: int = 0


def mark_blocks(content: lxml.html.HtmlElement) -> list[list[Line]]:
    """Replace data tables by placeholders (their lines are returned, in placeholder
    order), unwrap layout tables, and mark definition lists and quotations for `lay_out`."""
    for table in content.xpath(".//table"):
        if table.xpath(_LAYOUT_TABLE):
            _unwrap_table(table)
    tables: list[list[Line]] = []
    for table in content.xpath(".//table"):
        placeholder = lxml.etree.Element("p")
        placeholder.text = f"{_TABLE}{len(tables)}{_TABLE_END}"
        placeholder.tail = table.tail
        tables.append(_table_lines(table))
        parent = table.getparent()
        if parent is not None:
            parent.replace(table, placeholder)
    for pre in content.iter("pre"):
        code = pre.text_content()
        for child in list(pre):
            pre.remove(child)
        pre.text = "\n".join(_CODE + line for line in code.split("\n"))
    for element in content.iter("dl", "dt", "dd", "blockquote"):
        mark = {"dt": _TERM, "dd": _DESCRIPTION, "blockquote": _QUOTATION}.get(element.tag)
        element.tag = "div"  # html2text's own dl and blockquote forms are Markdown
        if mark is None:
            continue
        element.text = mark + (element.text or "")
        if mark == _TERM:
            continue
        if len(element):
            last = element[-1]
            last.tail = (last.tail or "") + _END
        else:
            element.text += _END
    return tables


def lay_out(text: str, tables: list[list[Line]]) -> Iterator[Line]:
    """html2text's output with the marks of `mark_blocks` turned into indents and the
    tables put back."""
    depth = 0
    after_term = False  # the last line with text was a definition list's term
    attach = False  # the next line with text goes right under that term
    blank = False  # a blank line is due before the next line with text
    for raw in text.split("\n"):
        body = raw.lstrip()
        leading = raw[: len(raw) - len(body)]
        term = False
        code = body.startswith(_CODE)
        if code:  # a code line keeps its own indent
            leading += body[1 : len(body) - len(body[1:].lstrip())]
            body = body[1:].lstrip()
        while body[:1] in (_DESCRIPTION, _QUOTATION, _END, _TERM):
            if body[0] == _END:
                depth = max(0, depth - 1)
                attach = False  # an empty description: what follows is not its text
            elif body[0] == _TERM:
                term = True
            else:
                depth += 1
                attach = attach or (body[0] == _DESCRIPTION and after_term)
            body = body[1:].lstrip()  # the element's own leading space
        indent = _INDENT * depth + leading
        # Marks later in a line take effect on the lines after it.
        depth += body.count(_DESCRIPTION) + body.count(_QUOTATION)
        depth = max(0, depth - body.count(_END))
        table = _TABLE_PLACEHOLDER.search(body)
        if table is None:
            body = strip_marks(body)
        if not body.strip():
            blank = True
            continue
        if blank and not attach and not (term and after_term):
            yield Line("")
        blank = attach = False
        after_term = term
        if code:
            yield Line(indent + body, _HANGING)
        elif table is None:
            yield Line(indent + _HEADING_SPACE.sub(r"\1 ", body))
        else:
            yield from _place_table(indent, body, table, tables)


def _place_table(
    indent: str, body: str, match: re.Match[str], tables: list[list[Line]]
) -> Iterator[Line]:
    before = strip_marks(body[: match.start()])
    after = strip_marks(body[match.end() :]).strip()
    lines = tables[int(match[1])]
    for number, line in enumerate(lines):
        prefix = before if number == 0 else " " * len(before)
        yield Line(indent + prefix + line.text, line.hanging)
    if after:
        yield Line(indent + after)


def _unwrap_table(table: lxml.html.HtmlElement) -> None:
    """A table that lays out a page: its own rows and cells become plain blocks."""
    own = table.xpath("./tr | ./*/tr | ./tr/td | ./tr/th | ./*/tr/td | ./*/tr/th")
    for element in [table, *table.xpath("./thead | ./tbody | ./tfoot"), *own]:
        element.tag = "div"
    for caption in table.xpath("./caption"):
        caption.tag = "p"


def _table_lines(table: lxml.html.HtmlElement) -> list[Line]:
    lines: list[Line] = []
    for caption in table.xpath("./caption"):
        lines.extend(Line(text) for text in _cell_lines(caption))
    for row in table.xpath("./tr | ./*/tr"):
        cells = ["\n".join(_cell_lines(cell)) for cell in row.xpath("./td | ./th")]
        if not any(cells):
            continue
        first, *rest = " | ".join(cells).split("\n")
        lines.append(Line(first, _HANGING))
        lines.extend(Line(" " * _HANGING + text) for text in rest)
    return lines


def _cell_lines(cell: lxml.html.HtmlElement) -> list[str]:
    """A cell's text, a line per block, whitespace collapsed except in code."""
    lines: list[str] = []
    current: list[str] = []

    def flush() -> None:
        text = " ".join("".join(current).split())
        if text:
            lines.append(text)
        current.clear()

    def walk(element: lxml.html.HtmlElement) -> None:
        block = element.tag in _CELL_BLOCKS
        if block:
            flush()
        if element.tag == "pre":
            code = element.text_content().replace("\u00a0", " ")
            lines.extend(line.rstrip() for line in code.split("\n") if line.strip())
        else:
            if element.tag == "li":
                current.append("* ")
            current.append(element.text or "")
            for child in element:
                if isinstance(child.tag, str):
                    walk(child)
                else:
                    current.append(child.tail or "")
        if block:
            flush()
        current.append(element.tail or "")

    current.append(cell.text or "")
    for child in cell:
        if isinstance(child.tag, str):
            walk(child)
    flush()
    return lines
