import json
import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.agent.fake_policy import Script, fake_policy_app
from tests.browser.fixture_site import HitCounter, fixture_app
from tests.servers import serve
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.browser.corpus import (
    MANUALS,
    build_corpus,
    download_wiki_summaries,
    installed,
    manual_pages,
    wikipedia_pages,
)
from webgpt.browser.web import Web, WebOptions
from webgpt.service.app import create_app
from webgpt.service.metrics import Metrics
from webgpt.service.scoring import build_decline_judge, build_quote_ranker, build_scorer
from webgpt.service.serving import AnswerService
from webgpt.service.settings import ServiceSettings
from webgpt.service.store import FeedbackStore

# Fixtures that train a model or start a database server: `make test-fast` (-m "not slow")
# skips every test that uses one, as it skips the tests marked slow by hand (those that
# start vLLM, Chromium or a `webgpt` command, or train inline).
SLOW_FIXTURES = frozenset({"postgres", "reward_checkpoint", "trained", "tiny_bc"})


def pytest_configure(config: pytest.Config) -> None:
    # The scripted policies answer without the shipped quote ranker, in this process and in
    # the commands tests start (tests/servers.COMMAND_ENV); a test of the ranker names one.
    os.environ["WEBGPT_QUOTE_RANKER"] = "none"


@pytest.hookimpl(tryfirst=True)  # before the -m selection reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


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
        "extract": "The Raven is a large Corvus species, bigger than the Crow. Ravens live "
        "up to 21 years in the wild.",
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


CROW_QUOTE = "Crows are birds of the genus Corvus."


@pytest.fixture
def script() -> Script:
    """The scripted policy: scripted commands first, then it browses by reading the page."""
    return Script(oracle_quote=CROW_QUOTE, answers=["Crows are corvids [1]."] * 20)


@pytest.fixture
def policy_url(script: Script) -> Iterator[str]:
    with serve(fake_policy_app(script)) as base:
        yield base + "/v1"


@pytest.fixture
def service_url(offline_store: Path, policy_url: str) -> Callable[..., contextmanager]:  # type: ignore[type-arg]
    """Start the real app on loopback with settings overrides; yields its base URL."""

    @contextmanager
    def start(**overrides: object) -> Iterator[str]:
        settings = ServiceSettings(policy_url=policy_url, policy_model="scripted", **overrides)  # type: ignore[arg-type]
        web = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
        policy = OpenAIPolicy(policy_url, "scripted", backoff_s=0.01, max_retries=1)
        store = FeedbackStore(
            Path(overrides.get("feedback_db") or offline_store.parent / "fb.sqlite")
        )  # type: ignore[arg-type]
        scorer = build_scorer(settings)  # the reward wiring `webgpt serve` uses
        judge, ranker = build_decline_judge(settings), build_quote_ranker(settings)
        service = AnswerService(
            settings,
            web,
            policy,
            scorer,
            Metrics(),
            store,
            decline_judge=judge,
            quote_ranker=ranker,
        )
        with serve(create_app(service)) as base:
            yield base

    return start


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    """A real PostgreSQL server for the session (tests/postgres.py); its admin URL."""
    from tests.postgres import postgres_server

    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str | Path:
    """Each store test runs on a SQLite file and on a fresh database of a real PostgreSQL."""
    if request.param == "sqlite":
        return tmp_path / "feedback.sqlite"
    from tests.postgres import fresh_database

    return fresh_database(request.getfixturevalue("postgres"))


@pytest.fixture(scope="session")
def reward_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny reward model trained to prefer answers saying the sky is blue ("rm-bon")."""
    from tests.reward.tiny import train_tiny_reward_model, write_comparisons

    folder = tmp_path_factory.mktemp("bon")
    comparisons = folder / "c.jsonl"
    write_comparisons(comparisons, stories=120)
    return train_tiny_reward_model(folder, comparisons, "rm-bon")


@pytest.fixture(scope="session")
def embedded_web_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The offline web `make demo` browses, as `webgpt corpus build` makes it: the
    registry's Wikipedia summaries and every manual installed (scripts/install.sh installs
    them all)."""
    store = tmp_path_factory.mktemp("embedded-web") / "web.sqlite"
    manuals, _ = installed(MANUALS)
    build_corpus(
        store,
        [
            ("wikipedia", wikipedia_pages(download_wiki_summaries())),
            *((manual.name, manual_pages(manual)) for manual in manuals),
        ],
    )
    return store


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
