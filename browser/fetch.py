"""Fetching documents over HTTP(S) with the SSRF guard and hard limits on every fetch."""

import asyncio
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from email.message import Message
from typing import Protocol
from urllib.parse import urljoin

import httpcore
import httpx

from webgpt.browser.errors import (
    BlockedAddress,
    FetchError,
    FetchTimeout,
    HTTPStatusError,
    TooLarge,
)
from webgpt.browser.netguard import AddressPolicy, GuardedNetworkBackend, check_url

USER_AGENT = "Mozilla/5.0 (compatible; webgpt-browser/0.1; +https://github.com/webgpt)"
_ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,application/pdf;q=0.8,*/*;q=0.5"
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class Document:
    """A fetched body and what is needed to render it."""

    url: str  # after redirects
    content_type: str  # media type only, lower-case, e.g. "text/html"
    charset: str | None
    body: bytes
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()


class Fetcher(Protocol):
    async def fetch(self, url: str) -> Document: ...


@dataclass(frozen=True)
class FetchLimits:
    deadline_s: float = 15.0  # whole fetch, redirects and body included
    max_bytes: int = 8 * 1024 * 1024  # decoded body
    max_redirects: int = 5
    connect_timeout_s: float = 5.0


def parse_content_type(header: str | None) -> tuple[str, str | None]:
    """("text/html", "utf-8") from a Content-Type header; unknown becomes octet-stream."""
    if not header:
        return "application/octet-stream", None
    message = Message()
    message["content-type"] = header
    charset = message.get_param("charset")
    return message.get_content_type(), charset if isinstance(charset, str) else None


class _GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport with its connection pool built on the guarded network backend."""

    def __init__(self, policy: AddressPolicy, limits: httpx.Limits) -> None:
        super().__init__(http2=True, limits=limits, trust_env=False)
        # httpx has no public way to choose the network backend; the pool is the one
        # httpx would build, plus that backend.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=True,
            network_backend=GuardedNetworkBackend(policy),
        )


@dataclass
class HttpFetcher:
    """Fetches http(s) URLs from public addresses only, within FetchLimits."""

    policy: AddressPolicy = field(default_factory=AddressPolicy)
    limits: FetchLimits = field(default_factory=FetchLimits)
    _client: httpx.AsyncClient | None = field(default=None, init=False, repr=False)

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                transport=_GuardedTransport(
                    self.policy, httpx.Limits(max_connections=64, max_keepalive_connections=16)
                ),
                timeout=httpx.Timeout(
                    self.limits.deadline_s, connect=self.limits.connect_timeout_s
                ),
                headers={
                    "User-Agent": USER_AGENT,
                    # Only encodings we can decode with a bound on the output.
                    "Accept-Encoding": "gzip, deflate",
                    "Accept": _ACCEPT,
                },
                follow_redirects=False,
                trust_env=False,  # an environment proxy would bypass the address checks
            )
        return self._client

    async def fetch(self, url: str) -> Document:
        """GET url; error statuses raise HTTPStatusError."""
        document = await self.get(url)
        if document.status >= 400:
            raise HTTPStatusError(document.status, document.url)
        return document

    async def get(self, url: str) -> Document:
        """GET url following redirects; any final status is returned, not raised."""
        try:
            async with asyncio.timeout(self.limits.deadline_s):
                return await self._follow(url)
        except TimeoutError as error:
            raise FetchTimeout(f"no complete answer within {self.limits.deadline_s:g} s") from error
        except httpx.TimeoutException as error:
            raise FetchTimeout(f"timed out: {error}") from error
        except httpx.HTTPError as error:
            cause = error.__context__
            if isinstance(cause, BlockedAddress):
                raise cause from None
            raise FetchError(f"{type(error).__name__}: {error}") from error

    async def _follow(self, url: str) -> Document:
        for _ in range(self.limits.max_redirects + 1):
            check_url(url)
            async with self._http().stream("GET", url) as response:
                if response.status_code in _REDIRECT_STATUSES and "location" in response.headers:
                    url = urljoin(str(response.url), response.headers["location"])
                    continue
                body = await self._read_bounded(response)
                content_type, charset = parse_content_type(response.headers.get("content-type"))
                return Document(
                    url=str(response.url),
                    content_type=content_type,
                    charset=charset,
                    body=body,
                    status=response.status_code,
                    headers=tuple(response.headers.items()),
                )
        raise FetchError(f"more than {self.limits.max_redirects} redirects")

    async def _read_bounded(self, response: httpx.Response) -> bytes:
        cap = self.limits.max_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise TooLarge(f"body of {int(declared)} bytes is over the {cap}-byte cap")
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        chunks = bytearray()
        async for piece in _decode_bounded(response.aiter_raw(), encoding, cap):
            chunks += piece
            if len(chunks) > cap:
                raise TooLarge(f"decoded body is over the {cap}-byte cap")
        return bytes(chunks)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


async def _decode_bounded(
    raw: AsyncIterator[bytes], encoding: str, cap: int
) -> AsyncIterator[bytes]:
    """Decode a content-encoding without ever producing more than cap + 1 bytes at once.

    httpx's own decoders inflate a whole network chunk at a time, which lets a compression
    bomb allocate a thousand times the chunk; here zlib's max_length bounds each step.
    """
    if encoding in ("identity", ""):
        async for chunk in raw:
            yield chunk
        return
    if encoding in ("gzip", "x-gzip"):
        inflater = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)
    elif encoding == "deflate":
        inflater = zlib.decompressobj()
    else:
        raise FetchError(f"unsupported content-encoding {encoding!r}")
    produced = 0
    try:
        async for chunk in raw:
            data = chunk
            while data:
                out = inflater.decompress(data, cap + 1 - produced)
                produced += len(out)
                yield out
                if produced > cap:
                    return
                data = inflater.unconsumed_tail
        yield inflater.flush()
    except zlib.error as error:
        raise FetchError(f"corrupt {encoding} body: {error}") from error
