"""The guarded fetcher and loader against a real HTTP server on 127.0.0.1."""

from collections.abc import AsyncIterator
from urllib.parse import quote, urlsplit

import pytest

from tests.browser.fixture_site import HitCounter
from webgpt.browser.errors import BlockedAddress, FetchError, FetchTimeout, TooLarge
from webgpt.browser.fetch import Document, FetchLimits, HttpFetcher
from webgpt.browser.loader import PageLoader
from webgpt.browser.netguard import AddressPolicy, AllowList
from webgpt.browser.workers import RenderWorkers


def host_port(base_url: str) -> str:
    return urlsplit(base_url).netloc


@pytest.fixture
async def fetcher(site: str) -> AsyncIterator[HttpFetcher]:
    limits = FetchLimits(deadline_s=3.0, max_bytes=1024 * 1024, max_redirects=3)
    policy = AddressPolicy(allow=AllowList.parse([host_port(site)]))
    http = HttpFetcher(policy=policy, limits=limits)
    yield http
    await http.aclose()


@pytest.fixture
def loader(fetcher: HttpFetcher, workers: RenderWorkers) -> PageLoader:
    return PageLoader(fetcher=fetcher, workers=workers, js=None)


async def test_html_page_is_fetched_and_rendered(site: str, loader: PageLoader) -> None:
    page = await loader.load(f"{site}/pages/links.html")
    assert page.kind == "html"
    assert page.title == "Crows and their gifts"
    assert any(
        "【1†Outside My Window†www.birdsoutsidemywindow.org】" in line for line in page.lines
    )


async def test_loopback_is_refused_unless_allowed(site: str) -> None:
    closed = HttpFetcher()  # the default policy: public addresses only
    try:
        with pytest.raises(BlockedAddress):
            await closed.fetch(f"{site}/pages/links.html")
    finally:
        await closed.aclose()


async def test_redirects_are_followed_and_each_hop_is_checked(
    site: str, fetcher: HttpFetcher, internal: tuple[str, HitCounter]
) -> None:
    document = await fetcher.fetch(f"{site}/redirect?to=/pages/article.html")
    assert document.url == f"{site}/pages/article.html"

    internal_url, counter = internal
    for target in (
        f"{internal_url}/secret",  # another loopback port, not allowed
        "http://169.254.169.254/latest/meta-data/",
        f"http://[::ffff:127.0.0.1]:{urlsplit(internal_url).port}/secret",
        f"http://2130706433:{urlsplit(internal_url).port}/secret",
        "file:///etc/passwd",
    ):
        with pytest.raises(BlockedAddress):
            await fetcher.fetch(f"{site}/redirect?to={quote(target, safe='')}")
    assert counter.hits == 0


async def test_redirect_loops_stop(site: str, fetcher: HttpFetcher) -> None:
    with pytest.raises(FetchError, match="redirects"):
        await fetcher.fetch(f"{site}/redirect-loop")


async def test_trickling_body_hits_the_total_deadline(site: str) -> None:
    policy = AddressPolicy(allow=AllowList.parse([host_port(site)]))
    slow = HttpFetcher(policy=policy, limits=FetchLimits(deadline_s=1.0))
    try:
        with pytest.raises(FetchTimeout):
            await slow.fetch(f"{site}/trickle")
    finally:
        await slow.aclose()


async def test_gzip_bomb_is_stopped_at_the_decoded_cap(site: str, fetcher: HttpFetcher) -> None:
    with pytest.raises(TooLarge):
        await fetcher.fetch(f"{site}/bomb")
    document = await fetcher.fetch(f"{site}/gzipped")  # honest gzip still works
    assert b"Compressed fine words" in document.body


@pytest.mark.parametrize("path", ["/huge", "/declared-huge"])
async def test_huge_bodies_are_refused(path: str, site: str, fetcher: HttpFetcher) -> None:
    with pytest.raises(TooLarge):
        await fetcher.fetch(site + path)


async def test_failures_become_error_pages(site: str, loader: PageLoader) -> None:
    for path, reason in [
        ("/missing", "HTTP 404"),
        ("/bomb", "cap"),
        ("/image", "Cannot display content of type image/png"),
    ]:
        page = await loader.load(site + path)
        assert page.kind == "error", path
        assert reason in " ".join(page.lines), path


async def test_other_content_types(site: str, loader: PageLoader) -> None:
    text = await loader.load(f"{site}/plain.txt")
    assert text.kind == "text"
    assert text.lines == ("Plain text line one.", "Line two with 〖brackets〗.")
    sniffed = await loader.load(f"{site}/octet-html")
    assert sniffed.kind == "html" and sniffed.title == "Sniffed"
    pdf = await loader.load(f"{site}/doc.pdf")
    assert pdf.kind == "pdf"
    assert "Crows bring gifts to people who feed them." in pdf.lines


class _Pages:
    """A fetcher and a JS renderer over fixed HTML; the renderer records what it was asked."""

    def __init__(self, html: dict[str, str]) -> None:
        self.html, self.rendered = html, []  # type: ignore[var-annotated]

    async def fetch(self, url: str) -> Document:
        return Document(
            url=url, content_type="text/html", charset="utf-8", body=self.html[url].encode()
        )

    async def render(self, url: str) -> Document:
        self.rendered.append(url)
        return await self.fetch(url)


async def test_only_short_pages_whose_scripts_run_go_to_chromium(workers: RenderWorkers) -> None:
    pages = _Pages(
        {
            "https://a.example/empty": "<html><body><p>Nothing here.</p></body></html>",
            "https://a.example/json": '<body><p>Hi.</p><script type="application/ld+json">'
            '{"@type": "Article"}</script><script src=""></script></body>',
            "https://a.example/app": '<body><div id="root"></div><script src="/app.js"></script>',
            "https://a.example/inline": "<body><p>Hi.</p><script>document.write('x')</script>",
            "https://a.example/module": '<body><script type="module">import "./m.js"</script>',
            "https://a.example/long": "<body><p>" + "word " * 200 + "</p><script>x()</script>",
        }
    )
    loader = PageLoader(fetcher=pages, workers=workers, js=pages, js_mode="auto")
    for url in pages.html:
        await loader.load(url)
    assert pages.rendered == [
        "https://a.example/app",
        "https://a.example/inline",
        "https://a.example/module",
    ]
