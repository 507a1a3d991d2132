"""The SSRF guard: which URLs, hosts and addresses a fetch may reach (docs/design.md, security).

A model reading hostile text chooses the URLs we fetch, so every connection goes through
`GuardedNetworkBackend`: it resolves the host itself, refuses the whole host if any answer
is not a public address, and connects to the address it checked (no second lookup that a
rebinding DNS server could answer differently). URL-level rules (scheme, userinfo) are in
`check_url`. Tests and local development open exact hosts with `AllowList`.
"""

import asyncio
import ipaddress
import socket
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpcore

from webgpt.browser.errors import BlockedAddress

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_6TO4 = ipaddress.ip_network("2002::/16")
# Native IPv6 reaches the internet only from global unicast; everything outside it
# (IPv4-compatible ::a.b.c.d, discard-only 100::/64, multicast, ...) is refused outright,
# so a range Python's is_global does not know yet cannot slip through.
_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
_EXTRA_BLOCKED = (
    ipaddress.ip_network("100.64.0.0/10"),  # CGNAT
    ipaddress.ip_network("192.0.0.0/24"),  # IETF protocol assignments
    ipaddress.ip_network("198.18.0.0/15"),  # benchmarking
    ipaddress.ip_network("fc00::/7"),  # unique local
    ipaddress.ip_network("fe80::/10"),  # link-local
    ipaddress.ip_network("fec0::/10"),  # site-local (deprecated, still routed by some)
    ipaddress.ip_network("3fff::/20"),  # documentation (RFC 9637)
    ipaddress.ip_network("5f00::/16"),  # segment routing SIDs (RFC 9602)
    ipaddress.ip_network("2001:db8::/32"),  # documentation
    ipaddress.ip_network("2001::/23"),  # IETF protocol assignments (Teredo handled above)
)


def is_public_address(address: IPAddress) -> bool:
    """True only for globally routable unicast addresses, including embedded IPv4 forms."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return is_public_address(address.ipv4_mapped)
        if address.sixtofour is not None:
            return is_public_address(address.sixtofour)
        if address.teredo is not None:
            return all(is_public_address(a) for a in address.teredo)
        if any(address in net for net in _NAT64):
            return is_public_address(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        if address in _6TO4 or address not in _GLOBAL_UNICAST:
            return False
    if any(address in net for net in _EXTRA_BLOCKED):
        return False
    # is_global excludes private, loopback, link-local (169.254.0.0/16, which holds the
    # cloud metadata address), reserved and unspecified; multicast needs its own check.
    return address.is_global and not address.is_multicast


@dataclass(frozen=True)
class AllowList:
    """Exact hosts (optionally with a port) that may be reached although not public.

    Entries look like "127.0.0.1:8123", "localhost" or "[::1]:9000". Only for tests and
    local development; production leaves it empty.
    """

    entries: frozenset[tuple[str, int | None]] = field(default_factory=frozenset)

    @classmethod
    def parse(cls, specs: Iterable[str]) -> "AllowList":
        entries = set()
        for spec in specs:
            parsed = urlsplit("//" + spec.strip())
            if not parsed.hostname:
                raise ValueError(f"not HOST[:PORT]: {spec!r}")
            entries.add((parsed.hostname.lower(), parsed.port))
        return cls(frozenset(entries))

    def allows(self, host: str, port: int) -> bool:
        host = host.lower().strip("[]")
        return (host, None) in self.entries or (host, port) in self.entries


def check_url(url: str) -> None:
    """Refuse URLs that are not plain http(s) to a named host without credentials."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError as error:
        raise BlockedAddress(f"malformed URL: {url[:200]}") from error
    if parts.scheme not in ("http", "https"):
        raise BlockedAddress(f"only http and https URLs can be opened, not {parts.scheme!r}")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise BlockedAddress("URLs with user names or passwords are refused")
    if not parts.hostname:
        raise BlockedAddress(f"URL has no host: {url[:200]}")


Resolver = typing.Callable[[str, int], typing.Awaitable[list[IPAddress]]]


async def system_resolve(host: str, port: int) -> list[IPAddress]:
    """All addresses the system resolver gives for host (any numeric form included)."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise BlockedAddress(f"cannot resolve {host}: {error.strerror}") from error
    return [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]


@dataclass(frozen=True)
class AddressPolicy:
    """Decides, for a host and port, the one checked address a connection may use."""

    allow: AllowList = field(default_factory=AllowList)
    resolve: Resolver = system_resolve

    async def checked_address(self, host: str, port: int) -> str:
        host = host.strip("[]")
        addresses = await self.resolve(host, port)
        if not addresses:
            raise BlockedAddress(f"{host} has no addresses")
        if self.allow.allows(host, port):
            return str(addresses[0])
        for address in addresses:
            if not is_public_address(address):
                raise BlockedAddress(f"{host} resolves to a non-public address ({address})")
        return str(addresses[0])


class GuardedNetworkBackend(httpcore.AsyncNetworkBackend):
    """httpcore backend that connects only to addresses the policy checked.

    TLS still uses the original host name (httpcore passes it to start_tls), so
    certificates are verified against the name, not the address.
    """

    def __init__(self, policy: AddressPolicy) -> None:
        self._policy = policy
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        address = await self._policy.checked_address(host, port)
        return await self._inner.connect_tcp(
            address, port, timeout=timeout, local_address=local_address,
            socket_options=socket_options,
        )  # fmt: skip

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise BlockedAddress("unix sockets are never reachable from the browser")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)
