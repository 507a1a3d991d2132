"""The answer rules of guided decoding: explanations browse until they hold three quotes, and
a question naming what no quote shows is declined (agent.answer_rules, agent.episode)."""

import re
from pathlib import Path

import pytest

from tests.agent.fake_policy import Script
from tests.agent.test_agent import CROW_EPISODE, collect_into, quoted
from webgpt.agent.answer_rules import (
    distinct_sentence_count,
    named_things,
    restates_question,
    uncounted,
    unshown_names,
)
from webgpt.agent.declines import decline_answer
from webgpt.agent.degenerate import degeneracy
from webgpt.agent.episode import REWRITES, EpisodeConfig, run_episode
from webgpt.agent.grammar import (
    FORCE_FINISH_ACTIONS,
    browsing_regex,
    quote_choices,
)
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.trace import AnswerDeltaEvent, ShapedEvent, TraceEvent
from webgpt.browser.corpus import build_corpus, folder_pages
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web, WebOptions


def test_a_question_names_its_numbers_code_and_capitalised_words() -> None:
    assert named_things("Who won the 2038 FIFA World Cup?") == ["2038", "FIFA", "World", "Cup"]
    assert named_things("What does Python's json.loadz() function do?") == ["json.loadz", "Python"]
    assert named_things("Who painted The Bell-Ringer of Tallinn?") == [
        "The",
        "Bell",
        "Ringer",
        "Tallinn",
    ]
    assert named_things("When will Django 7.0 be released?") == ["7.0", "Django"]
    # a number stands alone: a formula's digits and "200m" are words
    assert named_things("What's the compound with formula NH4NO3 called") == ["NH4NO3"]
    assert named_things("since when have men swum the 200m at the olympics") == []
    assert named_things("what was the weather in perm on 9 june 1987") == ["9", "1987"]
    # the first word opens the question; "I" and lower-case words name nothing
    assert named_things("How can I read a keypress on windows?") == []


@pytest.mark.parametrize(
    ("question", "extract", "unshown"),
    [
        # a number of something else: a length, a licence's version, years
        ("How many traffic lights are there in Lake Huron?", "Lake Huron is 332 miles long.",
         "how many traffic"),
        ("how many poems did Keats write on his last day",
         "Text under the Creative Commons Attribution-ShareAlike 4.0 License.", "how many poems"),
        ("How many people attended his funeral?", "He governed Kenya from 1963 to 1978.",
         "how many people"),
        # the thing counted, in a sentence with a number (digits or words) in it
        ("how many species are in the corvid family", "The family contains 133 species.", None),
        ("how many hague conventions are there",
         "The Hague Conventions are a series of two international treaties.", None),
        ("In how many countries is it official?", "It is. Official in 9 countries.", None),
        # the thing in one sentence, the number in another
        ("How many moons does Mars have?", "Mars is red. It has 2 small satellites.",
         "how many moons"),
        ("How many of the moons are icy?", "Of its 95 moons, many are icy.", None),
        ("How big is it?", "It is big.", None),  # asks how big, not how many
    ],
)  # fmt: skip
def test_a_how_many_question_is_answered_only_where_a_quote_counts_its_thing(
    question: str, extract: str, unshown: str | None
) -> None:
    assert uncounted(question, [quoted(extract)]) == unshown
    names = unshown_names(question, [quoted(extract, title="Page")], [question])
    assert names == ([unshown] if unshown else [])


def test_a_number_stands_in_a_quote_and_a_name_on_a_quoted_page() -> None:
    quotes = [quoted("Argentina won the 2022 FIFA World Cup.", title="FIFA World Cup")]
    assert unshown_names("Who won the 2038 FIFA World Cup?", quotes) == ["2038"]
    assert unshown_names("Who won the 2022 FIFA World Cup?", quotes) == []
    # a number is evidence only in a quote, not elsewhere on the page, where the quotes
    # state another number
    page = "FIFA World Cup\nThe 2038 World Cup has yet to be awarded to a host."
    assert unshown_names("Who won the 2038 FIFA World Cup?", quotes, [page]) == ["2038"]
    undated = [quoted("Argentina won the final.", title="2022 FIFA World Cup")]
    assert unshown_names("Who won the 2038 FIFA World Cup?", undated, [page]) == ["2038"]
    # where they state none in digits, a number the question qualifies its subject by may
    # stand on the page
    bridge = "how long is the bridge Odo built in 1603"
    length = [quoted("The Odo Bridge spans four hundred metres.", title="Odo Bridge")]
    built = "Odo Bridge\nThe bridge was built in 1603 and widened in 1625."
    assert unshown_names(bridge, length) == ["1603"]
    assert unshown_names(bridge, length, [built]) == []
    assert unshown_names(bridge.replace("1603", "1604"), length, [built]) == ["1604"]
    # a number stands alone: 2022 does not show 202, nor 2,022 show 2022
    assert unshown_names("What happened in 202?", quotes) == ["202"]
    assert unshown_names("What is 2022?", [quoted("It was 2,022 km.")]) == ["2022"]
    # a word shows a name that opens it ("Korean" shows "Korea"), in any case
    korean = [quoted("The Korean alphabet is called Hangeul in the ROK.", title="Hangul")]
    assert unshown_names("What is Hangul called in South Korea?", korean) == ["South"]
    # an adjective of a place is shown by the place (a capitalised word), if enough of the
    # place is left
    poet = [quoted("Odo wrote verse in Sweden and in Italy.", title="Odo")]
    assert unshown_names("did Odo write Swedish poems", poet) == []
    assert unshown_names("did Odo write Italian poems", poet) == []
    assert unshown_names("did Odo write Zorbian poems", poet) == ["Zorbian"]
    assert unshown_names("was Odo Iraqi", [quoted("Odo lived in Iran.")]) == ["Iraqi"]
    assert unshown_names("was Odo Asian", [quoted("Odo lived in Asia.")]) == ["Asian"]
    assert unshown_names("was Odo Persian", [quoted("Odo, a person of note.")]) == ["Persian"]
    # ...but not one that it merely contains
    assert unshown_names("Where is Tesvara?", [quoted("The Vara river.")]) == ["Tesvara"]
    # small numbers as words and Roman numerals, versions, accents, apostrophes
    assert unshown_names("When did World War 2 end?", [quoted("World War II ended.")]) == []
    assert unshown_names("What are the 3 branches?", [quoted("There are three.")]) == []
    python3 = [quoted("x", title="Python 3.12.1 documentation")]
    assert unshown_names("how do i read a file in Python 3", python3) == []
    assert unshown_names("Who was Dvorak?", [quoted("Antonín Dvořák was a composer.")]) == []
    assert unshown_names("Who was Flann O’Brien?", [quoted("Flann O'Brien wrote.")]) == []
    # a name may stand anywhere on a quoted page
    louis = [quoted("Louis XIV ruled from Versailles.", title="Louis XIV")]
    sun = "Which French king was called the Sun King?"
    assert unshown_names(sun, louis) == ["French", "Sun", "King"]
    page = "Louis XIV\nThe French king is known as the Sun King."
    assert unshown_names(sun, louis, [page]) == []
    docs = [quoted("Deserialize s, a JSON document, to an object.", title="json")]
    python = "What does Python's json.loadz() function do?"
    assert unshown_names(python, docs) == ["json.loadz", "Python"]
    page = ["https://docs.python.org/3/library/json.html\nloads(s, *, cls=None)"]
    assert unshown_names(python, docs, page) == ["json.loadz"]
    # documentation lists a method by its own name under its class
    assert unshown_names(python.replace("loadz", "loads"), docs, page) == []


async def test_an_explanation_browses_until_it_holds_two_different_quotes(web: Web) -> None:
    session = web.session(config=SessionConfig(max_actions=12))
    session.reset("How do crows recognise faces?")
    for command in (
        "Search crow",
        "Clicked on link 0",
        "Quote: Crows are birds of the genus Corvus.",
    ):
        await session.step(command)
    one_held = browsing_regex(session, min_quotes=2)
    assert not re.fullmatch(one_held, "End: Answer")
    assert not re.fullmatch(one_held, "Quote: Crows are birds of the genus Corvus.")  # held
    second = "Crows can recognise individual human faces and remember them for years."
    assert re.fullmatch(one_held, f"Quote: {second}")
    assert re.fullmatch(browsing_regex(session), "End: Answer")  # one quote is enough for a fact
    while session.actions_left > FORCE_FINISH_ACTIONS:
        await session.step("Top")
    # its actions running out, it quotes a second sentence in view
    running_out = browsing_regex(session, min_quotes=2)
    assert re.fullmatch(running_out, f"Quote: {second}")
    assert not re.fullmatch(running_out, "End: Answer")
    assert not re.fullmatch(running_out, "Scrolled down 1")
    await session.step("Search zzzz")  # a view with nothing to quote
    assert session.actions_left <= FORCE_FINISH_ACTIONS and not quote_choices(session)
    # nothing in view to quote: it may answer from the one quote it has
    assert re.fullmatch(browsing_regex(session, min_quotes=2), "End: Answer")


async def test_a_fact_s_browsing_back_at_a_view_it_showed_quotes_what_is_in_view(
    web: Web,
) -> None:
    """A loop: the same search and click bring back a view shown before with nothing
    quoted. A question wanting one quote then quotes what is in view; an explanation
    browses on, and so does a fact holding its quote."""
    session = web.session(config=SessionConfig(max_actions=20))
    session.reset("What do crows recognise?")
    first = "Crows are birds of the genus Corvus."
    for command in ("Search crow", "Clicked on link 0"):
        await session.step(command)
    assert not session.looping
    assert re.fullmatch(browsing_regex(session), "Search crow")
    await session.step("Search crow")
    assert not session.looping  # a results page holds nothing to quote: it never counts
    await session.step("Clicked on link 0")
    assert session.looping
    looped = browsing_regex(session)
    assert re.fullmatch(looped, f"Quote: {first}")
    assert not re.fullmatch(looped, "Search crow") and not re.fullmatch(looped, "Top")
    assert re.fullmatch(browsing_regex(session, min_quotes=3), "Search crow")  # explanation
    assert re.fullmatch(browsing_regex(session, force_finish=False), "Search crow")
    await session.step(f"Quote: {first}")
    await session.step("Top")  # already at the top: the same view with the same quote
    assert session.looping
    held = browsing_regex(session)
    assert re.fullmatch(held, "Search crow") and re.fullmatch(held, "End: Answer")


async def test_a_question_naming_what_no_quote_shows_is_declined(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    """The crow quotes show no 2031 and no Tour de France: the episode declines, its
    sentence written from the question with nothing sampled; the names are recorded and
    the trace names the rule."""
    question = "Which crow won the 2031 Tour de France?"
    script.commands = list(CROW_EPISODE)
    events: list[TraceEvent] = []
    config = EpisodeConfig()
    result = await run_episode(0, web.session(), policy, question, config, collect_into(events))
    assert result.answer == decline_answer(question) and result.declined
    assert result.references == []
    assert result.unshown == ["2031", "Tour", "France"]
    assert not [r for r in script.requests if r.get("stream")]
    assert result.shaped_by == ["grounded_decline"]
    [shaped] = [e for e in events if isinstance(e, ShapedEvent)]
    assert (shaped.part, shaped.detail) == ("grounded_decline", "2031, Tour, France")

    # Off, or unguided, the policy answers as it likes; off, what the rule would have
    # declined on is still recorded (scripts/decline_judgment.py reads it).
    unshown = {"off": ["2031", "Tour", "France"], "unguided": []}
    for arm, config in (
        ("off", EpisodeConfig(grounded_declines=False)),
        ("unguided", EpisodeConfig(guided=False)),
    ):
        script.commands, script.requests = list(CROW_EPISODE), []
        script.answers = ["Crows are corvids [1]."]
        result = await run_episode(0, web.session(), policy, question, config)
        assert result.answer == "Crows are corvids [1]." and result.unshown == unshown[arm]
        assert result.shaped_by == []

    # A question whose names the quotes show is answered.
    script.commands, script.requests = list(CROW_EPISODE), []
    script.answers = ["Crows know faces [1]."]
    shown = "Do Crows remember faces for years?"
    result = await run_episode(0, web.session(), policy, shown, EpisodeConfig())
    assert result.answer == "Crows know faces [1]." and result.unshown == []


def test_answer_rules_are_checked() -> None:
    with pytest.raises(ValueError, match="1 to 3"):
        EpisodeConfig(explanation_quotes=4)
    assert EpisodeConfig().quotes_wanted("Why do crows remember faces?") == 3
    assert EpisodeConfig(explanation_quotes=1).quotes_wanted("Why do crows?") == 1
    assert EpisodeConfig(guided=False).quotes_wanted("Why do crows remember faces?") == 1
    assert EpisodeConfig().quotes_wanted("Who won the 2038 FIFA World Cup?") == 1


async def test_an_episode_holds_an_explanation_to_its_quotes(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    """run_episode passes the rule to the browsing grammar: set to two quotes, after one it
    offers no End: Answer. The answer grammar cites any of them, as any answer's does. (The
    default, three, is checked in test_answer_rules_are_checked.)"""
    second = "Crows can recognise individual human faces and remember them for years."
    first = "Quote: Crows are birds of the genus Corvus."
    script.commands = [*CROW_EPISODE[:2], first, f"Quote: {second}", "End: Answer"]
    answer = "Crows are birds of the genus Corvus [1]. They remember faces [2]."
    script.answers = [answer]
    question = "How do crows recognise faces?"
    two = EpisodeConfig(explanation_quotes=2)
    result = await run_episode(0, web.session(), policy, question, two)
    assert result.answer == answer
    browsing = [r for r in script.requests if not r.get("stream")]
    [answering] = [r for r in script.requests if r.get("stream")]
    after_one_quote = browsing[3]["structured_outputs"]["regex"]
    assert not re.fullmatch(after_one_quote, "End: Answer\n")
    assert re.fullmatch(browsing[4]["structured_outputs"]["regex"], "End: Answer\n")
    cited = answering["structured_outputs"]["regex"]
    assert re.fullmatch(cited, "Crows are birds [1]. They remember faces [2].■")
    assert not re.fullmatch(cited, "Crows are birds [1]. They remember faces [3].■")


@pytest.mark.parametrize("question", ["", "   ", "???", "-- '' ’s", "A" * 2000, "Why " * 500])
def test_broken_questions_are_read_without_error(question: str) -> None:
    """Empty, punctuation-only and longest-allowed questions: a plain reading, no error."""
    names = named_things(question)
    assert unshown_names(question, [quoted("Crows are birds.")], ["Crow page"]) == [
        n for n in names if n.casefold() not in "crows are birds crow page"
    ]


RAVEN_EPISODE = [
    "Search raven",
    "Clicked on link 0",
    "Quote: Ravens live up to 21 years in the wild.",
    "End: Answer",
]


async def test_an_answer_that_runs_on_or_stops_mid_sentence_gets_the_one_retry(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    """A first sentence the grammar leaves unbounded (the quotes show numbers) can loop to
    the token limit uncited; an answer can end, or be cut after its citation, mid-sentence.
    Each is degenerate, and its one retry writes it a sentence its quote; the trace shows
    both drafts."""
    question = "Do ravens live long?"
    looping = "Ravens — ravens — ravens — ravens"
    for ended in (looping, "Ravens live", "Ravens live for 21 years [1]. Ravens — ravens —"):
        script.commands = list(RAVEN_EPISODE)
        script.answers, script.requests = [ended, " to 21 years in the wild [1]."], []
        script.cut_answers = {ended} if ended != "Ravens live" else set()
        events: list[TraceEvent] = []
        emit = collect_into(events)
        result = await run_episode(0, web.session(), policy, question, EpisodeConfig(), emit)
        assert result.answer == "Ravens live up to 21 years in the wild [1]."
        assert result.shaped_by == ["degenerate_retry"]
        first, retry = [r for r in script.requests if r.get("stream")]
        unbounded = "Ravens " + "live " * 40 + "[1].■"
        assert re.fullmatch(first["structured_outputs"]["regex"], unbounded)
        assert retry["prompt"] == result.answer_prompt + "Ravens live up"
        drafts = "".join(e.text for e in events if isinstance(e, AnswerDeltaEvent))
        assert drafts == f"{ended}\n{result.answer}"


def rule_settings(config: EpisodeConfig) -> tuple[object, ...]:
    """The settings of the quote ranker's choices, its declines by evidence and the
    question's own search, as the command line and the service set them."""
    return (
        config.relevant_quotes,
        config.evidence_declines,
        config.evidence_margin,
        config.question_search,
    )


def test_the_command_line_s_rules_default_to_the_service_s_and_each_turns_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`webgpt answer` and `webgpt eval` share these options (agent.cli.add_answer_rules):
    the shipped quote ranker by default, as the service loads it, unless
    WEBGPT_QUOTE_RANKER, the service's own setting, names another or none."""
    import argparse

    from webgpt.agent.cli import add_answer_rules, answer_rules
    from webgpt.service.settings import ServiceSettings

    monkeypatch.delenv("WEBGPT_QUOTE_RANKER", raising=False)
    parser = argparse.ArgumentParser()
    add_answer_rules(parser)
    defaults = parser.parse_args([])
    default = EpisodeConfig(**answer_rules(defaults))
    served = EpisodeConfig(**ServiceSettings().answer_rules())
    assert rule_settings(default) == rule_settings(EpisodeConfig()) == rule_settings(served)
    assert rule_settings(default) == (1, True, None, True)  # the ranker's own margin
    assert defaults.quote_ranker == Path("default") == ServiceSettings().quote_ranker
    assert not default.result_order and not served.result_order  # not adopted: opt in
    assert EpisodeConfig(**answer_rules(parser.parse_args(["--result-order"]))).result_order
    off = ["--relevant-quotes", "0", "--quote-ranker", "none", "--no-question-search"]
    off += ["--no-evidence-declines", "--evidence-margin", "1.5"]
    args = parser.parse_args(off)
    assert rule_settings(EpisodeConfig(**answer_rules(args))) == (None, False, 1.5, False)
    assert args.quote_ranker is None
    assert parser.parse_args(["--quote-ranker", "ranker"]).quote_ranker == Path("ranker")
    for named, expected in (("none", None), ("folder", Path("folder"))):
        monkeypatch.setenv("WEBGPT_QUOTE_RANKER", named)
        parser = argparse.ArgumentParser()
        add_answer_rules(parser)
        assert parser.parse_args([]).quote_ranker == expected
        assert ServiceSettings().quote_ranker == expected


FIRST_SENTENCE = "Crows are birds of the genus Corvus."
FACES = "Crows can recognise individual human faces and remember them for years."
REPEATED = "Crows are birds of the genus Corvus [1]. Crows are birds of the genus Corvus [2]."
HEAD = "Crows are birds of the genus Corvus [1]. Crows can recognise"
EXPLAINED = [*CROW_EPISODE[:2], f"Quote: {FIRST_SENTENCE}", f"Quote: {FACES}", "End: Answer"]
TWICE_AGAIN = " faces [2]. Crows are birds of the genus Corvus [1]."


async def test_an_explanation_that_says_a_sentence_twice_gets_a_sentence_a_quote(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    """It is degenerate (a repeat), and its one retry writes it from its start, each of the
    first two quotes opening a sentence that ends at its citation: neither can run into the
    other. The trace shows both drafts."""
    script.commands = list(EXPLAINED)
    script.answers = [REPEATED, " of the genus Corvus [1].", " faces [2]."]
    question = "How do crows recognise faces?"
    events: list[TraceEvent] = []
    emit = collect_into(events)
    result = await run_episode(0, web.session(), policy, question, EpisodeConfig(), emit)
    first_sentence = "Crows are birds of the genus Corvus [1]."
    assert result.answer == f"{first_sentence} Crows can recognise faces [2]."
    assert result.shaped_by == ["degenerate_retry"]
    answer_prompt = result.answer_prompt
    one, two = [r for r in script.requests if r.get("stream")][1:]
    assert one["prompt"] == answer_prompt + "Crows are birds"
    assert two["prompt"] == f"{answer_prompt}{first_sentence} Crows can recognise"
    sentence = one["structured_outputs"]["regex"]
    assert re.fullmatch(sentence, " of the genus Corvus [1].")
    assert re.fullmatch(sentence, " of the genus Corvus. [1]")
    assert re.fullmatch(sentence, " of the U.S. genus, e.g. the one near Mount St. Helens [1]■")
    assert not re.fullmatch(sentence, " of the genus Corvus. They know faces [1].")  # two
    assert not re.fullmatch(sentence, " of the genus Corvus [2].")  # its own quote's
    assert not re.fullmatch(sentence, " of the genus Corvus [1]. They know faces [2].")
    streamed = "".join(e.text for e in events if isinstance(e, AnswerDeltaEvent))
    assert streamed == f"{REPEATED}\n{result.answer}"


async def test_a_retry_that_runs_on_too_is_declined(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    """Its sentence a quote runs to the token limit: the episode declines after its one
    retry, and the trace says why."""
    script.commands = list(EXPLAINED)
    script.answers = [REPEATED, " of the genus Corvus"]
    script.cut_answers = {" of the genus Corvus"}
    question = "How do crows recognise faces?"
    events: list[TraceEvent] = []
    config = EpisodeConfig()
    result = await run_episode(0, web.session(), policy, question, config, collect_into(events))
    assert result.answer == decline_answer(question) and result.references == []
    assert result.shaped_by == ["degenerate_retry", "degenerate_decline"]
    # each part names its reason and the draft it turned down: the decline, the retry's
    shaped = [(e.part, e.detail) for e in events if isinstance(e, ShapedEvent)]
    assert shaped[0] == ("degenerate_retry", f"repeat; drafted: {REPEATED}")
    assert shaped[1][0] == "degenerate_decline"
    assert shaped[1][1].startswith("cut; drafted: ")
    assert shaped[1][1].endswith(" of the genus Corvus")
    assert len([r for r in script.requests if r.get("stream")]) == 2  # one retry, no more


async def test_each_rewrite_can_be_left_out_to_measure_its_worth(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    """Without the retry, a degenerate answer is declined at once: it is never served; a
    sentence stopping short of its quote's is served as the policy wrote it."""
    question = "How do crows recognise faces?"
    script.commands = list(EXPLAINED)
    script.answers = [REPEATED]
    config = EpisodeConfig(rewrites=REWRITES - {"degenerate_retry"})
    result = await run_episode(0, web.session(), policy, question, config)
    assert result.shaped_by == ["degenerate_decline"]
    assert result.answer == decline_answer(question)
    assert len([r for r in script.requests if r.get("stream")]) == 1  # nothing written again

    short = "Crows can recognise individual human faces [1]."
    script.commands, script.requests = list(CROW_EPISODE), []
    script.answers = [short]
    result = await run_episode(0, web.session(), policy, "What can crows do?", EpisodeConfig())
    assert result.answer == short and result.shaped_by == []


def test_only_known_rewrites_can_be_left_out() -> None:
    import argparse

    from webgpt.agent.cli import add_answer_rules, answer_rules

    with pytest.raises(ValueError, match="bogus"):
        EpisodeConfig(rewrites=frozenset({"bogus"}))
    parser = argparse.ArgumentParser()
    add_answer_rules(parser)
    assert EpisodeConfig(**answer_rules(parser.parse_args([]))).rewrites == REWRITES
    args = parser.parse_args(["--no-rewrite", "degenerate_retry"])
    assert answer_rules(args)["rewrites"] == frozenset()
    with pytest.raises(SystemExit):
        parser.parse_args(["--no-rewrite", "grounded_decline"])  # a decline, not a rewrite


async def test_an_answer_that_restates_the_question_is_written_from_its_quote(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    """ "Crows recognise [1]." says nothing the question does not, a degenerate answer: its
    one retry opens the sentence with the cited quote's words, and the policy writes the
    rest to its citation; the trace shows both drafts."""
    script.commands = list(CROW_EPISODE)
    script.answers = ["Crows recognise [1].", " faces and remembers them [1]."]
    events: list[TraceEvent] = []

    question = "What can crows recognise?"
    emit = collect_into(events)
    result = await run_episode(0, web.session(), policy, question, EpisodeConfig(), emit)
    assert result.answer == "Crows can recognise faces and remembers them [1]."
    assert result.shaped_by == ["degenerate_retry"]
    first, again = [r for r in script.requests if r.get("stream")]
    assert again["prompt"] == first["prompt"] + "Crows can recognise"
    assert re.fullmatch(again["structured_outputs"]["regex"], " faces and remembers them [1].■")
    streamed = "".join(e.text for e in events if isinstance(e, AnswerDeltaEvent))
    assert streamed == "Crows recognise [1].\nCrows can recognise faces and remembers them [1]."

    # a retry that says nothing either is declined
    script.commands, script.requests = list(CROW_EPISODE), []
    script.answers = ["Crows recognise [1].", " [1]."]
    result = await run_episode(0, web.session(), policy, question, EpisodeConfig())
    assert result.answer == decline_answer(question)
    assert result.shaped_by == ["degenerate_retry", "degenerate_decline"]

    # a draft that copies the opening of the quote's sentence and says something is the
    # policy's own: no retry
    script.commands, script.requests = list(CROW_EPISODE), []
    script.answers = ["Crows can recognise faces [1]."]
    result = await run_episode(0, web.session(), policy, question, EpisodeConfig())
    assert result.answer == "Crows can recognise faces [1]." and result.shaped_by == []


async def test_an_explanation_that_restates_the_question_gets_a_sentence_a_quote(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    """The issue's tautology ("A refrigerator keeps food cold [1]."): written once more,
    each of the first two quotes opens a sentence."""
    script.commands = list(EXPLAINED)
    script.answers = ["Crows recognise faces [1].", " of the genus Corvus [1].", " faces [2]."]
    question = "How do crows recognise faces?"
    result = await run_episode(0, web.session(), policy, question, EpisodeConfig())
    assert (
        result.answer == "Crows are birds of the genus Corvus [1]. Crows can recognise faces [2]."
    )
    assert len([r for r in script.requests if r.get("stream")]) == 3  # one retry, no more

    # holding one quote (its actions ran out), it is written from that quote alone
    script.commands, script.requests = [*CROW_EPISODE[:3], "End: Answer"], []
    script.answers = ["Crows recognise faces [1].", " faces and remembers them [1]."]
    result = await run_episode(0, web.session(), policy, question, EpisodeConfig())
    assert result.answer == "Crows can recognise faces and remembers them [1]."


def test_an_answer_restates_the_question_where_it_says_nothing_else() -> None:
    question = "What does the datetime.datetime.utcnow method do?"
    assert restates_question("datetime.datetime.utcnow() — [1].", question)
    assert restates_question("[1].", question)
    assert not restates_question("datetime.datetime.utcnow() — return the UTC date [1].", question)
    assert not restates_question(decline_answer(question), question)
    assert not restates_question("datetime.datetime.utcnow()", question)  # cites nothing
    # a word of the question extended is the question's too; its kind words add nothing
    assert restates_question("Dewey died [1].", "When did Dewey die?")
    assert not restates_question("Dewey died in 1952 [1].", "When did Dewey die?")
    assert not restates_question("Tunis is the capital [1].", "What is the capital of Tunisia?")


def test_a_repeat_is_measured_as_the_evaluator_does() -> None:
    """A sentence twice, or eight words twice, is a repeat: a degenerate answer."""
    assert distinct_sentence_count(REPEATED) == 0
    assert degeneracy(REPEATED, "How do crows recognise faces?") == "repeat"
    assert distinct_sentence_count(f"{HEAD} individual human faces [2].") == 2
    assert degeneracy(f"{HEAD} individual human faces [2].", "How do crows recognise?") is None


async def test_a_retry_whose_quote_cannot_open_a_sentence_declines_and_says_so(
    tmp_path: Path, policy: OpenAIPolicy, script: Script
) -> None:
    """The one quote opens with what an answer may not write (an image's bracket): the
    retry has no sentence to open, so the episode declines, and the trace says so rather
    than repeating the first draft's fault."""
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "crow-caches.html").write_text(
        "<html><head><title>Crow caches</title></head><body><main><h1>Crow caches</h1>"
        '<p><img src="crow.png" alt="a crow"> Crows hide food in caches and find it again '
        "months later.</p></main></body></html>"
    )
    store = tmp_path / "web.sqlite"
    build_corpus(store, [("notes", folder_pages(pages, "https://notes.example", "notes"))])
    web = Web(WebOptions(offline_store=store, offline_only=True, js_mode="never"))
    quote = "[Image: a crow] Crows hide food in caches and find it again months later."
    drafted = "Crows hide food in caches [1]. Crows hide food in caches [1]."
    script.commands = ["Search crow caches", "Clicked on link 0", f"Quote: {quote}", "End: Answer"]
    script.answers = [drafted]
    question = "Where do crows keep their food?"
    events: list[TraceEvent] = []
    try:
        result = await run_episode(
            0, web.session(), policy, question, EpisodeConfig(), collect_into(events)
        )
    finally:
        await web.aclose()
    assert [q.extract for q in result.quotes] == [quote]
    assert result.answer == decline_answer(question)
    shaped = [(e.part, e.detail) for e in events if isinstance(e, ShapedEvent)]
    assert shaped == [
        ("degenerate_retry", f"repeat; drafted: {drafted}"),
        ("degenerate_decline", "opening"),  # nothing written again to show
    ]
    assert len([r for r in script.requests if r.get("stream")]) == 1
