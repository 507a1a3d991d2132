"""Learned quote choice: with a quote ranker, a factoid's Quote may take only the sentences
in view the ranker scores highest (agent.quote_ranking); without one, any of them."""

import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.agent.fake_policy import Script
from tests.agent.test_agent import CROW_EPISODE, collect_into
from webgpt.agent.answer import Agent
from webgpt.agent.declines import decline_answer
from webgpt.agent.episode import EpisodeConfig, run_episode
from webgpt.agent.grammar import browsing_regex
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.quote_ranking import ranked_quotes
from webgpt.agent.trace import ActionEvent, TraceEvent
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web

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


async def test_an_explanation_is_not_ranked_and_the_answer_names_the_ranker(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    script.commands = [*CROW_EPISODE[:2], f"Quote: {FIRST_SENTENCE}", f"Quote: {FACES}"]
    script.answers = ["Crows are corvids [1]. They remember faces [2]."]
    ranker = WordRanker("genus")
    agent = Agent(web, policy, episode=EpisodeConfig(quote_ranker=ranker))
    result = await agent.answer("How do crows remember faces?")
    assert ranker.calls == []  # every sentence in view is offered to an explanation
    assert [r.extract for r in result.references] == [FIRST_SENTENCE, FACES]
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


def test_a_factoid_is_narrowed_only_with_a_ranker_and_an_explanation_never() -> None:
    """One sentence suits a factoid; an explanation is built from several (v17-I lost 8 of
    28 long-form answers when it was narrowed too)."""
    ranked = EpisodeConfig(quote_ranker=WordRanker("genus"))
    assert ranked.quote_choices("Do crows remember human faces?") == 1
    assert ranked.quote_choices("How do crows remember human faces?") is None
    assert EpisodeConfig().quote_choices("Do crows remember human faces?") is None
    assert (
        EpisodeConfig(relevant_quotes=None, quote_ranker=WordRanker("x")).quote_choices(
            "Do crows remember human faces?"
        )
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
