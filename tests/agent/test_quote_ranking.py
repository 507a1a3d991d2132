"""Learned quote choice: with a quote ranker, a factoid's Quote may take only the sentences
the ranker scores highest (agent.quote_ranking), in view or, once the policy quotes, anywhere
on the page; without one, any sentence in view."""

import json
import re
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from tests.agent.fake_policy import Script
from tests.agent.test_agent import CROW_EPISODE, READS_EXPLANATIONS, READS_FACTS, collect_into
from webgpt.agent.answer import Agent
from webgpt.agent.declines import decline_answer
from webgpt.agent.episode import EpisodeConfig, EpisodeResult, run_episode
from webgpt.agent.grammar import browsing_regex
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.quote_ranking import page_candidates, ranked_quotes
from webgpt.agent.trace import ActionEvent, TraceEvent
from webgpt.browser.corpus import build_corpus, wikipedia_pages
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web, WebOptions

FIRST_SENTENCE = "Crows are birds of the genus Corvus."
FACES = "Crows can recognise individual human faces and remember them for years."


class WordRanker:
    """Scores a sentence by whether it holds a chosen word: a known preference."""

    name = "word-ranker"

    def __init__(self, word: str, evidence_margin: float | None = None) -> None:
        self.word = word
        self.evidence_margin = evidence_margin
        self.calls: list[tuple[str, str, list[str]]] = []

    async def rank(self, question: str, title: str, sentences: Sequence[str]) -> list[float]:
        self.calls.append((question, title, list(sentences)))
        return [float(self.word in sentence) for sentence in sentences]

    async def aclose(self) -> None:
        pass


async def test_the_best_scored_keep_their_order_on_the_page_and_ties_keep_the_earlier() -> None:
    ranker = WordRanker("b")
    sentences = ["a one", "b two", "c three", "b four"]
    assert await ranked_quotes(ranker, "q", "T", sentences, 1) == ["b two"]
    assert await ranked_quotes(ranker, "q", "T", sentences, 3) == ["a one", "b two", "b four"]
    assert await ranked_quotes(ranker, "q", "T", sentences[:2], 2) == sentences[:2]
    assert len(ranker.calls) == 2  # nothing to rank when every sentence may be offered


async def test_an_episode_offers_a_factoid_the_sentence_the_ranker_picks(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    """The sentence about faces answers the question; a ranker that prefers the page's first
    sentence gets that one offered alone, and the trace says a learned ranker narrowed the
    Quote."""
    script.commands = [*CROW_EPISODE[:2], f"Quote: {FIRST_SENTENCE}", "End: Answer"]
    script.answers = ["Crows are birds of the genus Corvus [1]."]
    ranker = WordRanker("genus")
    config = EpisodeConfig(relevant_quotes=1, quote_ranker=ranker)
    events: list[TraceEvent] = []
    question = "Do crows remember human faces?"
    result = await run_episode(0, web.session(), policy, question, config, collect_into(events))
    assert [q.extract for q in result.quotes] == [FIRST_SENTENCE]
    on_the_page = [r for r in script.requests if not r.get("stream")][2]
    grammar = on_the_page["structured_outputs"]["regex"]
    assert re.fullmatch(grammar, f"Quote: {FIRST_SENTENCE}\n")
    assert not re.fullmatch(grammar, f"Quote: {FACES}\n")
    asked, title, sentences = ranker.calls[0]
    assert asked == question and title and FACES in sentences and FIRST_SENTENCE in sentences
    actions = [e for e in events if isinstance(e, ActionEvent)]
    assert "ranked_quotes" in actions[2].narrowed
    assert result.timings.scoring_s > 0


async def test_an_explanations_first_quote_is_the_rankers_and_its_others_any_in_view(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    """A question read as an explanation quotes first what a fact's browsing would (the
    ranker's best), then any sentence in view; the answer names the ranker."""
    script.commands = [*CROW_EPISODE[:2], f"Quote: {FACES}", f"Quote: {FIRST_SENTENCE}"]
    script.answers = ["Crows remember faces [1]. They are corvids [2]."]
    ranker = WordRanker("faces")
    config = EpisodeConfig(quote_ranker=ranker, question_kind=READS_EXPLANATIONS)
    events: list[TraceEvent] = []
    agent = Agent(web, policy, episode=config)
    result = await agent.answer("How do crows remember faces?", emit=collect_into(events))
    assert [r.extract for r in result.references] == [FACES, FIRST_SENTENCE]
    requests = [r for r in script.requests if not r.get("stream")]
    first, second = (r["structured_outputs"]["regex"] for r in requests[2:4])
    assert not re.fullmatch(first, f"Quote: {FIRST_SENTENCE}\n")  # only the ranker's pick
    assert re.fullmatch(first, f"Quote: {FACES}\n")
    assert re.fullmatch(second, f"Quote: {FIRST_SENTENCE}\n")  # any sentence in view
    actions = [e for e in events if isinstance(e, ActionEvent)]
    assert "ranked_quotes" in actions[2].narrowed
    assert "ranked_quotes" not in actions[3].narrowed
    assert result.versions["quote_ranker"] == "word-ranker"


async def test_the_browsing_grammar_offers_the_ranked_quotes_alone(web: Web) -> None:
    session = web.session(config=SessionConfig(max_actions=12))
    session.reset("Do crows remember human faces?")
    for command in CROW_EPISODE[:2]:
        await session.step(command)
    every = browsing_regex(session)  # no ranker: any sentence in view
    assert re.fullmatch(every, f"Quote: {FIRST_SENTENCE}")
    assert re.fullmatch(every, f"Quote: {FACES}")
    ranked = browsing_regex(session, ranked=[FACES])
    assert not re.fullmatch(ranked, f"Quote: {FIRST_SENTENCE}")
    assert re.fullmatch(ranked, f"Quote: {FACES}")


# A page of 61 sentences, some 40 lines: the sentence about faces, its last, lies far below
# the first view.
OPEN_AT_TOP = ["Search Crow genus Corvus", "Clicked on link 0"]
FILLER = [f"Crows were counted in survey number {i} of the regional census." for i in range(60)]


@pytest.fixture
async def long_page_web(tmp_path: Path) -> AsyncIterator[Web]:
    summaries = tmp_path / "summaries.json"
    extract = " ".join([FIRST_SENTENCE, *FILLER[1:], FACES])
    summaries.write_text(json.dumps({"Crow": {"title": "Crow", "extract": extract}}))
    build_corpus(tmp_path / "web.sqlite", [("wikipedia", wikipedia_pages(summaries))])
    opened = Web(
        WebOptions(offline_store=tmp_path / "web.sqlite", offline_only=True, js_mode="never")
    )
    yield opened
    await opened.aclose()


async def episode_on_the_long_page(
    web: Web, policy: OpenAIPolicy, script: Script, commands: list[str], ranker_word: str
) -> tuple[EpisodeResult, list[ActionEvent]]:
    """An episode of the scripted commands, asking about crows and faces, with a ranker
    that prefers sentences holding ranker_word; its result and its action events."""
    script.commands = commands
    script.answers = ["Crows remember human faces for years [1]."]
    config = EpisodeConfig(relevant_quotes=1, quote_ranker=WordRanker(ranker_word))
    events: list[TraceEvent] = []
    question = "Do crows remember human faces?"
    result = await run_episode(0, web.session(), policy, question, config, collect_into(events))
    return result, [e for e in events if isinstance(e, ActionEvent)]


async def test_a_quote_takes_the_pages_best_sentence_out_of_view(
    long_page_web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    """The policy quotes the best sentence in view; the ranker prefers one far below it on
    the page, so the Quote takes that one (a Quote takes text anywhere on the page, as in
    WebGPT's browser), and the trace says the page's pick narrowed it."""
    commands = [*OPEN_AT_TOP, f"Quote: {FIRST_SENTENCE}", "End: Answer"]
    result, actions = await episode_on_the_long_page(
        long_page_web, policy, script, commands, "faces"
    )
    assert [q.extract for q in result.quotes] == [FACES]
    in_view = result.steps[2].observation.split("♦Text")[1]  # the page as the policy quoted
    assert FIRST_SENTENCE in in_view and "faces" not in in_view
    assert result.invalid_actions == 0
    assert actions[2].command == f"Quote: {FACES}" and actions[2].event.type == "quote"
    assert actions[2].narrowed[-2:] == ["ranked_quotes", "page_quotes"]


async def test_a_quote_in_view_that_the_page_does_not_beat_stays(
    long_page_web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    commands = [*OPEN_AT_TOP, f"Quote: {FIRST_SENTENCE}", "End: Answer"]
    result, actions = await episode_on_the_long_page(
        long_page_web, policy, script, commands, "genus"
    )
    assert [q.extract for q in result.quotes] == [FIRST_SENTENCE]
    assert "page_quotes" not in actions[2].narrowed


async def test_a_quote_from_a_view_the_policy_brought_keeps_the_views_pick(
    long_page_web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    """A Find that found moved the view: where the policy chose to read is its call, so the
    Quote is not the page's best."""
    commands = [*OPEN_AT_TOP, "Find in page: survey number 30", f"Quote: {FILLER[31]}"]
    result, actions = await episode_on_the_long_page(
        long_page_web, policy, script, commands, "faces"
    )
    assert result.quotes[0].extract == FILLER[31]
    assert "page_quotes" not in actions[3].narrowed


def test_the_page_candidates_hold_the_questions_rarer_words() -> None:
    """Of a long page, the ranker reads the sentences holding the question's words, a word
    all of them hold counting for less than one few do, in their order on the page."""
    sentences = [*FILLER, FACES, "Crows recognise faces."]
    picked = page_candidates("Do crows remember human faces?", sentences, limit=2)
    assert picked == [FACES, "Crows recognise faces."]
    assert page_candidates("anything", sentences[:3], limit=5) == sentences[:3]
    # of equal weight, the earlier
    assert page_candidates("census", FILLER, limit=2) == FILLER[:2]


def test_a_first_quote_is_narrowed_with_a_ranker_and_an_explanations_others_never() -> None:
    """One sentence suits a fact, and any question's first quote; an explanation is built
    from several (v17-I lost 8 of 28 long-form answers when its every quote was narrowed)."""
    question = "Do crows remember human faces?"
    fact = EpisodeConfig(quote_ranker=WordRanker("genus"), question_kind=READS_FACTS)
    assert fact.quote_choices(question) == 1
    assert fact.quote_choices(question, quotes_held=1) == 1
    explanation = EpisodeConfig(quote_ranker=WordRanker("genus"), question_kind=READS_EXPLANATIONS)
    assert explanation.quote_choices(question) == 1
    assert explanation.quote_choices(question, quotes_held=1) is None
    assert EpisodeConfig(question_kind=READS_FACTS).quote_choices(question) is None
    assert (
        EpisodeConfig(relevant_quotes=None, quote_ranker=WordRanker("x")).quote_choices(question)
        is None
    )
    with pytest.raises(ValueError, match="1 or more"):
        EpisodeConfig(relevant_quotes=0)


def test_a_ranker_named_where_torch_is_missing_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The slim service image has no torch: a ranker named there says how to turn it off,
    before any weights are prepared; on a pooling server the shipped one must have been
    prepared where torch is, and the error says where it looked."""
    from webgpt.agent import model
    from webgpt.agent.errors import ConfigurationError

    monkeypatch.setenv("WEBGPT_HOME", str(tmp_path))  # nothing prepared
    monkeypatch.setattr(model, "_torch_installed", lambda: False)
    with pytest.raises(ConfigurationError, match="WEBGPT_QUOTE_RANKER=none"):
        model.load_quote_ranker(Path("default"), print)
    assert model.load_quote_ranker(None, print) is None
    with pytest.raises(ConfigurationError, match=r"not prepared.*/registry/reward/<version>"):
        model.load_quote_ranker(Path("default"), print, url="http://127.0.0.1:9/v1")
    assert model.load_quote_ranker(None, print, url="http://127.0.0.1:9/v1") is None


def test_a_ranker_folder_that_is_no_checkpoint_is_a_clear_error(tmp_path: Path) -> None:
    from webgpt.agent.model import load_quote_ranker
    from webgpt.infra.errors import CheckpointError

    with pytest.raises(CheckpointError, match=r"missing has no readable manifest\.json"):
        load_quote_ranker(tmp_path / "missing", print)


async def test_declines_follow_the_evidence_the_ranker_finds(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    """With a ranker, the answer is the decline where no quote outscores the decline scored
    as a sentence of its page, and a cited answer otherwise: the policy is offered no
    decline then. The trace names the ranker's decline. The margin is the one the ranker's
    checkpoint records, unless the episode names one."""
    question = "Do crows remember human faces?"
    outcomes = {}
    for word in ("recognise", "genus"):  # in the quote, in no quote
        script.commands, script.requests = [*CROW_EPISODE[:2], f"Quote: {FACES}", "End: Answer"], []
        script.answers = ["They know a face for years [1]."]
        ranker = WordRanker(word, evidence_margin=0.0)
        config = EpisodeConfig(quote_ranker=ranker, relevant_quotes=None)
        events: list[TraceEvent] = []
        result = await run_episode(0, web.session(), policy, question, config, collect_into(events))
        assert (question, "Crow", [FACES, decline_answer(question)]) in ranker.calls
        answering = [r for r in script.requests if r.get("stream")]
        outcomes[word] = (result, answering, [e for e in events if e.type == "shaped"])

    answered, [answering], shaped = outcomes["recognise"]
    assert answered.answer == "They know a face for years [1]." and answered.evidence == 1.0
    assert not re.fullmatch(
        answering["structured_outputs"]["regex"], decline_answer(question) + "■"
    )
    assert shaped == [] and answered.shaped_by == []
    declined, answering, shaped = outcomes["genus"]
    assert declined.answer == decline_answer(question) and declined.references == []
    assert declined.evidence == 0.0 and answering == []  # nothing sampled for it
    assert [(e.part, e.detail) for e in shaped] == [("evidence_decline", "best quote +0.00")]  # type: ignore[union-attr]
    for unjudged in (
        EpisodeConfig(quote_ranker=WordRanker("genus")),  # no margin recorded: no declines
        EpisodeConfig(quote_ranker=WordRanker("genus", 0.0), evidence_declines=False),
    ):
        script.commands = [*CROW_EPISODE[:2], f"Quote: {FACES}", "End: Answer"]
        script.answers = ["They know a face for years [1]."]
        result = await run_episode(0, web.session(), policy, question, unjudged)
        assert result.evidence is None and result.answer == "They know a face for years [1]."


def test_the_episode_s_margin_overrides_the_ranker_s() -> None:
    recorded, unrecorded = WordRanker("w", evidence_margin=-4.0), WordRanker("w")
    assert EpisodeConfig(quote_ranker=recorded).evidence_threshold() == -4.0
    assert EpisodeConfig(quote_ranker=recorded, evidence_margin=1.5).evidence_threshold() == 1.5
    assert EpisodeConfig(quote_ranker=unrecorded).evidence_threshold() is None
    assert EpisodeConfig(quote_ranker=unrecorded, evidence_margin=1.5).evidence_threshold() == 1.5
    assert EpisodeConfig(quote_ranker=recorded, guided=False).evidence_threshold() is None
    assert EpisodeConfig(evidence_margin=1.5).evidence_threshold() is None  # no ranker
