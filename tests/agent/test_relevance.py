"""Relevant quotes: a Quote for a question asking for no explanation may take only the
sentences in view that bear most on it (agent.relevance, agent.grammar.browsing_regex,
EpisodeConfig.relevant_quotes)."""

import math
import re

import pytest

from tests.agent.fake_policy import Script
from tests.agent.test_agent import CROW_EPISODE
from webgpt.agent.episode import EpisodeConfig, run_episode
from webgpt.agent.grammar import browsing_regex
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.relevance import (
    NUMBER_TERM,
    most_relevant,
    question_terms,
    restates,
    term_weights,
)
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


def test_a_number_bears_on_a_how_many_question() -> None:
    """Under quantity numbers a how-many question counts a number among its terms: the
    sentence that gives one outranks the page's first, which names the subject alone."""
    question = "how many people live in malawi"
    assert most_relevant(question, MALAWI, MALAWI_PAGE, 1, numbers_bear=True) == [MALAWI[2]]
    # weighted as a word would be: two of the page's five sentences show a number
    weight = term_weights({NUMBER_TERM}, MALAWI_PAGE)[NUMBER_TERM]
    assert weight == pytest.approx(math.log((5 + 1) / (2 + 0.5)))
    assert most_relevant(question, MALAWI, MALAWI_PAGE, 1) == [MALAWI[0]]  # off: no number
    assert EpisodeConfig().wants_number(question)
    assert not EpisodeConfig(quantity_numbers=False).wants_number(question)
    assert not EpisodeConfig().wants_number("which country borders malawi to the west")


TUNIS = [
    "Capital and largest city of Tunisia",  # the page's short description
    "Tunis is the capital and largest city of Tunisia.",
    "The greater metropolitan area of Tunis has some 2.7 million residents.",
]
WHITEHEAD = [
    "Alfred North Whitehead",
    "English mathematician and philosopher (1861–1947)",
    "Alfred North Whitehead was an English mathematician and philosopher.",
    "He created the philosophical school known as process philosophy.",
]


def test_a_sentence_that_restates_the_question_bears_on_it_not_at_all() -> None:
    """A question made from a page's short description holds all its words: the line
    restates the question and says nothing of what it asks."""
    question = "What is the name of the capital and largest city of Tunisia?"
    assert restates(TUNIS[0], question)
    assert not restates(TUNIS[1], question)  # "Tunis" is not "Tunisia"
    assert most_relevant(question, TUNIS, "\n".join(TUNIS), 1) == [TUNIS[1]]
    emperor = [
        "Emperor of China from 221 to 210 BC",
        "Qin Shi Huang was the founder of the Qin dynasty and the first emperor of China.",
    ]
    asked = "What is the name of the emperor of China from 221 to 210 BC?"
    assert most_relevant(asked, emperor, "\n".join(emperor), 1) == [emperor[1]]
    # a word of the question extended is the question's too, and its kind words add nothing
    assert restates("Whitehead died.", "When did Whitehead die?")
    assert not restates("Whitehead died in 1947.", "When did Whitehead die?")


def test_a_year_question_takes_a_sentence_showing_a_number_first() -> None:
    """On a biography most sentences name the subject and many show a year: the number
    term weighs little, and the page's first sentence about the man outranked his dates."""
    question = "In what year did Alfred North Whitehead die?"
    page = "\n".join([*WHITEHEAD, "In 1910 he wrote Principia Mathematica with Russell."])
    assert most_relevant(question, WHITEHEAD, page, 1, numbers_bear=True) == [WHITEHEAD[1]]
    assert most_relevant(question, WHITEHEAD, page, 1) == [WHITEHEAD[2]]  # off: words alone
    # a number the question shows is not an answer to it, nor a line of code's
    asked = "How many people lived in Tunis in 2020?"
    numbered = ["Tunis had 638,845 people.", "In 2020 Tunis grew.", "f(1999)"]
    ranked = most_relevant(asked, numbered[1:], "\n".join(numbered), 1, numbers_bear=True)
    assert ranked == [numbered[1]]  # neither shows a new number: relevance decides
    assert most_relevant(asked, numbered, "\n".join(numbered), 1, numbers_bear=True) == [
        numbered[0]
    ]


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
    script.answers = ["Crows remember faces for years [1]."]
    question = "Do crows remember human faces?"
    config = EpisodeConfig(relevant_quotes=1)
    result = await run_episode(0, web.session(), policy, question, config)
    assert result.answer == "Crows remember faces for years [1]."
    on_the_page = [r for r in script.requests if not r.get("stream")][2]
    grammar = on_the_page["structured_outputs"]["regex"]
    assert re.fullmatch(grammar, f"Quote: {FACES}\n")
    assert not re.fullmatch(grammar, f"Quote: {FIRST_SENTENCE}\n")


async def test_an_explanation_is_offered_every_sentence_in_view(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    """One sentence suits a factoid; an explanation is built from several (v17-I lost 8 of
    28 long-form answers when it was narrowed too)."""
    script.commands = [*CROW_EPISODE[:2], f"Quote: {FIRST_SENTENCE}", f"Quote: {FACES}"]
    script.answers = ["Crows are corvids [1]. They remember faces [2]."]
    config = EpisodeConfig(relevant_quotes=1)
    assert config.quote_choices("Do crows remember human faces?") == 1
    assert config.quote_choices("How do crows remember human faces?") is None
    result = await run_episode(0, web.session(), policy, "How do crows remember faces?", config)
    assert [q.extract for q in result.quotes] == [FIRST_SENTENCE, FACES]
    on_the_page = [r for r in script.requests if not r.get("stream")][2]
    assert re.fullmatch(on_the_page["structured_outputs"]["regex"], f"Quote: {FIRST_SENTENCE}\n")


def test_the_rule_is_checked() -> None:
    with pytest.raises(ValueError, match="1 or more"):
        EpisodeConfig(relevant_quotes=0)
