"""Assembling the browser: a search engine by name, the guarded fetcher, Chromium, the loader.

One `Web` per process holds the long-lived parts (connection pools, render workers,
Chromium); each request takes a fresh `PageCache` from it so its episodes share pages.
"""

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from browser.chromium import ChromiumRenderer
from browser.errors import BrowserError
from browser.fetch import FetchLimits, HttpFetcher
from browser.loader import JsMode, PageCache, PageLoader
from browser.netguard import AddressPolicy, AllowList
from browser.offline import OfflineFirstFetcher, OfflineWeb, default_store_path
from browser.render import RenderOptions
from browser.render_server import RemoteRenderer, Renderer
from browser.search.base import SearchEngine
from browser.search.remote import BingSearch, BraveSearch, SearxngSearch
from browser.session import BrowserSession, SessionConfig
from browser.workers import RenderWorkers


@dataclass(frozen=True)
class WebOptions:
    """How to reach the web; every field can also come from a WEBGPT_* environment variable."""

    engine: str | None = "offline"  # None: fetching only, no search (`webgpt fetch`)
    allow: tuple[str, ...] = ()  # HOST[:PORT] reachable although private (tests, dev only)
    offline_store: Path | None = None
    offline_only: bool = False  # offline engine: no fallback to the live web for other URLs
    js_mode: JsMode = "auto"
    # A render server (`webgpt render-server`, browser.render_server) for script-built
    # pages; None: Chromium in this process.
    render_url: str | None = None
    searxng_url: str = "http://127.0.0.1:8888"
    brave_api_key: str = ""
    brave_url: str = "https://api.search.brave.com"
    bing_api_key: str = ""
    bing_url: str = "https://api.bing.microsoft.com"
    render: RenderOptions = field(default_factory=RenderOptions)
    limits: FetchLimits = field(default_factory=FetchLimits)

    @classmethod
    def from_env(cls, **overrides: object) -> "WebOptions":
        env = os.environ
        values: dict[str, object] = {
            "engine": env.get("WEBGPT_ENGINE", "offline"),
            "allow": tuple(a for a in env.get("WEBGPT_ALLOW", "").split(",") if a.strip()),
            "searxng_url": env.get("WEBGPT_SEARXNG_URL", cls.searxng_url),
            "brave_api_key": env.get("WEBGPT_BRAVE_API_KEY", ""),
            "brave_url": env.get("WEBGPT_BRAVE_URL", cls.brave_url),
            "bing_api_key": env.get("WEBGPT_BING_API_KEY", ""),
            "bing_url": env.get("WEBGPT_BING_URL", cls.bing_url),
            "render_url": env.get("WEBGPT_RENDER_URL") or None,
        }
        if env.get("WEBGPT_BLOCKED_DOMAINS") is not None:
            blocked = env["WEBGPT_BLOCKED_DOMAINS"].split(",")
            values["render"] = RenderOptions(
                blocked_domains=frozenset(
                    d.strip().lower().rstrip(".") for d in blocked if d.strip(" .")
                )
            )
        if env.get("WEBGPT_OFFLINE_STORE"):
            values["offline_store"] = Path(env["WEBGPT_OFFLINE_STORE"])
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]


def _searxng(o: WebOptions, _: OfflineWeb | None) -> SearchEngine:
    return SearxngSearch(base_url=o.searxng_url)


def _brave(o: WebOptions, _: OfflineWeb | None) -> SearchEngine:
    return BraveSearch(api_key=o.brave_api_key, base_url=o.brave_url)


def _bing(o: WebOptions, _: OfflineWeb | None) -> SearchEngine:
    return BingSearch(api_key=o.bing_api_key, base_url=o.bing_url)


def _offline(o: WebOptions, offline: OfflineWeb | None) -> SearchEngine:
    assert offline is not None
    return offline


ENGINES: dict[str, Callable[[WebOptions, OfflineWeb | None], SearchEngine]] = {
    "offline": _offline,
    "searxng": _searxng,
    "brave": _brave,
    "bing": _bing,
}


class Web:
    """The process-wide browser parts; `session()` gives an episode's environment."""

    def __init__(self, options: WebOptions) -> None:
        if options.engine is not None and options.engine not in ENGINES:
            raise BrowserError(f"unknown engine {options.engine!r}; one of {sorted(ENGINES)}")
        self.options = options
        try:
            policy = AddressPolicy(allow=AllowList.parse(options.allow))
        except ValueError as error:
            raise BrowserError(f"bad allow entry (WEBGPT_ALLOW or --allow): {error}") from error
        self.http = HttpFetcher(policy=policy, limits=options.limits)
        # Pages of the offline web are served locally whenever it is built, whatever the
        # engine; the offline engine needs it.
        store = options.offline_store or default_store_path()
        if options.engine == "offline" or store.is_file():
            self.offline: OfflineWeb | None = OfflineWeb(store)
        else:
            self.offline = None
        self.engine = ENGINES[options.engine](options, self.offline) if options.engine else None
        fetcher = (
            OfflineFirstFetcher(self.offline, None if options.offline_only else self.http)
            if self.offline is not None
            else self.http
        )
        self.chromium: Renderer | None = None
        if options.js_mode != "never":
            self.chromium = (
                RemoteRenderer(options.render_url)
                if options.render_url
                else ChromiumRenderer(self.http)
            )
        self.workers = RenderWorkers()
        self.loader = PageLoader(
            fetcher=fetcher, options=options.render, workers=self.workers, js=self.chromium,
            js_mode=options.js_mode,
        )  # fmt: skip

    def new_cache(self) -> PageCache:
        return PageCache(self.loader)

    def session(
        self, cache: PageCache | None = None, config: SessionConfig | None = None
    ) -> BrowserSession:
        if self.engine is None:
            raise BrowserError("this Web was opened without a search engine")
        # The session filters with the same render options the loader renders with.
        config = dataclasses.replace(config or SessionConfig(), render=self.options.render)
        return BrowserSession(self.engine, cache or self.new_cache(), config)

    async def aclose(self) -> None:
        if self.chromium is not None:
            await self.chromium.aclose()
        await self.http.aclose()
        aclose = getattr(self.engine, "aclose", None)
        if aclose is not None:
            await aclose()
        self.workers.close()
        if self.offline is not None:
            self.offline.close()
