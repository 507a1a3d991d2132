from collections.abc import AsyncIterator, Iterator
from typing import TypeVar

import pytest

from tests.browser.remote_engines import BING_KEY, BRAVE_KEY, engines_app
from tests.servers import free_port, serve
from webgpt.browser.errors import RateLimited, SearchError
from webgpt.browser.search.base import SearchEngine
from webgpt.browser.search.remote import BingSearch, BraveSearch, JsonSearchApi, SearxngSearch

E = TypeVar("E", bound=JsonSearchApi)


@pytest.fixture(scope="module")
def engines_url() -> Iterator[str]:
    with serve(engines_app()) as url:
        yield url


@pytest.fixture
async def opened() -> AsyncIterator[list[JsonSearchApi]]:
    """Engines a test makes register here and are closed after it."""
    engines: list[JsonSearchApi] = []
    yield engines
    for engine in engines:
        await engine.aclose()


def keep(opened: list[JsonSearchApi], engine: E) -> E:
    opened.append(engine)
    return engine


def all_engines(url: str, opened: list[JsonSearchApi]) -> list[SearchEngine]:
    return [
        keep(opened, SearxngSearch(base_url=url)),
        keep(opened, BraveSearch(api_key=BRAVE_KEY, base_url=url)),
        keep(opened, BingSearch(api_key=BING_KEY, base_url=url)),
    ]


async def test_searxng_results(engines_url: str, opened: list[JsonSearchApi]) -> None:
    results = await keep(opened, SearxngSearch(base_url=engines_url)).search("crows", 10)
    assert [(r.title, r.url) for r in results] == [
        ("Crow - Wikipedia", "https://en.wikipedia.org/wiki/Crow"),
        ("r/crows", "https://www.reddit.com/r/crows"),  # the session removes blocked domains
    ]
    assert results[0].snippet == "Crows are birds of the genus Corvus."


async def test_brave_results_lose_their_markup(
    engines_url: str, opened: list[JsonSearchApi]
) -> None:
    engine = keep(opened, BraveSearch(api_key=BRAVE_KEY, base_url=engines_url))
    [result] = await engine.search("crows", 10)
    assert result.title == "Gifts From Crows"
    assert result.snippet == "Many crows bring & leave gifts."
    assert await engine.search("nothing", 10) == []


async def test_bing_results(engines_url: str, opened: list[JsonSearchApi]) -> None:
    results = await keep(opened, BingSearch(api_key=BING_KEY, base_url=engines_url)).search(
        "crows", 1
    )
    assert [(r.title, r.snippet) for r in results] == [
        ("Crow facts", "Crows can recognise human faces.")
    ]


@pytest.mark.parametrize("index", [0, 1, 2])
async def test_rate_limits_are_typed_with_retry_after(
    engines_url: str, index: int, opened: list[JsonSearchApi]
) -> None:
    engine = all_engines(engines_url, opened)[index]
    with pytest.raises(RateLimited) as caught:
        await engine.search("rate limit", 10)
    assert caught.value.retry_after in (1.0, 2.0)


@pytest.mark.parametrize("index", [0, 1, 2])
@pytest.mark.parametrize(
    ("query", "message"), [("server error", "HTTP 500"), ("not json", "not JSON")]
)
async def test_engine_faults_are_search_errors(
    engines_url: str, index: int, query: str, message: str, opened: list[JsonSearchApi]
) -> None:
    with pytest.raises(SearchError, match=message):
        await all_engines(engines_url, opened)[index].search(query, 10)


async def test_bad_keys_and_missing_keys(engines_url: str, opened: list[JsonSearchApi]) -> None:
    with pytest.raises(SearchError, match="subscription token is invalid"):
        await keep(opened, BraveSearch(api_key="wrong", base_url=engines_url)).search("crows", 5)
    with pytest.raises(SearchError, match="HTTP 401"):
        await keep(opened, BingSearch(api_key="wrong", base_url=engines_url)).search("crows", 5)
    with pytest.raises(SearchError, match="API key"):
        await keep(opened, BraveSearch(base_url=engines_url)).search("crows", 5)


async def test_unreachable_engine_is_a_search_error(opened: list[JsonSearchApi]) -> None:
    engine = keep(opened, SearxngSearch(base_url=f"http://127.0.0.1:{free_port()}", timeout_s=2))
    with pytest.raises(SearchError, match="unreachable"):
        await engine.search("crows", 5)
