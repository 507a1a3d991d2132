"""Search engines behind HTTP APIs: SearXNG (JSON API), Brave Search API, Bing Web Search v7.

Their endpoints are chosen by the operator, not by the model, so they are reached with a
plain client (a self-hosted SearXNG usually sits on a private network) with a timeout.
Every failure becomes a SearchError with a message the policy can read on its error page.
"""

import html
import re
from dataclasses import dataclass, field
from typing import Any

import httpx

from webgpt.browser.errors import RateLimited, SearchError
from webgpt.browser.search.base import SearchResult

_TAGS = re.compile(r"<[^>]{0,200}>")
DEFAULT_TIMEOUT_S = 10.0


def _plain(text: object) -> str:
    """Snippets of Brave and Bing carry <strong> highlights and entities."""
    return " ".join(html.unescape(_TAGS.sub("", str(text or ""))).split())


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "")
    try:
        return float(value)
    except ValueError:
        return None


@dataclass
class JsonSearchApi:
    """Shared GET-JSON-with-errors plumbing of the remote engines."""

    name: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    transport: httpx.AsyncBaseTransport | None = None
    _client: httpx.AsyncClient | None = field(default=None, init=False, repr=False)

    async def get_json(self, url: str, params: dict[str, Any], headers: dict[str, str]) -> Any:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=self.timeout_s, transport=self.transport, trust_env=False
            )
        try:
            response = await self._client.get(url, params=params, headers=headers)
        except httpx.TimeoutException as error:
            raise SearchError(f"{self.name} did not answer within {self.timeout_s:g} s") from error
        except httpx.HTTPError as error:
            raise SearchError(f"{self.name} is unreachable: {error}") from error
        if response.status_code == 429:
            raise RateLimited(f"{self.name} rate limit reached", _retry_after(response))
        if response.status_code >= 400:
            raise SearchError(
                f"{self.name} answered HTTP {response.status_code}{_detail(response)}"
            )
        try:
            return response.json()
        except ValueError as error:
            raise SearchError(f"{self.name} answered with something that is not JSON") from error

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _detail(response: httpx.Response) -> str:
    """The error text Brave and Bing put in their JSON error bodies, when present."""
    try:
        body = response.json()
    except ValueError:
        return ""
    if not isinstance(body, dict):
        return ""
    if isinstance(body.get("error"), dict):  # Brave
        return f": {body['error'].get('detail') or body['error'].get('code', '')}"
    errors = body.get("errors")
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):  # Bing
        return f": {errors[0].get('message') or errors[0].get('code', '')}"
    return ""


def _results(items: Any, title_key: str, snippet_key: str, count: int) -> list[SearchResult]:
    if not isinstance(items, list):
        raise SearchError("the search engine's answer has no result list")
    results = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("url"), str):
            continue
        results.append(
            SearchResult(_plain(item.get(title_key)), item["url"], _plain(item.get(snippet_key)))
        )
    return results[:count]


@dataclass
class SearxngSearch(JsonSearchApi):
    """A SearXNG instance with `search.formats: [json]` enabled in its settings."""

    base_url: str = "http://127.0.0.1:8888"
    name: str = "SearXNG"

    async def search(self, query: str, count: int) -> list[SearchResult]:
        body = await self.get_json(
            self.base_url.rstrip("/") + "/search",
            {"q": query, "format": "json", "safesearch": 1},
            {"Accept": "application/json"},
        )
        return _results(
            body.get("results") if isinstance(body, dict) else None, "title", "content", count
        )


@dataclass
class BraveSearch(JsonSearchApi):
    """Brave Search API (web search endpoint)."""

    api_key: str = ""
    base_url: str = "https://api.search.brave.com"
    name: str = "Brave Search"

    async def search(self, query: str, count: int) -> list[SearchResult]:
        if not self.api_key:
            raise SearchError("Brave Search needs an API key (WEBGPT_BRAVE_API_KEY)")
        body = await self.get_json(
            self.base_url.rstrip("/") + "/res/v1/web/search",
            {"q": query, "count": min(count, 20)},
            {"Accept": "application/json", "X-Subscription-Token": self.api_key},
        )
        web = body.get("web") if isinstance(body, dict) else None
        if web is None:  # Brave omits "web" when nothing matched
            return []
        return _results(
            web.get("results") if isinstance(web, dict) else None, "title", "description", count
        )


@dataclass
class BingSearch(JsonSearchApi):
    """The Bing Web Search v7 API, or any service that speaks its format."""

    api_key: str = ""
    base_url: str = "https://api.bing.microsoft.com"
    name: str = "Bing"

    async def search(self, query: str, count: int) -> list[SearchResult]:
        if not self.api_key:
            raise SearchError("Bing needs an API key (WEBGPT_BING_API_KEY)")
        body = await self.get_json(
            self.base_url.rstrip("/") + "/v7.0/search",
            {"q": query, "count": min(count, 50), "responseFilter": "Webpages"},
            {"Ocp-Apim-Subscription-Key": self.api_key},
        )
        pages = body.get("webPages") if isinstance(body, dict) else None
        if pages is None:
            return []
        return _results(
            pages.get("value") if isinstance(pages, dict) else None, "name", "snippet", count
        )
