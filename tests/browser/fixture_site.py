"""The fixture web site served on loopback: pages, redirects, faults and hostile bodies."""

import asyncio
import gzip
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

PAGES = Path(__file__).parent.parent / "data" / "pages"


def minimal_pdf(text_lines: list[str]) -> bytes:
    """A valid one-page PDF showing text_lines (correct xref offsets, Helvetica)."""
    content = (
        "BT /F1 12 Tf 72 720 Td 14 TL "
        + " ".join(
            "(" + line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ") '"
            for line in text_lines
        )
        + " ET"
    )
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        "/Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out)


async def page(request: Request) -> Response:
    path = (PAGES / request.path_params["name"]).resolve()
    if PAGES.resolve() not in path.parents or not path.is_file():
        return PlainTextResponse("not found", status_code=404)
    return HTMLResponse(path.read_bytes())


async def redirect(request: Request) -> Response:
    return RedirectResponse(request.query_params["to"], status_code=302)


async def redirect_loop(request: Request) -> Response:
    return RedirectResponse("/redirect-loop", status_code=302)


async def trickle(request: Request) -> Response:
    async def body() -> AsyncIterator[bytes]:
        yield b"<html><body><p>"
        for _ in range(1000):
            await asyncio.sleep(0.2)
            yield b"x"

    return StreamingResponse(body(), media_type="text/html")


async def gzip_bomb(request: Request) -> Response:
    # 64 MiB of zeros compress to about 64 KiB.
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024), compresslevel=9)
    return Response(bomb, media_type="text/html", headers={"content-encoding": "gzip"})


async def gzipped_page(request: Request) -> Response:
    html = (
        b"<html><head><title>Zipped</title></head><body><p>Compressed fine words.</p></body></html>"
    )
    return Response(
        gzip.compress(html), media_type="text/html", headers={"content-encoding": "gzip"}
    )


async def huge(request: Request) -> Response:
    chunk = b"<p>" + b"a" * 65536 + b"</p>"

    async def body() -> AsyncIterator[bytes]:
        for _ in range(1024):  # 64 MiB, no content-length
            yield chunk

    return StreamingResponse(body(), media_type="text/html")


async def declared_huge(request: Request) -> Response:
    return Response(b"small", media_type="text/html", headers={"content-length": "999999999"})


async def image(request: Request) -> Response:
    return Response(b"\x89PNG\r\n\x1a\n" + b"\0" * 100, media_type="image/png")


async def octet_html(request: Request) -> Response:
    body = (
        b"<!DOCTYPE html><html><head><title>Sniffed</title></head>"
        b"<body><p>Served as bytes.</p></body></html>"
    )
    return Response(body, media_type="application/octet-stream")


async def pdf(request: Request) -> Response:
    return Response(
        minimal_pdf(["Crows bring gifts to people who feed them.", "Second line of the PDF."]),
        media_type="application/pdf",
    )


async def plain(request: Request) -> Response:
    return PlainTextResponse("Plain text line one.\nLine two with 【brackets】.")


async def api_data(request: Request) -> Response:
    return PlainTextResponse("Loaded by script: the sky is green on Tuesdays.")


async def script_page(request: Request) -> Response:
    """A page whose text exists only after its script ran; it also tries to reach the
    internal service (by fetch, image, iframe and WebSocket), which must all fail."""
    internal = request.query_params.get("internal", "http://127.0.0.1:9")
    ws_internal = internal.replace("http://", "ws://")
    html = f"""<!DOCTYPE html><html><head><title>Script page</title></head>
<body><div id="app"></div>
<script>
  const app = document.getElementById("app");
  app.innerHTML = "<h1>Built by JavaScript</h1><p>Crows remember faces for years.</p>";
  fetch("/api/data").then(r => r.text()).then(t => {{
    const p = document.createElement("p"); p.textContent = t; app.appendChild(p);
  }});
  fetch("{internal}/from-fetch").then(r => r.text()).then(t => {{
    const p = document.createElement("p"); p.textContent = "LEAKED " + t; app.appendChild(p);
  }}).catch(() => {{}});
  new Image().src = "{internal}/from-image";
  const frame = document.createElement("iframe"); frame.src = "{internal}/from-iframe";
  document.body.appendChild(frame);
  try {{ new WebSocket("{ws_internal}/from-websocket"); }} catch (e) {{}}
  navigator.serviceWorker && navigator.serviceWorker.register("/sw.js").catch(() => {{}});
</script></body></html>"""
    return HTMLResponse(html)


async def beyond_http_page(request: Request) -> Response:
    """A page that tries to reach tcp (HOST:PORT) and udp (HOST:PORT) without an HTTP request
    our router sees: preconnect, DNS prefetch, WebRTC (STUN over UDP, TURN over TCP), a
    beacon; none may connect."""
    tcp, udp = request.query_params["tcp"], request.query_params["udp"]
    html = f"""<!DOCTYPE html><html><head><title>Beyond HTTP</title>
<link rel="preconnect" href="http://{tcp}"><link rel="dns-prefetch" href="http://{tcp}">
</head><body><div id="app"></div>
<script>
  document.getElementById("app").innerHTML = "<p>Ravens are corvids, like crows.</p>";
  const peer = new RTCPeerConnection({{iceServers: [
    {{urls: "stun:{udp}"}},
    {{urls: "turn:{tcp}?transport=tcp", username: "u", credential: "c"}}]}});
  peer.createDataChannel("leak");
  peer.createOffer().then(offer => peer.setLocalDescription(offer));
  navigator.sendBeacon("http://{tcp}/beacon", "leak");
</script></body></html>"""
    return HTMLResponse(html)


async def missing(request: Request) -> Response:
    return PlainTextResponse("gone", status_code=404)


def fixture_app() -> Starlette:
    return Starlette(
        routes=[
            Route("/pages/{name}", page),
            Route("/redirect", redirect),
            Route("/redirect-loop", redirect_loop),
            Route("/trickle", trickle),
            Route("/bomb", gzip_bomb),
            Route("/gzipped", gzipped_page),
            Route("/huge", huge),
            Route("/declared-huge", declared_huge),
            Route("/image", image),
            Route("/octet-html", octet_html),
            Route("/doc.pdf", pdf),
            Route("/plain.txt", plain),
            Route("/api/data", api_data),
            Route("/missing", missing),
            Route("/script", script_page),
            Route("/beyond-http", beyond_http_page),
        ]
    )


class HitCounter:
    """An app that only counts requests: stands for an internal service that must stay unreached."""

    def __init__(self) -> None:
        self.hits = 0

    async def __call__(self, scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        if scope["type"] != "http":
            return
        self.hits += 1
        await PlainTextResponse("internal secret")(scope, receive, send)
