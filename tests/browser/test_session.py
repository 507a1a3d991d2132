import asyncio

import pytest

from tests.browser.fakes import SITE, FixtureWeb
from webgpt.browser.errors import EpisodeOver, RateLimited
from webgpt.browser.loader import PageCache, PageLoader
from webgpt.browser.observation import answer_prompt
from webgpt.browser.search.base import SearchResult
from webgpt.browser.session import BrowserSession, SessionConfig
from webgpt.browser.workers import RenderWorkers


@pytest.fixture
def web() -> FixtureWeb:
    return FixtureWeb()


def make_session(web: FixtureWeb, workers: RenderWorkers, **config: object) -> BrowserSession:
    cache = PageCache(PageLoader(fetcher=web, workers=workers))
    return BrowserSession(web, cache, SessionConfig(**config))  # type: ignore[arg-type]


async def open_page(session: BrowserSession, name: str) -> None:
    await session.step(f"Search {name}")
    result = await session.step("Clicked on link 0")
    assert result.event.type == "page" and result.event.kind == "html"


async def test_invalid_actions_count_say_why_and_change_nothing_else(
    web: FixtureWeb, workers: RenderWorkers
) -> None:
    session = make_session(web, workers, max_actions=5)
    session.reset("q")
    before = session.observation()
    result = await session.step("please show me the answer")
    assert result.event.type == "invalid_action"
    assert not result.done
    refused = "Refused: not a browsing command: 'please show me the answer'"
    assert result.observation == before.replace("Actions left: 5", "Actions left: 4").replace(
        "♦Past actions\n", f"♦Past actions\n{refused}\n"
    )
    for text in ("Clicked on link 7", "Back", "Quote: anything"):  # no page, no history
        assert (await session.step(text)).event.type == "invalid_action"
    last = await session.step("Top")
    assert last.done and session.end_reason == "action_limit"
    with pytest.raises(EpisodeOver):
        await session.step("Top")


async def test_quote_budget_ends_browsing_and_caps_the_quotes(
    web: FixtureWeb, workers: RenderWorkers
) -> None:
    session = make_session(web, workers, quote_budget_chars=50)
    session.reset("q")
    await open_page(session, "article")
    await session.step("Find in page: the secret ingredient")
    first = await session.step("Quote: the secret ingredient is patience")
    assert not first.done
    await session.step("Find in page: Paragraph 12.")
    second = await session.step("Quote: Paragraph 12.━number 13")
    assert second.done and session.end_reason == "quote_budget"
    assert session.quote_chars == 50


async def test_answer_prompt_has_the_exact_format(web: FixtureWeb, workers: RenderWorkers) -> None:
    session = make_session(web, workers)
    session.reset("Why bake bread?")
    with pytest.raises(EpisodeOver):
        session.answer_prompt()
    await open_page(session, "article")
    await session.step("Find in page: the secret ingredient")
    await session.step("Quote: the secret ingredient is patience")
    result = await session.step("End: Answer")
    assert result.done and session.end_reason == "answer"
    assert session.answer_prompt() == (
        "Why bake bread?■[1] A long article about bread (site.example)\n\n"
        "the secret ingredient is patience■"
    )
    assert session.answer_prompt() == answer_prompt(session.question, session.quotes)


async def test_the_session_holds_every_driver_to_the_command_contract(
    web: FixtureWeb, workers: RenderWorkers
) -> None:
    """What the grammar would not offer is refused here too, for a driver that has no
    grammar: each refusal says why, counts as an action and changes nothing else."""
    session = make_session(web, workers)
    session.reset("q")

    async def refused(command: str, why: str) -> None:
        quotes, view = list(session.quotes), session.window()
        result = await session.step(command)
        assert result.event.type == "invalid_action" and why in result.event.reason
        assert f"Refused: {result.event.reason}" in result.observation
        assert (session.quotes, session.window()) == (quotes, view) and not result.done

    await refused("Back", "there is no page to go back to")
    await refused("End: Answer", "End: Answer needs a quote to answer from")
    await open_page(session, "article")
    await refused("Clicked on link 99", "there is no link 99 on this page")
    await refused("Quote: the secret ingredient is impatience", "not on the page")
    await refused("Quote: Paragraph 1.━the secret ingredient is impatience", "not on the page")
    in_view = "Paragraph 1. Sourdough relies on wild yeast and lactic acid bacteria."
    taken = await session.step(f"Quote: {in_view.upper().replace(' ', '  ')}")  # case, spacing free
    assert taken.event.type == "quote" and taken.event.quote.extract == in_view
    again = await session.step(f"Quote: {in_view}")
    assert again.event.type == "invalid_action" and "quoted already" in again.event.reason
    # text found in the page out of view is quoted as in WebGPT's browser; the view stays
    view = session.window()
    assert "the secret ingredient" not in " ".join(session.window_text())
    below = await session.step("Quote: the secret ingredient is patience")
    assert below.event.type == "quote" and session.window() == view
    assert session.at_opening_view  # no command of the driver's has moved it
    assert len(session.quotes) == 2
    assert session.actions_taken == 10
    assert (await session.step("End: Answer")).done


@pytest.mark.parametrize("reason", ["Nonsense", "Controversial"])
async def test_end_without_answer(reason: str, web: FixtureWeb, workers: RenderWorkers) -> None:
    session = make_session(web, workers)
    session.reset("q")
    result = await session.step(f"End: {reason}")
    assert result.done and session.end_reason == reason.lower()


async def test_pages_containing_the_question_are_censored(
    web: FixtureWeb, workers: RenderWorkers
) -> None:
    question = "Is it true that paragraph 9. Kneading develops the gluten network that traps gas?"
    session = make_session(web, workers)
    session.reset(question)
    await session.step("Search article")
    result = await session.step("Clicked on link 0")
    assert result.event.type == "page" and result.event.kind == "error"
    assert "censored" in result.observation

    uncensored = make_session(web, workers, censor=False)
    uncensored.reset(question)
    await uncensored.step("Search article")
    assert (await uncensored.step("Clicked on link 0")).event.kind == "html"  # type: ignore[union-attr]


async def test_reference_answer_censors_too(web: FixtureWeb, workers: RenderWorkers) -> None:
    session = make_session(web, workers)
    session.reset(
        "q", reference_answer="The baker said: the secret ingredient is patience, and time does"
    )
    await session.step("Search article")
    assert (await session.step("Clicked on link 0")).event.kind == "error"  # type: ignore[union-attr]


class _ListEngine:
    def __init__(self, results: list[SearchResult]) -> None:
        self.results = results

    async def search(self, query: str, count: int) -> list[SearchResult]:
        return self.results[:count]


class _FailingEngine:
    async def search(self, query: str, count: int) -> list[SearchResult]:
        raise RateLimited("engine rate limit reached", retry_after=3)


async def test_search_results_drop_blocked_domains(web: FixtureWeb, workers: RenderWorkers) -> None:
    engine = _ListEngine(
        [
            SearchResult("Reddit thread", "https://www.reddit.com/r/x", "no"),
            SearchResult("Quora answer", "https://quora.com/q", "no"),
            SearchResult("Fully qualified", "https://www.reddit.com./r/x", "no"),
            SearchResult("Script", "javascript:fetch('http://169.254.169.254/')", "no"),
            SearchResult("Local file", "file:///etc/passwd", "no"),
            SearchResult("Good page", f"{SITE}article.html", "yes <b>bold</b>"),
        ]
    )
    session = BrowserSession(engine, PageCache(PageLoader(fetcher=web, workers=workers)))
    session.reset("q")
    result = await session.step("Search anything")
    assert [r.title for r in result.event.results] == ["Good page"]  # type: ignore[union-attr]
    assert "reddit" not in result.observation and "quora" not in result.observation
    assert "【0†Good page†site.example】" in result.observation


async def test_search_failure_is_an_error_page_not_a_crash(
    web: FixtureWeb, workers: RenderWorkers
) -> None:
    session = BrowserSession(_FailingEngine(), PageCache(PageLoader(fetcher=web, workers=workers)))
    session.reset("q")
    result = await session.step("Search crows")
    assert result.event.type == "search" and result.event.error == "engine rate limit reached"
    assert "Search failed: engine rate limit reached" in result.observation
    assert not result.done


async def test_episodes_of_a_request_share_one_fetch_per_url(workers: RenderWorkers) -> None:
    web = FixtureWeb(delay_s=0.05)
    cache = PageCache(PageLoader(fetcher=web, workers=workers))
    sessions = [BrowserSession(web, cache) for _ in range(4)]

    async def browse(session: BrowserSession) -> None:
        session.reset("q")
        await session.step("Search article")
        await session.step("Clicked on link 0")

    await asyncio.gather(*(browse(s) for s in sessions))
    assert web.fetches == {f"{SITE}article.html": 1}
    assert cache.misses == 1 and cache.hits == 3
    assert all(s.page.title == "A long article about bread" for s in sessions)


async def test_only_recent_past_actions_are_shown(web: FixtureWeb, workers: RenderWorkers) -> None:
    session = make_session(web, workers)
    session.reset("q")
    for n in range(35):
        await session.step(f"Search query {n}")
    observation = session.observation()
    assert "Search query 4\n" not in observation
    assert "Search query 5\n" in observation and "Search query 34\n" in observation
    assert len(session.past_actions) == 35


async def test_a_view_shown_again_with_no_quote_since_is_a_loop(
    web: FixtureWeb, workers: RenderWorkers
) -> None:
    """looping: the view now shown (page, first line in view) was shown before with as many
    quotes held. A command that leaves the view as it was shows it again; a search's results
    and an error page never count."""
    session = make_session(web, workers, max_actions=20)
    session.reset("q")
    await open_page(session, "article")
    assert not session.looping
    await session.step("Scrolled down 1")
    assert not session.looping  # a view not shown before
    await session.step("Find in page: no such words anywhere")  # found nothing: view unchanged
    assert session.looping
    await session.step("Scrolled up 1")
    assert session.looping  # the page's top, shown when it opened
    await session.step("Find in page: the secret ingredient")
    assert not session.looping
    await session.step("Quote: the secret ingredient is patience")
    assert not session.looping  # the same view, but with a quote more
    await session.step("Top")
    assert not session.looping  # the top with one quote held: not shown so before
    await session.step("Search article")
    await session.step("Search article")
    assert not session.looping  # results pages do not count
    await session.step("Clicked on link 0")
    assert session.looping  # back at the top it showed with one quote held
    session.reset("q")
    await open_page(session, "article")
    assert not session.looping  # a new episode remembers nothing
