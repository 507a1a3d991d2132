"""Rendering script-built pages in Debian's Chromium through Playwright.

Chromium never touches the network itself: every request a page makes is intercepted and
either answered from our guarded HttpFetcher (so the SSRF guard and fetch limits apply to
each sub-request) or aborted. WebSockets are answered by an unconnected mock and service
workers are blocked. What bypasses request interception (preconnects, DNS prefetch,
WebRTC) meets more walls: host resolution is mapped to nothing, all traffic, loopback
included, is sent to a proxy that is a bound socket nobody listens on (every connection
is refused), WebRTC may use no UDP that does not go through that proxy (so none), and
network prediction is off.
"""

import asyncio
import contextlib
import logging
import socket
from dataclasses import dataclass, field

from playwright.async_api import Browser, Playwright, Route, WebSocketRoute, async_playwright
from playwright.async_api import Error as PlaywrightError

from webgpt.browser.errors import BrowserError, FetchError, FetchTimeout, RenderError
from webgpt.browser.fetch import USER_AGENT, Document, HttpFetcher

logger = logging.getLogger(__name__)

CHROMIUM_PATH = "/usr/lib/chromium/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-bypass-list=<-loopback>",  # loopback too goes to the black-hole proxy
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--dns-prefetch-disable",
    "--disable-features=NetworkPrediction,Prerender2,PreconnectToSearch,DnsOverHttps",
    "--disable-dev-shm-usage",
]
# Sub-resources that cannot change the page's text are never fetched.
_SKIPPED_RESOURCES = frozenset({"image", "media", "font", "stylesheet", "texttrack", "manifest"})
_FETCHED_METHODS = frozenset({"GET", "HEAD"})


@dataclass
class ChromiumRenderer:
    """One Chromium per process, a fresh browser context per page."""

    fetcher: HttpFetcher
    executable_path: str = CHROMIUM_PATH
    timeout_s: float = 20.0
    settle_ms: int = 1500  # how long scripts may keep fetching after the load event
    max_pages_at_once: int = 4
    owns_fetcher: bool = False  # aclose closes the fetcher too (a render server's own)
    _playwright: Playwright | None = field(default=None, init=False, repr=False)
    _browser: Browser | None = field(default=None, init=False, repr=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)
    _slots: asyncio.Semaphore | None = field(default=None, init=False, repr=False)
    _black_hole: socket.socket | None = field(default=None, init=False, repr=False)

    async def render(self, url: str) -> Document:
        """The page's HTML after its scripts ran."""
        browser = await self._ensure_browser()
        assert self._slots is not None
        async with self._slots:
            context = await browser.new_context(
                service_workers="block",
                user_agent=USER_AGENT,
                java_script_enabled=True,
                accept_downloads=False,
            )
            try:
                await context.route("**/*", self._answer_request)
                await context.route_web_socket("**/*", _refuse_websocket)
                page = await context.new_page()
                try:
                    response = await page.goto(
                        url, wait_until="load", timeout=self.timeout_s * 1000
                    )
                    if response is None or response.status >= 400:
                        status = response.status if response is not None else "no response"
                        raise FetchError(f"the page answered {status}")
                    # Still fetching after settle_ms: take what is there.
                    with contextlib.suppress(PlaywrightError):
                        await page.wait_for_load_state("networkidle", timeout=self.settle_ms)
                    html = await page.content()
                except PlaywrightError as error:
                    if "Timeout" in str(error):
                        raise FetchTimeout(
                            f"the page did not load within {self.timeout_s:g} s"
                        ) from error
                    raise RenderError(
                        f"Chromium could not render the page: {error.message}"
                    ) from error
            finally:
                await context.close()
        return Document(url=url, content_type="text/html", charset="utf-8", body=html.encode())

    async def _answer_request(self, route: Route) -> None:
        request = route.request
        if request.method not in _FETCHED_METHODS or request.resource_type in _SKIPPED_RESOURCES:
            await route.abort("blockedbyclient")
            return
        try:
            document = await self.fetcher.get(request.url)
        except BrowserError as error:
            logger.info("chromium sub-request refused: %s: %s", request.url[:200], error)
            await route.abort("blockedbyclient")
            return
        headers = {
            "content-type": document.content_type
            + (f"; charset={document.charset}" if document.charset else "")
        }
        await route.fulfill(status=document.status, headers=headers, body=document.body)

    async def _ensure_browser(self) -> Browser:
        async with self._lock:
            if self._browser is None or not self._browser.is_connected():
                if self._playwright is None:
                    self._playwright = await async_playwright().start()
                if self._black_hole is None:
                    self._black_hole = black_hole()
                proxy = f"http://127.0.0.1:{self._black_hole.getsockname()[1]}"
                self._browser = await self._playwright.chromium.launch(
                    executable_path=self.executable_path,
                    args=[*CHROMIUM_ARGS, f"--proxy-server={proxy}"],
                    headless=True,
                    chromium_sandbox=False,
                )
                self._slots = asyncio.Semaphore(self.max_pages_at_once)
            return self._browser

    async def aclose(self) -> None:
        if self._browser is not None:
            await self._browser.close()
            self._browser = None
        if self._playwright is not None:
            await self._playwright.stop()
            self._playwright = None
        if self._black_hole is not None:
            self._black_hole.close()
            self._black_hole = None
        if self.owns_fetcher:
            await self.fetcher.aclose()


def black_hole() -> socket.socket:
    """A loopback port held bound but never listened on: connecting to it is refused, and
    no other process can start listening there while it is held."""
    hole = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    hole.bind(("127.0.0.1", 0))
    return hole


async def _refuse_websocket(websocket: WebSocketRoute) -> None:
    """Not connecting to the server leaves the socket mocked; closing it ends it."""
    await websocket.close()
