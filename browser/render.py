"""Turn documents into Pages: HTML (WebGPT Appendix A), plain text, errors, search results.

Everything here is a pure function of its arguments so it can run in a killable worker
process (browser.workers) and be tested with golden files.

HTML pipeline, in order:
1. parse with lxml; drop scripts, styles, hidden elements and other non-text parts;
2. pick the main content: the element the page declares (`<main>`, `[role=main]`, a single
   `<article>`) when it holds a fair share of the text, else readability's summary where
   it dropped mostly links, else the body without its navigation (readability alone drops
   most of the text on about a third of Sphinx pages, and headings, code and option lists
   of manuals; docs/rendering.md has the measurements);
3. write each Sphinx Python signature with the qualified name its anchor holds;
4. neutralise our marker characters in the page's own text, then turn links into
   `【id†text†domain】` markers, images into `[Image: alt]`, sup/sub into `^`/`_`;
5. mark definition lists, tables, quotations and code for their plain-text layout
   (browser.layout), html2text for the rest, then wrap long lines without splitting a link
   marker.
"""

import codecs
import copy
import re
import textwrap
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from urllib.parse import urldefrag, urljoin, urlsplit

import html2text
import lxml.etree
import lxml.html
from readability import Document

from webgpt.browser.layout import MARK_RANGE, Line, lay_out, mark_blocks, strip_marks
from webgpt.browser.page import Link, Page, domain_of, link_marker, neutralize
from webgpt.browser.search.base import SearchResult
from webgpt.browser.text_fragments import with_text_fragment

WRAP_WIDTH = 100
# The declared main element must hold at least this share of the body's text to be trusted.
DECLARED_MAIN_MIN_SHARE = 0.25
# Readability's summary must keep at least this share of the body's text, and at most
# this share of the text it drops may be outside links.
READABILITY_MIN_SHARE = 0.5
DROPPED_MAX_UNLINKED_SHARE = 0.5
# Navigation landmarks (<nav>, role=navigation) leave the body unless they hold this much
# of its text (a page that is all navigation keeps it).
NAVIGATION_MAX_SHARE = 0.5

_DROPPED_ELEMENTS = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "canvas",
    "iframe",
    "object",
    "embed",
    "head",
    "button",
    "select",
    "input",
    "textarea",
)
# Inline wrappers that carry no meaning for plain text; unwrapping them before html2text
# cuts its work about threefold on highlighted code (docs/rendering.md).
_UNWRAPPED_TAGS = (
    "span",
    "font",
    "em",
    "strong",
    "b",
    "i",
    "u",
    "s",
    "small",
    "big",
    "mark",
    "cite",
    "abbr",
    "dfn",
    "var",
    "kbd",
    "samp",
    "tt",
    "code",
    "bdi",
    "bdo",
    "ins",
    "del",
    "time",
    "data",
    "q",
    "label",
)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
# Cheap pre-check for neutralize() and strip_marks(): the characters they can change.
_NEEDS_NEUTRALIZING = re.compile(f"[【】†♦■━<\\[{MARK_RANGE}]")
_PROTECTED_MARKER = re.compile(r"【[^】]*】")
_LIST_ITEM = re.compile(r" *(?:[*+-]|\d+\.) +(?=\S)")
_NBSP_MARK = "\x00"


@dataclass(frozen=True)
class RenderOptions:
    # Lower-case, without a trailing dot (WebOptions.from_env normalises the setting).
    blocked_domains: frozenset[str] = frozenset({"reddit.com", "quora.com"})
    wrap_width: int = WRAP_WIDTH


def is_blocked(domain: str, blocked_domains: Collection[str]) -> bool:
    """True when domain is a blocked domain or one of its subdomains. A trailing dot (the
    fully qualified "reddit.com.", which resolves the same) does not escape it."""
    domain = domain.lower().rstrip(".")
    return any(domain == d or domain.endswith("." + d) for d in blocked_domains)


def render_html(body: bytes, url: str, charset: str | None, options: RenderOptions) -> Page:
    """Render an HTML document as the policy sees it."""
    if charset is not None:
        # The header's charset wins over <meta>; lxml only knows iconv's names, and a
        # hostile server can send any name, so decode here and hand lxml UTF-8.
        body = body.decode(_codec(charset), errors="replace").encode("utf-8")
        charset = "utf-8"
    parser = lxml.html.HTMLParser(encoding=charset, remove_comments=True, remove_pis=True)
    try:
        doc = lxml.html.document_fromstring(body, parser=parser, base_url=url)
    except (lxml.etree.ParserError, ValueError):
        return error_page(url, "The page has no readable content.")
    base = _base_url(doc, url)
    title = _title_of(doc) or _last_path_segment(url)
    scripted = _runs_scripts(doc)
    _drop_non_text(doc)
    content = _main_content(doc, base)
    if content is None:
        return Page(url=url, title=title, lines=(), kind="html", scripted=scripted)
    qualify_signatures(content)
    # Unwrapping first merges the many small text nodes of highlighted code, so the
    # per-node work below touches far fewer nodes.
    lxml.etree.strip_tags(content, *_UNWRAPPED_TAGS)
    links = _convert_inline(content, base, domain_of(url), options)
    tables = mark_blocks(content)
    for element in content.iter(lxml.etree.Element):
        element.attrib.clear()
    text = _html_to_text(lxml.html.tostring(content, encoding="unicode"))
    lines = _wrap(lay_out(text, tables), options.wrap_width)
    return Page(url=url, title=title, lines=lines, links=links, scripted=scripted)


# <script type> values a browser runs; anything else (JSON-LD, templates) is data.
_SCRIPT_TYPES = frozenset(
    {"", "module", "text/javascript", "application/javascript", "text/ecmascript",
     "application/ecmascript", "text/jscript", "text/livescript"}
)  # fmt: skip


def _runs_scripts(doc: lxml.html.HtmlElement) -> bool:
    """True when the document has a script a browser would run: loaded by src or inline."""
    for script in doc.iter("script"):
        kind = (script.get("type") or "").split(";")[0].strip().lower()
        if kind in _SCRIPT_TYPES and (script.get("src") or (script.text or "").strip()):
            return True
    return False


def render_text(body: bytes, url: str, charset: str | None, options: RenderOptions) -> Page:
    """Plain text is shown as it is (neutralised and wrapped)."""
    text = neutralize(body.decode(_codec(charset), errors="replace"))
    return Page(
        url=url,
        title=_last_path_segment(url),
        lines=wrap_lines(text, options.wrap_width),
        kind="text",
    )


def _codec(charset: str | None) -> str:
    """A Python codec for a declared charset; unknown names fall back to UTF-8."""
    try:
        return codecs.lookup(charset or "utf-8").name
    except LookupError:
        return "utf-8"


def error_page(url: str, message: str) -> Page:
    """What the policy sees when a page cannot be shown; the message is ours, not the page's."""
    return Page(url=url, title="Error", lines=wrap_lines(message, WRAP_WIDTH), kind="error")


def search_results_page(
    query: str, results: Sequence[SearchResult], options: RenderOptions
) -> Page:
    """`Search results for: <query>`: a link marker and snippet for each allowed result."""
    lines: list[str] = []
    links: dict[int, Link] = {}
    for result in results:
        domain = domain_of(result.url)
        # A search engine is a third party: a result that is not a web page (javascript:,
        # file:, data:) or has no host never becomes a link.
        web_page = result.url.lower().startswith(("http://", "https://"))
        if not web_page or not domain or is_blocked(domain, options.blocked_domains):
            continue
        link_id = len(links)
        title = neutralize(" ".join(result.title.split())) or domain
        url = (
            result.url if result.passage is None else with_text_fragment(result.url, result.passage)
        )
        links[link_id] = Link(link_id, url, title, domain)
        lines.append(link_marker(link_id, title, domain, page_domain=""))
        lines.extend(wrap_lines(neutralize(result.snippet), options.wrap_width))
        lines.append("")
    if not links:
        lines = ["No results."]
    return Page(
        url="",
        title=f"Search results for: {query}",
        lines=tuple(lines),
        links=links,
        kind="search",
    )


def wrap_lines(text: str, width: int) -> tuple[str, ...]:
    """Split text into display lines of at most width columns, never inside a link marker."""
    return _wrap((Line(line) for line in text.split("\n")), width)


def _wrap(lines: Iterable[Line], width: int) -> tuple[str, ...]:
    """Display lines: a long line wraps under its own indent plus its hanging indent; one
    blank line between blocks, none at either end."""
    wrapped: list[str] = []
    for line in lines:
        text = line.text.rstrip()
        if not text:
            if wrapped and wrapped[-1]:
                wrapped.append("")  # one blank line between blocks is enough
            continue
        if len(text) <= width:
            wrapped.append(text)
            continue
        item = _LIST_ITEM.match(text)  # a list item wraps under its text, not its bullet
        indent = " " * ((item.end() if item else len(text) - len(text.lstrip())) + line.hanging)
        protected = _PROTECTED_MARKER.sub(lambda m: m[0].replace(" ", _NBSP_MARK), text)
        for piece in textwrap.wrap(
            protected,
            width,
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        ):
            wrapped.append(piece.replace(_NBSP_MARK, " "))
    while wrapped and not wrapped[-1]:
        wrapped.pop()
    return tuple(wrapped)


_TEXT_LENGTH = lxml.etree.XPath("string-length(normalize-space(.))")


def text_length(element: lxml.html.HtmlElement) -> int:
    """Characters of text, whitespace runs counted once (computed in C by libxml2)."""
    return int(_TEXT_LENGTH(element))


def _base_url(doc: lxml.html.HtmlElement, url: str) -> str:
    base = doc.find(".//base[@href]")
    if base is None:
        return url
    return urljoin(url, str(base.get("href", "")))


def _title_of(doc: lxml.html.HtmlElement) -> str:
    for path in (".//title", ".//h1"):
        element = doc.find(path)
        if element is not None:
            title = " ".join("".join(element.itertext()).split())
            if title:
                return neutralize(title)
    return ""


def _last_path_segment(url: str) -> str:
    path = urlsplit(url).path.rstrip("/")
    return path.rsplit("/", 1)[-1] or domain_of(url) or url


def _drop_non_text(doc: lxml.html.HtmlElement) -> None:
    lxml.etree.strip_elements(doc, *_DROPPED_ELEMENTS, with_tail=False)
    # Hidden text is a classic place for instructions aimed at a model reading the page.
    for element in doc.xpath("//*[@hidden or @aria-hidden='true' or @style]"):
        style = element.get("style")
        hidden = style is None or _HIDDEN_STYLE.search(style)
        if hidden and element.getparent() is not None:
            element.drop_tree()


def _main_content(doc: lxml.html.HtmlElement, base: str) -> lxml.html.HtmlElement | None:
    body = doc.find(".//body")
    if body is None:
        body = doc
    body_length = text_length(body)
    if body_length == 0:
        return None
    declared = doc.xpath("//main | //*[@role='main']")
    if not declared:
        articles = doc.xpath("//article")
        declared = articles if len(articles) == 1 else []
    if declared and text_length(declared[0]) >= DECLARED_MAIN_MIN_SHARE * body_length:
        return declared[0]
    navigation = body.xpath(_NAVIGATION)
    if sum(text_length(n) for n in navigation) < NAVIGATION_MAX_SHARE * body_length:
        for element in navigation:
            element.drop_tree()
        body_length = text_length(body)
    try:
        summary = Document(copy.deepcopy(doc), url=base).summary(html_partial=True)
        readable = lxml.html.fragment_fromstring(summary, create_parent="div")
    except Exception:  # readability raises bare Exceptions on odd documents
        return body
    # Readability is for articles among boilerplate, and boilerplate is mostly links
    # (menus, related pages); on a manual (man pages, DocBook, SQLite's pages) it drops
    # code, tables and definition lists instead, which are not links, and the headings and
    # short code blocks among the text it keeps.
    kept = text_length(readable)
    dropped_unlinked = _unlinked_length(body) - _unlinked_length(readable)
    if (
        kept >= READABILITY_MIN_SHARE * body_length
        and dropped_unlinked <= DROPPED_MAX_UNLINKED_SHARE * (body_length - kept)
        and not _drops_structure(body, readable)
    ):
        return readable
    return body


_NAVIGATION = ".//nav | .//*[@role='navigation']"
_STRUCTURE = ".//h2 | .//h3 | .//h4 | .//h5 | .//h6 | .//pre"
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_TELLING_TEXT = 20  # characters of text that tell where a section's text went


def _drops_structure(body: lxml.html.HtmlElement, readable: lxml.html.HtmlElement) -> bool:
    """True when the summary keeps the text that follows a section heading or a code block
    of the body but not the heading or the code."""
    kept = " ".join(readable.text_content().split())
    for element in body.xpath(_STRUCTURE):
        own = " ".join(element.text_content().split())[: 2 * _TELLING_TEXT]
        if not own or own in kept:
            continue
        after = _text_after(element, body)
        if after and after in kept:
            return True
    return False


def _text_after(element: lxml.html.HtmlElement, root: lxml.html.HtmlElement) -> str:
    """The first run of text after element (not in it) long enough to tell where it went."""
    for text in _texts_after(element, root):
        text = " ".join(text.split())
        if len(text) >= _TELLING_TEXT:
            return text[: 2 * _TELLING_TEXT]
    return ""


def _texts_after(element: lxml.html.HtmlElement, root: lxml.html.HtmlElement) -> Iterator[str]:
    """The text after element in document order, to the next heading or the end of root."""
    node: lxml.html.HtmlElement | None = element
    while node is not None and node is not root:
        yield node.tail or ""
        for sibling in node.itersiblings():
            for event, descendant in lxml.etree.iterwalk(sibling, events=("start", "end")):
                if descendant.tag in _HEADINGS:
                    return
                if event == "start":
                    yield descendant.text or ""
                elif descendant is not sibling:
                    yield descendant.tail or ""
            yield sibling.tail or ""
        node = node.getparent()


def _unlinked_length(element: lxml.html.HtmlElement) -> int:
    """Characters of text outside links."""
    return text_length(element) - sum(text_length(link) for link in element.iter("a"))


# A Sphinx Python signature (<dt id="asyncio.Condition.acquire">) writes a method by its last
# part, "coroutine acquire()", and lets the nesting of <dl>s under "class asyncio.Condition"
# say whose it is; plain text loses the nesting, and a Find of "acquire(" lands in Lock's
# example above it. The anchor holds the qualified name, and the signature shows that.
_PYTHON_SIGNATURES = ".//dl[contains(concat(' ', normalize-space(@class), ' '), ' py ')]/dt[@id]"
_QUALIFIED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def qualify_signatures(content: lxml.html.HtmlElement) -> int:
    """Write each Python signature's name as its anchor's qualified name; how many."""
    qualified_count = 0
    for signature in content.xpath(_PYTHON_SIGNATURES):
        qualified = signature.get("id", "")
        names = signature.xpath("span[contains(@class, 'sig-name')]")
        if len(names) != 1 or not _QUALIFIED_NAME.fullmatch(qualified):
            continue
        name = names[0]
        if not qualified.endswith("." + name.text_content().strip()):
            continue  # an anchor that is not the name shown ("module-json", "index-0")
        for prename in signature.xpath("span[contains(@class, 'sig-prename')]"):
            prename.drop_tree()
        for child in list(name):
            name.remove(child)
        name.text = qualified
        qualified_count += 1
    return qualified_count


def _convert_inline(
    content: lxml.html.HtmlElement, base: str, page_domain: str, options: RenderOptions
) -> dict[int, Link]:
    """Neutralise text, then replace links, images, sup and sub by their text forms."""
    for element in content.iter():
        if element.text and _NEEDS_NEUTRALIZING.search(element.text):
            element.text = strip_marks(neutralize(element.text))
        if element.tail and _NEEDS_NEUTRALIZING.search(element.tail):
            element.tail = strip_marks(neutralize(element.tail))
    links: dict[int, Link] = {}
    page_url = urldefrag(base)[0]
    targets: dict[str, str] = {}  # href -> absolute URL; pages repeat the same hrefs a lot
    for element in list(content.iter("a", "img", "sup", "sub")):
        if element.tag == "img":
            alt = " ".join((element.get("alt") or "").split())
            _replace_with_text(element, f"[Image: {alt}]" if alt else "[Image]")
            continue
        if element.tag in ("sup", "sub"):
            text = "".join(element.itertext()).strip()
            if text and not _has_link(element):
                prefix = "^" if element.tag == "sup" else "_"
                _replace_with_text(element, prefix + text)
            continue
        text = " ".join("".join(element.itertext()).split())
        href = element.get("href")
        if href and href not in targets:
            targets[href] = urldefrag(urljoin(base, href))[0]
        target = targets[href] if href else ""
        domain = domain_of(target)
        usable = (
            text
            and target.startswith(("http://", "https://"))
            and target != page_url  # in-page anchors such as Sphinx's "¶"
            and not is_blocked(domain, options.blocked_domains)
        )
        if not usable:
            if text in ("¶", "#"):
                _replace_with_text(element, "")
            else:
                element.drop_tag()
            continue
        link_id = len(links)
        links[link_id] = Link(link_id, target, text, domain)
        _replace_with_text(element, link_marker(link_id, text, domain, page_domain))
    return links


def _has_link(element: lxml.html.HtmlElement) -> bool:
    return element.find(".//a") is not None


def _replace_with_text(element: lxml.html.HtmlElement, text: str) -> None:
    """Put text where element was (keeping its tail) and remove the element."""
    parent = element.getparent()
    if parent is None:
        return
    replacement = text + (element.tail or "")
    previous = element.getprevious()
    if previous is not None:
        previous.tail = (previous.tail or "") + replacement
    else:
        parent.text = (parent.text or "") + replacement
    parent.remove(element)


class _PlainText(html2text.HTML2Text):
    """html2text without Markdown escaping: the policy reads and quotes the page's own text,
    so "256." must stay "256." and "*args" must stay "*args"."""

    def handle_data(self, data: str, entity_char: bool = False) -> None:
        # entity_char is the only switch html2text has that skips escape_md_section.
        super().handle_data(data, entity_char=True)


def _html_to_text(html: str) -> str:
    converter = _PlainText()
    converter.body_width = 0
    converter.ignore_links = True
    converter.ignore_images = True
    converter.ignore_emphasis = True
    converter.unicode_snob = True
    converter.escape_snob = False
    converter.single_line_break = False
    text = str(converter.handle(html))
    return text.replace("\u00a0", " ")
