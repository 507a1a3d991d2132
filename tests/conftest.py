from collections.abc import Iterator

import pytest

from tests.browser.fixture_site import HitCounter, fixture_app
from tests.servers import serve


@pytest.fixture(scope="session")
def site() -> Iterator[str]:
    """Base URL of the fixture site on 127.0.0.1."""
    with serve(fixture_app()) as base_url:
        yield base_url


@pytest.fixture(scope="session")
def internal() -> Iterator[tuple[str, HitCounter]]:
    """A loopback service no test allows: any hit on it is an SSRF hole."""
    counter = HitCounter()
    with serve(counter) as base_url:
        yield base_url, counter
