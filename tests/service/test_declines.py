"""A declined answer is marked as such on every surface: `POST /answer` JSON, the SSE
`final` event, the OpenAI route and the SDK; it has no references."""

import json

import httpx
import openai
import pytest
from pydantic import ValidationError
from webgpt_client import Client

from tests.agent.fake_policy import Script
from webgpt.agent.declines import decline_answer
from webgpt.service.settings import ServiceSettings

# The scripted policy browses to the Crow page for any question that names crows; its
# answers are scripted, so here it declines. The crow quotes show no 2031: grounded
# declines would hold the policy to a decline, so the tests of what the policy chose
# turn them off.
QUESTION = "Which crow won the 2031 Tour de France?"
DECLINE = decline_answer(QUESTION)
AS_CHOSEN = {"grounded_declines": False}


def test_a_decline_is_marked_everywhere_and_cites_nothing(service_url, script: Script) -> None:  # type: ignore[no-untyped-def]
    script.answers[:] = [DECLINE] * 5 + ["Crows are corvids [1]."]  # one a request below
    with service_url(**AS_CHOSEN) as base:
        body = httpx.post(f"{base}/answer", json={"question": QUESTION}, timeout=60).json()
        assert body["answer"] == DECLINE and body["declined"] is True
        assert body["references"] == [] and body["candidates"][0]["declined"] is True

        with httpx.stream(
            "POST", f"{base}/answer", json={"question": QUESTION, "stream": True}, timeout=60
        ) as response:
            events = [
                json.loads(line.removeprefix("data: "))
                for line in response.iter_lines()
                if line.startswith("data: {")
            ]
        [final] = [e for e in events if e["type"] == "final"]
        assert final["result"]["declined"] is True
        [candidate] = [e for e in events if e["type"] == "candidate"]
        assert candidate["declined"] is True and candidate["references"] == []

        with openai.OpenAI(base_url=f"{base}/v1", api_key="-", max_retries=0) as client:
            completion = client.chat.completions.create(
                model="webgpt", messages=[{"role": "user", "content": QUESTION}]
            )
            assert completion.choices[0].message.content == DECLINE
            assert completion.choices[0].message.model_extra["declined"] is True  # type: ignore[index]
            chunks = list(
                client.chat.completions.create(
                    model="webgpt", messages=[{"role": "user", "content": QUESTION}], stream=True
                )
            )
            assert chunks[-1].choices[0].delta.model_extra["declined"] is True  # type: ignore[index]

        with Client(base) as sdk:
            result = sdk.answer(QUESTION)
            assert result.declined and result.references == []
            answered = sdk.answer("crow corvus")  # the next scripted answer cites its quote
            assert not answered.declined and answered.references


def test_a_decline_that_cites_a_quote_anyway_is_a_decline(service_url, script: Script) -> None:  # type: ignore[no-untyped-def]
    """The answer grammar's cited branch admits the decline's words too (seen: "The pages I
    found do not say what the capital of Malawi is [1]."): it is served as a decline."""
    script.answers[:] = [DECLINE.removesuffix(".") + " [1]."]
    with service_url(**AS_CHOSEN) as base:
        body = httpx.post(f"{base}/answer", json={"question": QUESTION}, timeout=60).json()
    assert body["answer"] == DECLINE and body["declined"] is True and body["references"] == []


def test_the_service_declines_a_question_naming_what_no_quote_shows(
    service_url, script: Script
) -> None:  # type: ignore[no-untyped-def]
    """By default (WEBGPT_GROUNDED_DECLINES) the episode declines when its quotes show no
    2031; turned off, the policy answers as it chose."""
    script.answers[:] = ["Crows are corvids [1]."]
    bodies = []
    for overrides in ({}, AS_CHOSEN):
        with service_url(**overrides) as base:
            response = httpx.post(f"{base}/answer", json={"question": QUESTION}, timeout=60)
            bodies.append(response.json())
    held, chosen = bodies
    assert held["answer"] == DECLINE and held["declined"] is True and held["references"] == []
    assert chosen["answer"] == "Crows are corvids [1]." and chosen["declined"] is False
    with pytest.raises(ValidationError, match="explanation_quotes"):
        ServiceSettings(explanation_quotes=4)


def test_the_service_serves_what_its_decline_judgment_prefers(  # type: ignore[no-untyped-def]
    service_url, script: Script, reward_checkpoint
) -> None:
    """WEBGPT_DECLINE_JUDGE: a reward checkpoint, loaded in the service, scores the drafted
    answer beside the decline; past any score the margin -1e9 declines and 1e9 answers, and
    the stream's trace names the judgment that declined."""
    script.answers[:] = ["Crows are corvids [1]."] * 2
    outcomes = []
    for margin in (-1e9, 1e9):
        judged = {"decline_judge": reward_checkpoint, "judge_margin": margin, **AS_CHOSEN}
        with service_url(**judged) as base:
            request = {"question": QUESTION, "stream": True}
            with httpx.stream("POST", f"{base}/answer", json=request, timeout=60) as response:
                events = [
                    json.loads(line.removeprefix("data: "))
                    for line in response.iter_lines()
                    if line.startswith("data: {")
                ]
        [final] = [e for e in events if e["type"] == "final"]
        outcomes.append((final["result"], [e["part"] for e in events if e["type"] == "shaped"]))
    (declined, declined_parts), (answered, answered_parts) = outcomes
    assert declined["answer"] == DECLINE and declined["declined"] is True
    assert declined_parts == ["judged_decline"]
    assert answered["answer"] == "Crows are corvids [1]." and answered_parts == []
