import ipaddress

import pytest

from webgpt.browser.errors import BlockedAddress
from webgpt.browser.netguard import (
    AddressPolicy,
    AllowList,
    check_url,
    is_public_address,
    system_resolve,
)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "100.64.0.1",  # CGNAT
        "0.0.0.0",
        "224.0.0.1",  # multicast
        "255.255.255.255",
        "::1",
        "::",
        "fc00::1",  # unique local
        "fd12:3456::1",
        "fe80::1",  # link-local
        "ff02::1",  # multicast
        "::ffff:127.0.0.1",  # IPv4-mapped
        "::ffff:169.254.169.254",
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "64:ff9b::a9fe:a9fe",  # NAT64 of the metadata address
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
        "fd00:ec2::254",  # AWS IPv6 metadata
        "::7f00:1",  # IPv4-compatible form of 127.0.0.1 (deprecated, not is_private)
        "::a9fe:a9fe",  # ... and of the metadata address
        "100::1",  # discard-only
        "2001:db8::1",  # documentation
        "3fff::1",  # documentation (RFC 9637)
        "5f00::1",  # segment routing SIDs
        "4000::1",  # outside global unicast 2000::/3
    ],
)
def test_non_public_addresses_are_refused(address: str) -> None:
    assert not is_public_address(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_addresses_pass(address: str) -> None:
    assert is_public_address(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "host",
    ["2130706433", "0x7f000001", "0177.0.0.1", "127.1", "0x7f.1", "localhost", "[::ffff:7f00:1]"],
)
async def test_numeric_and_named_forms_of_loopback_resolve_and_are_refused(host: str) -> None:
    with pytest.raises(BlockedAddress):
        await AddressPolicy().checked_address(host, 80)


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/x",
        "gopher://example.com/",
        "javascript:alert(1)",
        "http://user:pass@example.com/",
        "http://user@example.com/",
        "http://example.com:99999/",
        "http:///nohost",
    ],
)
def test_urls_that_are_not_plain_http_are_refused(url: str) -> None:
    with pytest.raises(BlockedAddress):
        check_url(url)


async def test_a_dns_answer_with_any_private_address_refuses_the_host() -> None:
    async def rebinding_resolver(
        host: str, port: int
    ) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
        return [ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address("10.0.0.7")]

    policy = AddressPolicy(resolve=rebinding_resolver)
    with pytest.raises(BlockedAddress, match="non-public"):
        await policy.checked_address("evil.example", 443)


async def test_allow_list_opens_exact_host_and_port_only() -> None:
    allow = AllowList.parse(["127.0.0.1:8123", "localhost"])
    assert allow.allows("127.0.0.1", 8123)
    assert not allow.allows("127.0.0.1", 8124)
    assert allow.allows("LOCALHOST", 1)
    policy = AddressPolicy(allow=allow)
    assert await policy.checked_address("127.0.0.1", 8123) == "127.0.0.1"
    with pytest.raises(BlockedAddress):
        await policy.checked_address("127.0.0.1", 8124)
    with pytest.raises(ValueError):
        AllowList.parse([":80"])


async def test_unresolvable_host_is_a_clear_error() -> None:
    with pytest.raises(BlockedAddress, match="cannot resolve"):
        await system_resolve("no-such-host.invalid", 80)
