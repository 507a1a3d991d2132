"""Fakes that implement the browser's Protocols (SearchEngine, Fetcher) over local files."""

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from webgpt.browser.errors import FetchError
from webgpt.browser.fetch import Document
from webgpt.browser.search.base import SearchResult

PAGES = Path(__file__).parent.parent / "data" / "pages"
SITE = "https://site.example/"


@dataclass
class FixtureWeb:
    """Serves tests/data/pages/NAME.html at https://site.example/NAME.html and finds pages
    whose name contains the query; counts fetches so tests can see the cache at work."""

    pages: Path = PAGES
    delay_s: float = 0.0
    fetches: dict[str, int] = field(default_factory=dict)

    async def fetch(self, url: str) -> Document:
        self.fetches[url] = self.fetches.get(url, 0) + 1
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if not url.startswith(SITE):
            raise FetchError(f"{url} is not on the fixture site")
        path = self.pages / url[len(SITE) :]
        if not path.is_file():
            raise FetchError(f"no fixture page {path.name}")
        return Document(url=url, content_type="text/html", charset="utf-8", body=path.read_bytes())

    async def search(self, query: str, count: int) -> list[SearchResult]:
        names = sorted(p.stem for p in self.pages.glob("*.html") if query.lower() in p.stem)
        return [
            SearchResult(
                title=f"The {name} page", url=f"{SITE}{name}.html", snippet=f"About {name}."
            )
            for name in names
        ][:count]
