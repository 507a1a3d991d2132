"""The learned result order (agent.result_order): where the quote ranker narrows a factoid's
Quote, a search's first results are shown best page first, by the ranker's score of each
page's best sentence; an explanation's searches keep the engine's order."""

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.agent.fake_policy import Script
from tests.agent.test_agent import READS_EXPLANATIONS, READS_FACTS, collect_into
from tests.agent.test_quote_ranking import WordRanker
from tests.scripts import load_script
from webgpt.agent.episode import EpisodeConfig, run_episode
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.queries import question_query
from webgpt.agent.result_order import RESULT_PAGES, BestPageFirst
from webgpt.agent.trace import ActionEvent, TraceEvent
from webgpt.browser.corpus import build_corpus, wikipedia_pages
from webgpt.browser.events import SearchEvent
from webgpt.browser.web import Web, WebOptions

# Each page holds the searched words; only the Raven's says "months".
BIRDS = {
    "Crow": "Crows remember a human face for years. Crows are black birds.",
    "Raven": "Ravens, like crows, remember a human face for months. Ravens are large.",
    "Magpie": "Magpies are noisy. Magpies, like crows, remember a human face they have seen.",
    "Jackdaw": "Jackdaws, like crows, remember a human face. Jackdaws nest in towers.",
    "Rook": "Rooks, like crows, remember a human face. Rooks nest in colonies.",
}
QUESTION = "How long do crows remember a human face?"
SEARCH = "Search crows remember human face"


@pytest.fixture
async def birds_web(tmp_path: Path) -> AsyncIterator[Web]:
    summaries = tmp_path / "birds.json"
    summaries.write_text(json.dumps({t: {"title": t, "extract": e} for t, e in BIRDS.items()}))
    build_corpus(tmp_path / "web.sqlite", [("wikipedia", wikipedia_pages(summaries))])
    opened = Web(
        WebOptions(offline_store=tmp_path / "web.sqlite", offline_only=True, js_mode="never")
    )
    yield opened
    await opened.aclose()


async def test_the_page_whose_best_sentence_scores_highest_comes_first(birds_web: Web) -> None:
    session = birds_web.session()
    session.reset(QUESTION)
    found = await session.engine.search("crows remember human face", 10)
    assert len(found) == len(BIRDS)
    ranker = WordRanker("months")
    order = BestPageFirst(ranker, QUESTION, session.peek)
    raven = next(i for i, r in enumerate(found) if r.title == "Raven")
    found = [*found[raven:], *found[:raven]]  # Raven first: the engine's order, rotated
    kept = await order(found)
    assert kept == found and not order.reordered  # Raven's page is the best of the first 3
    late = [*found[1:RESULT_PAGES], found[0], *found[RESULT_PAGES:]]  # Raven third
    shown = await order(late)
    assert order.reordered
    assert shown == [late[2], late[0], late[1], *late[RESULT_PAGES:]]  # the rest as they were
    read = [title for _, title, _ in ranker.calls]
    assert sorted(read) == sorted(r.title for r in found[:RESULT_PAGES])  # each page once
    assert session.page.kind == "blank" and session.actions_taken == 0  # nothing was opened


async def test_a_censored_page_comes_last(birds_web: Web) -> None:
    """A page that holds the question is censored: a click would show an error page, so it
    has no sentence to score."""
    session = birds_web.session()
    session.reset(BIRDS["Raven"])  # the whole page: censored
    found = await session.engine.search("crows remember human face", 10)
    raven = next(r for r in found if r.title == "Raven")
    others = [r for r in found if r.title != "Raven"][:2]
    order = BestPageFirst(WordRanker("months"), session.question, session.peek)
    assert await order([raven, *others]) == [*others, raven]


async def test_an_episode_shows_its_searches_best_page_first_and_says_so(
    birds_web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    script.commands = [SEARCH, "Clicked on link 0"]
    engine = await birds_web.session().engine.search("crows remember human face", 10)
    third = engine[2].title  # the ranker prefers its page's sentences: they hold its name
    ranker = WordRanker(third)
    config = EpisodeConfig(
        relevant_quotes=1, quote_ranker=ranker, result_order=True, question_kind=READS_FACTS
    )
    assert config.quote_choices(QUESTION, quotes_held=1) == 1  # a fact the ranker narrows
    events: list[TraceEvent] = []
    session = birds_web.session()
    result = await run_episode(0, session, policy, QUESTION, config, collect_into(events))
    actions = [e for e in events if isinstance(e, ActionEvent)]
    search = actions[0].event
    assert isinstance(search, SearchEvent) and search.results[0].title == third
    assert "result_order" in actions[0].narrowed
    assert actions[1].event.type == "page" and "result_order" not in actions[1].narrowed
    assert session.page.title == third  # link 0 is the page shown first
    assert result.timings.scoring_s > 0
    assert session.result_order is None  # the order was this episode's


async def test_an_explanation_keeps_the_engine_s_order(
    birds_web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    script.commands = [SEARCH]
    ranker = WordRanker("months")
    config = EpisodeConfig(
        relevant_quotes=1, quote_ranker=ranker, result_order=True, question_kind=READS_EXPLANATIONS
    )
    question = "Why do crows remember a human face?"
    assert config.quote_choices(question, quotes_held=1) is None
    events: list[TraceEvent] = []
    await run_episode(0, birds_web.session(), policy, question, config, collect_into(events))
    search = next(e for e in events if isinstance(e, ActionEvent)).event
    engine = await birds_web.session().engine.search("crows remember human face", 10)
    assert isinstance(search, SearchEvent)
    assert [r.url for r in search.results] == [r.url for r in engine]


async def test_the_reach_script_reads_the_first_results_as_the_order_does(
    birds_web: Web,
) -> None:
    """scripts/quote_page_reach.py --results: each of the question's own search's first
    pages scored by its best sentence, in the engine's order."""
    reach = load_script("quote_page_reach")
    question = "Do crows remember a human face?"
    bests = await reach._result_bests(birds_web, WordRanker("months"), question, RESULT_PAGES)
    found = await birds_web.session().engine.search(question_query(question), 10)
    assert len(bests) == RESULT_PAGES
    for (score, sentence), result in zip(bests, found, strict=False):
        assert sentence in BIRDS[result.title]
        assert score == (1.0 if "months" in sentence else 0.0)
