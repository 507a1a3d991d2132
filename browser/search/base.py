"""What every search engine returns and the protocol it implements."""

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class SearchResult:
    title: str
    url: str
    snippet: str
    # Where on the page the snippet's passage starts, for a long page found past its top:
    # its link opens the page there (browser.text_fragments). None: at the page's top.
    passage: str | None = None


class SearchEngine(Protocol):
    async def search(self, query: str, count: int) -> list[SearchResult]: ...
