"""The service answers under the answer rules its settings choose: the quote ranker
(WEBGPT_QUOTE_RANKER, WEBGPT_RELEVANT_QUOTES) and the question's own search
(WEBGPT_QUESTION_SEARCH) reach the grammars the policy is sent."""

import re

import httpx
import pytest
from pydantic import ValidationError

from tests.agent.fake_policy import Script
from tests.agent.test_answer_rules import rule_settings
from webgpt.service.settings import ServiceSettings

FIRST_SENTENCE = "Crows are birds of the genus Corvus."
FACES = "Crows can recognise individual human faces and remember them for years."


def _grammars(script: Script) -> tuple[list[str], list[str]]:
    """The regexes of the browsing and of the answering requests the policy was sent."""
    browsing = [r["structured_outputs"]["regex"] for r in script.requests if not r.get("stream")]
    answering = [r["structured_outputs"]["regex"] for r in script.requests if r.get("stream")]
    return browsing, answering


def test_without_a_quote_ranker_every_sentence_in_view_is_quotable(  # type: ignore[no-untyped-def]
    service_url, script: Script
) -> None:
    """WEBGPT_QUOTE_RANKER=none (as tests/conftest.py sets it): nothing narrows a Quote."""
    script.answers[:] = ["Crows remember faces for years [1]."]
    with service_url() as base:
        question = {"question": "Do crows remember human faces?"}
        body = httpx.post(f"{base}/answer", json=question, timeout=60).json()
    assert body["answer"] == "Crows remember faces for years [1]."
    assert body["versions"]["quote_ranker"] is None
    on_the_page = _grammars(script)[0][2]  # after the search and the click
    assert all(re.fullmatch(on_the_page, f"Quote: {q}\n") for q in (FIRST_SENTENCE, FACES))


def test_the_first_search_is_the_question_s_words_as_the_settings_choose(
    service_url, script: Script
) -> None:  # type: ignore[no-untyped-def]
    """By default the first Search the policy may write is the question's own words;
    WEBGPT_QUESTION_SEARCH=false leaves it the policy's."""
    admits = []
    for overrides in ({}, {"question_search": False}):
        script.requests.clear()
        script.answers[:] = ["Crows remember faces for years [1]."]
        with service_url(**overrides) as base:
            question = {"question": "Do crows remember human faces?"}
            assert httpx.post(f"{base}/answer", json=question, timeout=60).status_code == 200
        first_search = _grammars(script)[0][0]
        admits.append(
            [
                bool(re.fullmatch(first_search, f"Search {q}\n"))
                for q in ("crows remember human faces", "Crow")
            ]
        )
    assert admits == [[True, False], [True, True]]


def test_answer_rule_settings_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError, match="relevant_quotes"):
        ServiceSettings(relevant_quotes=-1)
    monkeypatch.setenv("WEBGPT_QUESTION_SEARCH", "sometimes")
    with pytest.raises(ValidationError, match="question_search"):
        ServiceSettings()


def test_the_rules_reach_the_episode_as_the_environment_sets_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The question's own search, one ranked quote and declines by evidence at the ranker's
    own margin by default; each one setting away (the grammars' own tests:
    tests/agent/test_quote_ranking.py, tests/agent/test_queries.py)."""
    from webgpt.agent.episode import EpisodeConfig

    default = EpisodeConfig(**ServiceSettings().answer_rules())
    assert rule_settings(default) == rule_settings(EpisodeConfig())
    assert rule_settings(default) == (1, True, None, True)
    monkeypatch.setenv("WEBGPT_RELEVANT_QUOTES", "0")
    monkeypatch.setenv("WEBGPT_QUESTION_SEARCH", "false")
    monkeypatch.setenv("WEBGPT_EVIDENCE_DECLINES", "false")
    monkeypatch.setenv("WEBGPT_EVIDENCE_MARGIN", "1.5")
    config = EpisodeConfig(**ServiceSettings().answer_rules())
    assert rule_settings(config) == (None, False, 1.5, False)


def test_a_quote_ranker_picks_the_quotes_the_service_offers(  # type: ignore[no-untyped-def]
    service_url, script: Script, reward_checkpoint
) -> None:
    """WEBGPT_QUOTE_RANKER: a reward checkpoint, loaded in the service, picks the
    WEBGPT_RELEVANT_QUOTES sentences in view a factoid's Quote may take (1 by default; 0:
    any); the answer names it and the trace says a learned ranker narrowed the Quote."""
    request = {"question": "Do crows remember human faces?", "include_trace": True}
    offered, narrowed = [], []
    for relevant in (1, 2, 0):
        script.requests.clear()
        script.answers[:] = ["Crows remember faces for years [1]."]
        with service_url(quote_ranker=reward_checkpoint, relevant_quotes=relevant) as base:
            body = httpx.post(f"{base}/answer", json=request, timeout=60).json()
        assert body["versions"]["quote_ranker"] == "rm-bon"
        browsing, _ = _grammars(script)
        quotable = [
            q for q in (FIRST_SENTENCE, FACES) if re.fullmatch(browsing[2], f"Quote: {q}\n")
        ]
        offered.append(len(quotable))
        actions = [event["narrowed"] for event in body["trace"] if event["type"] == "action"]
        narrowed.append("ranked_quotes" in actions[2])
    # of the page's two sentences, the one the ranker scored higher; then both (with two,
    # the page's other lines are not offered: narrowed still); any
    assert offered == [1, 2, 2] and narrowed == [True, True, False]
