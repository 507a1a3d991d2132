import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.openai_policy import OpenAIPolicy
from browser.corpus import build_corpus, wikipedia_pages
from browser.web import Web, WebOptions


@pytest.fixture
async def web(offline_store: Path) -> AsyncIterator[Web]:
    opened = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
    yield opened
    await opened.aclose()


@pytest.fixture
async def policy(policy_url: str) -> AsyncIterator[OpenAIPolicy]:
    client = OpenAIPolicy(policy_url, "scripted", backoff_s=0.01, timeout_s=2.0)
    yield client
    await client.aclose()


# A small offline web whose pages support several question styles (tests of the learning
# loop: questions, the scripted demonstrator, behavior cloning, evaluation).
LEARNING_ARTICLES = {
    "Ada Lovelace": {
        "title": "Ada Lovelace",
        "description": "English mathematician (1815–1852)",
        "extract": "Augusta Ada King, Countess of Lovelace was an English mathematician and "
        "writer, chiefly known for her work on the Analytical Engine.",
        "topic": "People",
    },
    "Mona Lisa": {
        "title": "Mona Lisa",
        "description": "Painting by Leonardo da Vinci",
        "extract": "The Mona Lisa is a half-length portrait painting by the Italian artist "
        "Leonardo da Vinci. It was painted by Leonardo da Vinci in the early sixteenth century.",
        "topic": "Arts",
    },
    "Kazan": {
        "title": "Kazan",
        "description": "Capital city of Tatarstan, Russia",
        "extract": "Kazan is a city in Russia on the Volga river. The city has a population "
        "of 1,308,660 residents.",
        "topic": "Geography",
    },
    "Tomato": {
        "title": "Tomato",
        "description": "Edible berry",
        "extract": "The tomato is a plant whose fruit is an edible berry that is eaten as a "
        "vegetable. It originated from western South America.",
        "topic": "Biology and health sciences",
    },
    "Crow": {
        "title": "Crow",
        "description": "Genus of birds",
        "extract": "Crows are birds of the genus Corvus. Crows can recognise individual "
        "human faces and remember them for years.",
        "topic": "Biology and health sciences",
    },
}


@pytest.fixture(scope="session")
def learning_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("learning-web")
    summaries = folder / "summaries.json"
    summaries.write_text(json.dumps(LEARNING_ARTICLES))
    store = folder / "web.sqlite"
    build_corpus(store, [("wikipedia", wikipedia_pages(summaries))])
    return store


@pytest.fixture
async def learning_web(learning_store: Path) -> AsyncIterator[Web]:
    opened = Web(WebOptions(offline_store=learning_store, offline_only=True, js_mode="never"))
    yield opened
    await opened.aclose()
