import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from browser.corpus import build_corpus, wikipedia_pages
from tests.agent.fake_policy import Script, fake_policy_app
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


ARTICLES = {
    "Crow": {
        "title": "Crow",
        "extract": "Crows are birds of the genus Corvus. Crows can recognise "
        "individual human faces and remember them for years.",
        "description": "Genus of birds",
    },
    "Raven": {
        "title": "Raven",
        "extract": "The Raven is a large Corvus species, bigger than the Crow.",
        "description": "Bird",
    },
}


@pytest.fixture(scope="session")
def offline_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("offline")
    summaries = folder / "summaries.json"
    summaries.write_text(json.dumps(ARTICLES))
    store = folder / "web.sqlite"
    build_corpus(store, [("wikipedia", wikipedia_pages(summaries))])
    return store


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def policy_url(script: Script) -> Iterator[str]:
    with serve(fake_policy_app(script)) as base:
        yield base + "/v1"
