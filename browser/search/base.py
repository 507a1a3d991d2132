"""What every search engine returns and the protocol it implements."""

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class SearchResult:
    title: str
    url: str
    snippet: str


class SearchEngine(Protocol):
    async def search(self, query: str, count: int) -> list[SearchResult]: ...
