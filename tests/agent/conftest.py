import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from agent.openai_policy import OpenAIPolicy
from browser.corpus import build_corpus, wikipedia_pages
from browser.web import Web, WebOptions
from tests.agent.fake_policy import Script, fake_policy_app
from tests.servers import serve

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
async def web(offline_store: Path) -> AsyncIterator[Web]:
    opened = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
    yield opened
    await opened.aclose()


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def policy_url(script: Script) -> Iterator[str]:
    with serve(fake_policy_app(script)) as base:
        yield base + "/v1"


@pytest.fixture
async def policy(policy_url: str) -> AsyncIterator[OpenAIPolicy]:
    client = OpenAIPolicy(policy_url, "scripted", backoff_s=0.01, timeout_s=2.0)
    yield client
    await client.aclose()
