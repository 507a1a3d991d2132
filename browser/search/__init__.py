"""Search engines: the offline web (browser.offline) and remote APIs (browser.search.remote)."""

from browser.search.base import SearchEngine, SearchResult

__all__ = ["SearchEngine", "SearchResult"]
