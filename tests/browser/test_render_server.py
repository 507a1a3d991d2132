"""The render server (Chromium in its own process) and its client, on real loopback HTTP."""

import pytest

from tests.servers import free_port, serve
from webgpt.browser.errors import BlockedAddress, FetchTimeout, RenderError, TooLarge
from webgpt.browser.fetch import Document
from webgpt.browser.render_server import RemoteRenderer, render_app


class _Scripted:
    """A renderer whose pages are given: a URL maps to HTML or to the error it raises."""

    def __init__(self, pages: dict[str, str | Exception]) -> None:
        self.pages, self.closed = pages, False

    async def render(self, url: str) -> Document:
        page = self.pages[url]
        if isinstance(page, Exception):
            raise page
        return Document(url=url + "#rendered", content_type="text/html", charset="utf-8",
                        body=page.encode())  # fmt: skip

    async def aclose(self) -> None:
        self.closed = True


async def test_pages_and_browser_errors_cross_the_wire_as_they_were() -> None:
    renderer = _Scripted(
        {
            "https://a.example/": "<p>Built by script: ünïcode.</p>",
            "http://169.254.169.254/": BlockedAddress("169.254.169.254 is not public"),
            "https://slow.example/": FetchTimeout("the page did not load within 20 s"),
            "https://huge.example/": "x" * 2000,
        }
    )
    with serve(render_app(renderer, max_bytes=1000)) as base:
        remote = RemoteRenderer(base)
        try:
            document = await remote.render("https://a.example/")
            assert document.url == "https://a.example/#rendered"
            assert document.body.decode() == "<p>Built by script: ünïcode.</p>"
            with pytest.raises(BlockedAddress, match="not public"):
                await remote.render("http://169.254.169.254/")
            with pytest.raises(FetchTimeout, match="within 20 s"):
                await remote.render("https://slow.example/")
            with pytest.raises(TooLarge):
                await remote.render("https://huge.example/")
        finally:
            await remote.aclose()
    assert renderer.closed  # the server's shutdown closes its browser


async def test_an_unreachable_render_server_is_a_render_error() -> None:
    remote = RemoteRenderer(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(RenderError, match="cannot be reached"):
        await remote.render("https://a.example/")
    await remote.aclose()


def test_a_malformed_render_request_is_a_clear_400() -> None:
    import httpx

    renderer = _Scripted({})
    with serve(render_app(renderer, max_bytes=1000)) as base:
        for body in (b"not json", b'{"address": "https://a.example/"}', b'{"url": 7}'):
            response = httpx.post(f"{base}/render", content=body)
            assert response.status_code == 400
            assert response.json()["error"]["type"] == "bad_request", body


def test_the_render_server_command_refuses_a_bad_port(capsys: pytest.CaptureFixture[str]) -> None:
    from webgpt.service.cli import main

    with pytest.raises(SystemExit, match=r"--port must be 1\.\.65535"):
        main(["render-server", "--port", "99999"])
    with pytest.raises(SystemExit, match="HOST"):
        main(["render-server", "--allow", ":8080"])
