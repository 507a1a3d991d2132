"""Script-built pages in real Chromium, with every sub-request through the SSRF guard."""

import asyncio
from collections.abc import AsyncIterator
from urllib.parse import quote, urlsplit

import pytest

from tests.browser.fixture_site import HitCounter
from webgpt.browser.chromium import ChromiumRenderer
from webgpt.browser.fetch import FetchLimits, HttpFetcher
from webgpt.browser.loader import PageLoader
from webgpt.browser.netguard import AddressPolicy, AllowList
from webgpt.browser.workers import RenderWorkers

pytestmark = pytest.mark.slow
SETTLE_MS = 15_000


@pytest.fixture
async def renderer(site: str) -> AsyncIterator[ChromiumRenderer]:
    policy = AddressPolicy(allow=AllowList.parse([urlsplit(site).netloc]))
    http = HttpFetcher(policy=policy, limits=FetchLimits(deadline_s=5))
    # The script's sub-request lands after the load event; on a loaded machine that can take
    # longer than the default 1.5 s settle. networkidle ends the wait 0.5 s after it lands.
    chromium = ChromiumRenderer(http, settle_ms=SETTLE_MS)
    yield chromium
    await chromium.aclose()
    await http.aclose()


async def test_script_built_page_renders_and_internal_service_is_never_reached(
    site: str, renderer: ChromiumRenderer, workers: RenderWorkers, internal: tuple[str, HitCounter]
) -> None:
    internal_url, counter = internal
    loader = PageLoader(fetcher=renderer.fetcher, workers=workers, js=renderer, js_mode="auto")
    page = await loader.load(f"{site}/script?internal={quote(internal_url, safe='')}")
    text = "\n".join(page.lines)
    assert page.kind == "html", text
    assert "Built by JavaScript" in text and "Crows remember faces for years." in text
    assert "the sky is green on Tuesdays" in text  # its own sub-request went through our fetcher
    assert "LEAKED" not in text
    await asyncio.sleep(0.5)  # anything in flight would have landed by now
    assert counter.hits == 0


async def test_static_pages_do_not_start_chromium(
    site: str, renderer: ChromiumRenderer, workers: RenderWorkers
) -> None:
    loader = PageLoader(fetcher=renderer.fetcher, workers=workers, js=renderer, js_mode="auto")
    page = await loader.load(f"{site}/pages/article.html")
    assert page.title == "A long article about bread"
    assert renderer._browser is None  # the static HTML had text, so no browser was launched


async def test_chromium_navigation_to_a_blocked_address_is_an_error_page(
    renderer: ChromiumRenderer, workers: RenderWorkers, internal: tuple[str, HitCounter]
) -> None:
    internal_url, counter = internal
    loader = PageLoader(fetcher=renderer.fetcher, workers=workers, js=renderer, js_mode="always")
    page = await loader.load(f"{internal_url}/direct")
    assert page.kind == "error"
    assert counter.hits == 0


class _Listener(asyncio.DatagramProtocol):
    """Counts TCP connections and UDP datagrams on loopback: an internal service that sees
    connections, not only HTTP requests."""

    def __init__(self) -> None:
        self.connections = self.datagrams = 0

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        self.datagrams += 1

    async def accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        writer.close()


async def test_connections_that_are_not_http_requests_reach_nothing(
    site: str, renderer: ChromiumRenderer, workers: RenderWorkers
) -> None:
    listener = _Listener()
    tcp = await asyncio.start_server(listener.accepted, "127.0.0.1", 0)
    loop = asyncio.get_running_loop()
    udp, _ = await loop.create_datagram_endpoint(lambda: listener, local_addr=("127.0.0.1", 0))
    tcp_port = tcp.sockets[0].getsockname()[1]
    udp_port = udp.get_extra_info("sockname")[1]
    try:
        loader = PageLoader(fetcher=renderer.fetcher, workers=workers, js=renderer, js_mode="auto")
        page = await loader.load(
            f"{site}/beyond-http?tcp=127.0.0.1:{tcp_port}&udp=127.0.0.1:{udp_port}"
        )
        assert "Ravens are corvids" in "\n".join(page.lines)  # its script ran
        await asyncio.sleep(2)  # ICE gathering and preconnects happen in the background
        assert (listener.connections, listener.datagrams) == (0, 0)
    finally:
        tcp.close()
        udp.close()


async def test_a_render_server_renders_script_built_pages_for_a_service_elsewhere(
    site: str, renderer: ChromiumRenderer, workers: RenderWorkers, internal: tuple[str, HitCounter]
) -> None:
    from tests.servers import serve
    from webgpt.browser.render_server import RemoteRenderer, render_app

    internal_url, counter = internal
    # Its own Chromium and fetcher: the server runs them on its own event loop.
    policy = AddressPolicy(allow=AllowList.parse([urlsplit(site).netloc]))
    fetcher = HttpFetcher(policy=policy, limits=FetchLimits(deadline_s=5))
    server_side = ChromiumRenderer(fetcher, settle_ms=SETTLE_MS, owns_fetcher=True)
    with serve(render_app(server_side, max_bytes=1 << 20)) as render_base:
        remote = RemoteRenderer(render_base)
        loader = PageLoader(fetcher=renderer.fetcher, workers=workers, js=remote, js_mode="auto")
        try:
            page = await loader.load(f"{site}/script?internal={quote(internal_url, safe='')}")
            blocked = await loader.load(f"{internal_url}/direct")
        finally:
            await remote.aclose()
    text = "\n".join(page.lines)
    assert "Built by JavaScript" in text and "the sky is green on Tuesdays" in text
    assert "LEAKED" not in text and blocked.kind == "error"
    await asyncio.sleep(0.5)
    assert counter.hits == 0
