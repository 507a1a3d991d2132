"""Search engines: the offline web (browser.offline) and remote APIs (browser.search.remote)."""

from webgpt.browser.search.base import SearchEngine, SearchResult

__all__ = ["SearchEngine", "SearchResult"]
