"""From URL to Page: fetch, render in a worker, fall back to Chromium for script-built pages,
and share the result between the episodes of one request."""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from webgpt.browser.errors import BrowserError
from webgpt.browser.fetch import Document, Fetcher
from webgpt.browser.page import Page
from webgpt.browser.pdf import render_pdf
from webgpt.browser.render import RenderOptions, error_page, render_html, render_text
from webgpt.browser.workers import RenderWorkers

logger = logging.getLogger(__name__)

JsMode = Literal["auto", "never", "always"]
# Below this many words the static HTML is treated as "no readable content" and, when the
# page has scripts, is rendered again in Chromium.
JS_FALLBACK_MAX_WORDS = 30

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = frozenset({"application/json", "application/xml", "application/javascript"})


@dataclass
class LoadStats:
    """Where page loading spent its time (summed over loads)."""

    fetch_s: float = 0.0  # fetching, or Chromium's load and scripts
    render_s: float = 0.0  # turning documents into pages, in the workers
    loads: int = 0


class JsRenderer(Protocol):
    async def render(self, url: str) -> Document: ...


@dataclass
class PageLoader:
    """Turns URLs into Pages; errors of any kind become error pages, never exceptions."""

    fetcher: Fetcher
    options: RenderOptions = field(default_factory=RenderOptions)
    workers: RenderWorkers = field(default_factory=RenderWorkers)
    js: JsRenderer | None = None
    js_mode: JsMode = "auto"

    async def load(self, url: str, stats: LoadStats | None = None) -> Page:
        stats = stats if stats is not None else LoadStats()
        stats.loads += 1
        try:
            if self.js is not None and self.js_mode == "always":
                return await self._timed_render(
                    await self._timed(self.js.render, url, stats), stats
                )
            page = await self._timed_render(
                await self._timed(self.fetcher.fetch, url, stats), stats
            )
            if self._wants_js(page):
                assert self.js is not None
                return await self._timed_render(
                    await self._timed(self.js.render, url, stats), stats
                )
            return page
        except BrowserError as error:
            return error_page(url, f"The page could not be opened: {error}")

    @staticmethod
    async def _timed(
        get: Callable[[str], Awaitable[Document]], url: str, stats: LoadStats
    ) -> Document:
        started = time.perf_counter()
        try:
            return await get(url)
        finally:
            stats.fetch_s += time.perf_counter() - started

    async def _timed_render(self, document: Document, stats: LoadStats) -> Page:
        started = time.perf_counter()
        try:
            return await self._render(document)
        finally:
            stats.render_s += time.perf_counter() - started

    def _wants_js(self, page: Page) -> bool:
        if self.js is None or self.js_mode != "auto" or page.kind != "html":
            return False
        # Only a page whose scripts could build its text: an empty static page (or one
        # whose scripts are all JSON data) gains nothing from a browser but the risk.
        words = sum(len(line.split()) for line in page.lines)
        return page.scripted and words < JS_FALLBACK_MAX_WORDS and page.url not in ("", None)

    async def _render(self, document: Document) -> Page:
        kind = _document_kind(document)
        if kind == "html":
            return await self.workers.run(
                render_html, document.body, document.url, document.charset, self.options
            )
        if kind == "pdf":
            return await self.workers.run(render_pdf, document.body, document.url, self.options)
        if kind == "text":
            return render_text(document.body, document.url, document.charset, self.options)
        return error_page(document.url, f"Cannot display content of type {document.content_type}.")


def _document_kind(document: Document) -> Literal["html", "pdf", "text", "other"]:
    content_type = document.content_type
    if content_type in _HTML_TYPES:
        return "html"
    if content_type == "application/pdf" or document.body.startswith(b"%PDF-"):
        return "pdf"
    if content_type.startswith("text/") or content_type in _TEXT_TYPES:
        return "text"
    head = document.body[:512].lstrip().lower()
    if content_type == "application/octet-stream" and head.startswith(
        (b"<!doctype html", b"<html")
    ):
        return "html"
    return "other"


class PageCache:
    """The pages of one request: each URL is loaded once, however many episodes ask.

    Concurrent requests for the same URL wait on the same load (single flight). A waiter
    that is cancelled does not cancel the load for the others; `aclose` cancels them all.
    """

    def __init__(self, loader: PageLoader) -> None:
        self._loader = loader
        self._loads: dict[str, asyncio.Task[Page]] = {}
        self.hits = 0
        self.misses = 0
        self.stats = LoadStats()

    async def get(self, url: str) -> Page:
        task = self._loads.get(url)
        if task is None:
            self.misses += 1
            task = asyncio.create_task(self._loader.load(url, self.stats), name=f"load {url}")
            self._loads[url] = task
        else:
            self.hits += 1
        return await asyncio.shield(task)

    async def aclose(self) -> None:
        for task in self._loads.values():
            task.cancel()
        await asyncio.gather(*self._loads.values(), return_exceptions=True)
