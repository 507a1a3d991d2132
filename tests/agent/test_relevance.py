"""Relevant quotes: a Quote may take only the sentences in view that bear most on the
question (agent.relevance, agent.grammar.browsing_regex, EpisodeConfig.relevant_quotes)."""

import re

import pytest

from tests.agent.fake_policy import Script
from tests.agent.test_agent import CROW_EPISODE
from webgpt.agent.episode import EpisodeConfig, run_episode
from webgpt.agent.grammar import browsing_regex
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.relevance import most_relevant, question_terms, term_weights
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web

MALAWI = [
    "Malawi, officially the Republic of Malawi, is a landlocked country in Southeast Africa.",
    "It is bordered by Zambia to the west, Tanzania to the north and northeast, and "
    "Mozambique to the east, south, and southwest.",
    "Malawi spans over 118,484 km2 and has an estimated population of 21 million.",
    "Malawi's capital and largest city is Lilongwe.",
    "The part of Africa now known as Malawi was settled around the 10th century.",
]
MALAWI_PAGE = "\n".join(MALAWI)
FIRST_SENTENCE = "Crows are birds of the genus Corvus."
FACES = "Crows can recognise individual human faces and remember them for years."


def test_the_sentence_that_answers_outranks_the_page_s_first() -> None:
    question = "which country borders malawi to the west"
    assert most_relevant(question, MALAWI, MALAWI_PAGE, 1) == [MALAWI[1]]
    assert most_relevant("what is the capital of Malawi?", MALAWI, MALAWI_PAGE, 1) == [MALAWI[3]]
    # roughly, how many: words of the question's kind, not of what it asks about
    assert most_relevant("roughly how many km2 does malawi span", MALAWI, MALAWI_PAGE, 1) == [
        MALAWI[2]
    ]
    # words are matched, not meanings: "people live" is not "population"
    assert most_relevant("how many people live in malawi", MALAWI, MALAWI_PAGE, 1) == [MALAWI[0]]


def test_the_chosen_keep_their_order_on_the_page_and_ties_keep_the_earlier() -> None:
    question = "when was malawi settled, and what is its capital"
    assert most_relevant(question, MALAWI, MALAWI_PAGE, 2) == [MALAWI[3], MALAWI[4]]
    # of the sentences naming Malawi, equally relevant, the first ones
    assert most_relevant("What is Malawi?", MALAWI, MALAWI_PAGE, 2) == [MALAWI[0], MALAWI[2]]
    assert most_relevant("???", MALAWI, MALAWI_PAGE, 2) == MALAWI[:2]
    assert most_relevant("which country borders malawi", MALAWI[:2], MALAWI_PAGE, 3) == MALAWI[:2]


def test_a_line_of_code_bears_on_no_question() -> None:
    """A signature or an example names the function and says nothing of it."""
    docs = [
        "json.dumps(obj, *, skipkeys=False, ensure_ascii=True, indent=None)",
        "Serialize obj to a JSON formatted str using this conversion table.",
        ">>> json.dumps([1, 2, 3], separators=(',', ':'))",
        "If ensure_ascii is true (the default), the output is guaranteed to have all incoming "
        "non-ASCII characters escaped.",
    ]
    question = "What does the json module's dumps function do?"
    assert most_relevant(question, docs, "\n".join(docs), 1) == [docs[1]]
    # prose that mentions a call, a formula, an aside in brackets: not code
    prose = [
        "calendar.month(theyear, themonth, w=0, l=0)",
        "Returns a month's calendar in a multi-line string using the formatmonth() of the "
        "TextCalendar class.",
    ]
    assert most_relevant("How is calendar.month() used?", prose, "\n".join(prose), 1) == [prose[1]]
    kaolinite = [
        "Kaolinite is a clay mineral.",
        "Kaolinite has the chemical composition Al2Si2O5(OH)4 (a layered silicate).",
    ]
    page = "\n".join(kaolinite)
    assert most_relevant("chemical formula of kaolinite", kaolinite, page, 1) == [kaolinite[1]]


def test_a_signature_heads_the_description_after_it() -> None:
    """The description does not name the function; the signature above it does."""
    docs = [
        "json.dumps(obj, *, skipkeys=False, ensure_ascii=True, indent=None)",
        "Serialize obj to a JSON formatted str using this conversion table.",
        "Keys in JSON are always strings: that is, loads(dumps(x)) != x if x has non-string keys.",
    ]
    question = "What does the json module's dumps function do?"
    assert most_relevant(question, docs, "\n".join(docs), 1) == [docs[1]]
    assert most_relevant(question, docs[1:], "\n".join(docs), 1) == [docs[2]]  # no signature


def test_a_short_word_matches_the_opening_of_a_longer_one() -> None:
    life = ["Anthony was an American social reformer.", "Anthony died in 1906."]
    question = "In what year did Susan B. Anthony die?"
    assert most_relevant(question, life, "\n".join(life), 1) == [life[1]]


def test_a_word_weighs_less_the_more_of_the_page_s_sentences_hold_it() -> None:
    terms = question_terms("Which country borders Malawi to the west?")
    assert terms == {"count", "borde", "malaw", "west"}  # words compared by their first five
    weights = term_weights(terms, MALAWI_PAGE)
    assert weights["west"] > weights["malaw"] > 0
    assert weights["count"] == weights["west"]  # each in one sentence
    assert term_weights({"zzz"}, "") == {"zzz": pytest.approx(0.6931, abs=1e-3)}  # no sentence


async def test_the_browsing_grammar_offers_only_the_relevant_quotes(web: Web) -> None:
    session = web.session(config=SessionConfig(max_actions=12))
    session.reset("Do crows remember human faces?")
    for command in CROW_EPISODE[:2]:
        await session.step(command)
    every = browsing_regex(session)
    assert re.fullmatch(every, f"Quote: {FIRST_SENTENCE}")
    assert re.fullmatch(every, f"Quote: {FACES}")
    relevant = browsing_regex(session, relevant_quotes=1)
    assert not re.fullmatch(relevant, f"Quote: {FIRST_SENTENCE}")
    assert re.fullmatch(relevant, f"Quote: {FACES}")
    assert re.fullmatch(browsing_regex(session, relevant_quotes=2), f"Quote: {FIRST_SENTENCE}")


async def test_an_episode_passes_the_rule_to_its_browsing_grammar(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    script.commands = [*CROW_EPISODE[:2], f"Quote: {FACES}", "End: Answer"]
    script.answers = ["Crows remember faces [1]."]
    question = "Do crows remember human faces?"
    config = EpisodeConfig(relevant_quotes=1)
    result = await run_episode(0, web.session(), policy, question, config)
    assert result.answer == "Crows remember faces [1]."
    on_the_page = [r for r in script.requests if not r.get("stream")][2]
    grammar = on_the_page["structured_outputs"]["regex"]
    assert re.fullmatch(grammar, f"Quote: {FACES}\n")
    assert not re.fullmatch(grammar, f"Quote: {FIRST_SENTENCE}\n")


def test_the_rule_is_checked() -> None:
    with pytest.raises(ValueError, match="1 or more"):
        EpisodeConfig(relevant_quotes=0)
