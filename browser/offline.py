"""The offline web: pages stored in SQLite under their canonical URLs, searched with FTS5.

One file holds everything (`pages` with zlib-compressed bodies, `pages_fts` for bm25
search); `browser.corpus` builds it. `OfflineWeb` is both a SearchEngine and a Fetcher, so
clicking, scrolling and quoting behave exactly as on the live web.
"""

import asyncio
import re
import sqlite3
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urldefrag

from webgpt.browser.errors import CorpusError, FetchError
from webgpt.browser.fetch import Document, Fetcher
from webgpt.browser.search.base import SearchResult
from webgpt.infra.settings import webgpt_home

SCHEMA = """
CREATE TABLE pages (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    content_type TEXT NOT NULL,
    source TEXT NOT NULL,
    body BLOB NOT NULL              -- zlib-compressed document as served
);
-- A row per section of a page (browser.corpus.sections); page is pages.id.
CREATE VIRTUAL TABLE pages_fts USING fts5(
    title, text, page UNINDEXED, tokenize = 'porter unicode61'
);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_QUERY_TERMS = 32


def default_store_path() -> Path:
    return webgpt_home() / "offline-web.sqlite"


def fts_query(text: str) -> str | None:
    """An FTS5 query matching any word of free text, with no FTS5 syntax left in it."""
    words = _WORD.findall(text.lower())[:_MAX_QUERY_TERMS]
    if not words:
        return None
    return " OR ".join(f'"{word}"' for word in dict.fromkeys(words))


@dataclass(frozen=True)
class StoredPage:
    url: str
    title: str
    content_type: str
    source: str


class OfflineWeb:
    """Search and fetch over a built offline-web file (read-only)."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        if not self.path.is_file():
            raise CorpusError(f"no offline web at {self.path}; build it with `webgpt corpus build`")
        try:
            self._db = sqlite3.connect(
                f"file:{self.path}?mode=ro", uri=True, check_same_thread=False
            )
            self._db.execute("SELECT count(*) FROM pages_fts WHERE pages_fts MATCH 'a'")
        except sqlite3.DatabaseError as error:
            raise CorpusError(f"{self.path} is not an offline-web file: {error}") from error
        try:
            self._db.execute("SELECT page FROM pages_fts LIMIT 0")
        except sqlite3.DatabaseError:
            raise CorpusError(
                f"{self.path} indexes whole pages, not their sections; rebuild it with "
                "`webgpt corpus build`"
            ) from None
        self._lock = threading.Lock()

    def page_count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM pages").fetchone()[0])

    def pages(self) -> list[StoredPage]:
        """Every stored page (without its body), in insertion order."""
        with self._lock:
            rows = self._db.execute(
                "SELECT url, title, content_type, source FROM pages ORDER BY id"
            ).fetchall()
        return [StoredPage(*row) for row in rows]

    def body(self, url: str) -> bytes | None:
        """The stored document of exactly this URL."""
        with self._lock:
            row = self._db.execute("SELECT body FROM pages WHERE url = ?", (url,)).fetchone()
        return None if row is None else zlib.decompress(row[0])

    def search_sync(self, query: str, count: int) -> list[SearchResult]:
        match = fts_query(query)
        if match is None:
            return []
        with self._lock:
            # A page ranks by its best section; the bare column of a min() aggregate comes
            # from the row that holds the minimum (SQLite), so `section` is that one.
            rows = self._db.execute(
                "SELECT p.url, p.title, best.section FROM ("
                "  SELECT page, rowid AS section, min(rank) AS score FROM pages_fts"
                "  WHERE pages_fts MATCH ? AND rank MATCH 'bm25(4.0, 1.0)'"
                "  GROUP BY page ORDER BY score LIMIT ?"
                ") AS best JOIN pages p ON p.id = best.page ORDER BY best.score",
                (match, count),
            ).fetchall()
        return [self._result(match, *row) for row in rows]

    def _result(self, match: str, url: str, title: str, section: int) -> SearchResult:
        """A page found by its best section: past the page's first section, its link opens
        the page where the snippet's passage starts, as a search engine's deep link does,
        rather than at a long page's top."""
        snippet = self._snippet(match, section)
        if self._first_section(section):
            return SearchResult(title, url, snippet)
        passage = snippet.removeprefix("…").split("…")[0].strip()
        return SearchResult(title, url, snippet, passage=passage or None)

    def _snippet(self, match: str, section: int) -> str:
        with self._lock:
            row = self._db.execute(
                "SELECT snippet(pages_fts, 1, '', '', ' … ', 40) FROM pages_fts "
                "WHERE pages_fts MATCH ? AND rowid = ?",
                (match, section),
            ).fetchone()
        return " ".join(row[0].split()) if row else ""

    def _first_section(self, section: int) -> bool:
        """Whether the section opens its page: a page's sections are written in order,
        one after another (browser.corpus.build_corpus), so the row before it is
        another page's, or none."""
        with self._lock:
            rows = self._db.execute(
                "SELECT rowid, page FROM pages_fts WHERE rowid IN (?, ?)", (section - 1, section)
            ).fetchall()
        pages = dict(rows)
        return pages.get(section - 1) != pages.get(section)

    async def search(self, query: str, count: int) -> list[SearchResult]:
        return await asyncio.to_thread(self.search_sync, query, count)

    def lookup(self, url: str) -> Document | None:
        url = urldefrag(url)[0]
        candidates = [url, url.rstrip("/"), url + "/", url.rstrip("/") + "/index.html"]
        if url.startswith("http://"):
            candidates += ["https://" + c[len("http://") :] for c in candidates]
        with self._lock:
            for candidate in candidates:
                row = self._db.execute(
                    "SELECT url, content_type, body FROM pages WHERE url = ?", (candidate,)
                ).fetchone()
                if row is not None:
                    stored_url, content_type, body = row
                    return Document(
                        url=stored_url,
                        content_type=content_type,
                        charset="utf-8" if content_type.startswith("text/") else None,
                        body=zlib.decompress(body),
                    )
        return None

    async def fetch(self, url: str) -> Document:
        document = await asyncio.to_thread(self.lookup, url)
        if document is None:
            raise FetchError(f"{url} is not in the offline web")
        return document

    def close(self) -> None:
        self._db.close()


class OfflineFirstFetcher:
    """Serves pages from the offline web, and other URLs through `fallback` when given."""

    def __init__(self, offline: OfflineWeb, fallback: Fetcher | None) -> None:
        self._offline = offline
        self._fallback = fallback

    async def fetch(self, url: str) -> Document:
        document = await asyncio.to_thread(self._offline.lookup, url)
        if document is not None:
            return document
        if self._fallback is None:
            raise FetchError(f"{url} is not in the offline web")
        return await self._fallback.fetch(url)
