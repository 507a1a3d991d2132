"""The question's own search: the query made of a question's words (agent.queries), which
the scripted demonstrator searches with and, under question search, an episode's first
Search must be (grammar.browsing_regex, EpisodeConfig.question_search)."""

import random
import re

from tests.agent.fake_policy import Script
from tests.conftest import CROW_QUOTE
from webgpt.agent.episode import EpisodeConfig, run_episode
from webgpt.agent.grammar import browsing_regex
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.queries import MAX_QUERY_WORDS, question_query
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web
from webgpt.evals.questions import Question
from webgpt.learning.scripted import search_queries

CROWS = "Do crows remember human faces?"


def test_the_query_is_what_the_question_asks_about() -> None:
    assert question_query("which country borders spain to the west") == "borders spain west"
    assert question_query("Who won the 2038 FIFA World Cup?") == "won 2038 FIFA World Cup"
    # a qualified name is searched as the question writes it, which names the module's page
    assert question_query("What does json.dumps() do?") == "json.dumps"
    assert question_query("What does the os.path.join function do?") == "os.path.join"
    assert question_query("  what is   it  ") == "it"
    assert question_query("What is the?") == "What is the?"  # no word of its own: all of it
    many = " ".join(f"word{i}" for i in range(40))
    assert question_query(many).split() == many.split()[:MAX_QUERY_WORDS]


def test_the_demonstrator_searches_with_the_same_query() -> None:
    question = Question(
        question="which country borders spain to the west",
        kind="factoid",
        gold_answers=["Portugal"],
        url="https://en.wikipedia.org/wiki/Spain",
        title="Spain",
    )
    for seed in range(5):  # its words first, then the page's title where they miss it
        assert search_queries(question, random.Random(seed)) == ["borders spain west", "Spain"]


async def test_the_first_search_is_the_question_s_words_and_later_ones_are_free(
    web: Web,
) -> None:
    session = web.session(config=SessionConfig(max_actions=12))
    session.reset(CROWS)
    first = browsing_regex(session, question_search=True)
    assert re.fullmatch(first, "Search crows remember human faces")
    assert not re.fullmatch(first, "Search Crow")  # a title guessed: what v14 writes
    assert re.fullmatch(browsing_regex(session), "Search Crow")  # off: any query
    await session.step("Search crows remember human faces")
    assert re.fullmatch(browsing_regex(session, question_search=True), "Search Crow")


async def test_an_episode_passes_question_search_to_its_browsing_grammar(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    script.commands = ["Search crows remember human faces", "Search Crow", "Clicked on link 0"]
    result = await run_episode(0, web.session(), policy, CROWS, EpisodeConfig(question_search=True))
    first, second = [r for r in script.requests if not r.get("stream")][:2]
    assert re.fullmatch(first["structured_outputs"]["regex"], "Search crows remember human faces\n")
    assert not re.fullmatch(first["structured_outputs"]["regex"], "Search Crow\n")
    assert re.fullmatch(second["structured_outputs"]["regex"], "Search Crow\n")
    assert [q.extract for q in result.quotes] == [CROW_QUOTE]
