"""Chromium in a process of its own: `webgpt render-server` and the client the loader uses.

Chromium runs scripts that hostile pages wrote. In a deployment the service's pods hold
secrets (API keys, the database URL); Chromium is kept out of them. The render server runs
ChromiumRenderer — with its own guarded fetcher, so every sub-request still passes the SSRF
guard — in a container that holds no secret and that only the service may reach
(deploy/k8s/base/renderer.yaml); the service's loader calls it through RemoteRenderer
when WEBGPT_RENDER_URL is set, and starts no Chromium of its own.

The wire is one route: POST /render {"url"} → 200 {"url", "html"}, or 502 with
{"error": {"type", "message"}}, whose type names the browser error to raise again on the
service's side (a blocked address stays a BlockedAddress).
"""

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from webgpt.browser.errors import (
    BlockedAddress,
    BrowserError,
    FetchError,
    FetchTimeout,
    RenderError,
    TooLarge,
)
from webgpt.browser.fetch import Document

# Most specific first: an error is sent as the first type it is an instance of.
_ERRORS: dict[str, type[BrowserError]] = {
    "blocked": BlockedAddress,
    "timeout": FetchTimeout,
    "too_large": TooLarge,
    "fetch": FetchError,
    "render": RenderError,
}


class Renderer(Protocol):
    async def render(self, url: str) -> Document: ...

    async def aclose(self) -> None: ...


def render_app(renderer: Renderer, max_bytes: int) -> Starlette:
    """The render server around renderer; pages over max_bytes of HTML are refused."""

    async def render(request: Request) -> JSONResponse:
        try:
            url = (await request.json())["url"]
            if not isinstance(url, str):
                raise TypeError("url must be a string")
        except (ValueError, KeyError, TypeError) as error:
            return _error("bad_request", f'expected {{"url": "..."}}: {error}', 400)
        try:
            document = await renderer.render(url)
            if len(document.body) > max_bytes:
                raise TooLarge(f"the rendered page is over {max_bytes} bytes")
        except BrowserError as error:
            kind = next((k for k, t in _ERRORS.items() if isinstance(error, t)), "render")
            return _error(kind, str(error), 502)
        html = document.body.decode(document.charset or "utf-8", errors="replace")
        return JSONResponse({"url": document.url, "html": html})

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await renderer.aclose()

    return Starlette(
        routes=[Route("/render", render, methods=["POST"]), Route("/healthz", healthz)],
        lifespan=lifespan,
    )


def _error(kind: str, message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": {"type": kind, "message": message}}, status_code=status)


@dataclass
class RemoteRenderer:
    """Renders on a render server (WEBGPT_RENDER_URL); its errors are raised again here."""

    base_url: str
    timeout_s: float = 40.0  # above the server's own page timeout (ChromiumRenderer, 20 s)
    _client: httpx.AsyncClient | None = field(default=None, init=False, repr=False)

    async def render(self, url: str) -> Document:
        if self._client is None:
            self._client = httpx.AsyncClient(
                base_url=self.base_url.rstrip("/"), timeout=self.timeout_s, trust_env=False
            )
        try:
            response = await self._client.post("/render", json={"url": url})
        except httpx.TimeoutException as error:
            raise FetchTimeout(f"the render server did not answer in time: {error!r}") from None
        except httpx.HTTPError as error:
            raise RenderError(f"the render server cannot be reached: {error!r}") from None
        try:
            body = response.json()
            if response.status_code != 200:
                kind, message = body["error"]["type"], body["error"]["message"]
                raise _ERRORS.get(kind, RenderError)(message)
            html = body["html"]
            return Document(
                url=body["url"], content_type="text/html", charset="utf-8", body=html.encode()
            )
        except (ValueError, KeyError, TypeError) as error:
            raise RenderError(
                f"the render server answered {response.status_code} without a result: {error!r}"
            ) from None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
