"""Assembling the browser: a search engine by name, the guarded fetcher, Chromium, the loader.

One `Web` per process holds the long-lived parts (connection pools, render workers,
Chromium); each request takes a fresh `PageCache` from it so its episodes share pages.
"""

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from pydantic import BeforeValidator, field_validator
from pydantic_settings import NoDecode

from webgpt.browser.chromium import ChromiumRenderer
from webgpt.browser.errors import BrowserError
from webgpt.browser.fetch import FetchLimits, HttpFetcher
from webgpt.browser.loader import JsMode, PageCache, PageLoader
from webgpt.browser.netguard import AddressPolicy, AllowList
from webgpt.browser.offline import OfflineFirstFetcher, OfflineWeb, default_store_path
from webgpt.browser.render import RenderOptions
from webgpt.browser.render_server import RemoteRenderer, Renderer
from webgpt.browser.search.base import SearchEngine
from webgpt.browser.search.remote import BingSearch, BraveSearch, SearxngSearch
from webgpt.browser.session import BrowserSession, SessionConfig
from webgpt.browser.workers import RenderWorkers
from webgpt.infra.settings import Settings


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
        """Options from the WEBGPT_* variables (WebSettings); overrides that are not None win."""
        settings = WebSettings()
        values: dict[str, object] = settings.model_dump(exclude={"blocked_domains"})
        if settings.blocked_domains is not None:
            values["render"] = RenderOptions(blocked_domains=settings.blocked_domains)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]


def _comma_separated(value: object) -> object:
    return (
        tuple(p.strip() for p in value.split(",") if p.strip()) if isinstance(value, str) else value
    )


class WebSettings(Settings):
    """The WEBGPT_* variables of WebOptions, with its defaults."""

    engine: str = "offline"
    # HOST[:PORT],... reachable although private (tests, dev only)
    allow: Annotated[tuple[str, ...], NoDecode, BeforeValidator(_comma_separated)] = ()
    offline_store: Path | None = None
    render_url: str | None = None
    searxng_url: str = WebOptions.searxng_url
    brave_api_key: str = ""
    brave_url: str = WebOptions.brave_url
    bing_api_key: str = ""
    bing_url: str = WebOptions.bing_url
    # Domains whose links and search results are removed, comma-separated; unset (or empty,
    # like every variable): RenderOptions' default list.
    blocked_domains: Annotated[
        frozenset[str] | None, NoDecode, BeforeValidator(_comma_separated)
    ] = None

    @field_validator("blocked_domains")
    @classmethod
    def _normalised(cls, domains: frozenset[str] | None) -> frozenset[str] | None:
        # "Example.COM." is example.com: a trailing dot or capitals must not bypass the list.
        if domains is None:
            return None
        return frozenset(d.lower().strip(".") for d in domains if d.strip("."))


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


def offline_web(store: Path | None) -> Web:
    """The offline web alone (no live fallback, no Chromium): where demonstrations are
    generated, replayed and evaluated, so their figures are reproducible."""
    options = WebOptions.from_env(js_mode="never", offline_store=store)
    return Web(dataclasses.replace(options, engine="offline", offline_only=True))
