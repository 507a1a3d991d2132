"""A request that names no temperature answers with one greedy episode, and samples n > 1
episodes at 0.8 so that they differ (agent.episode.answer_temperature;
docs/eval/promotion-rules-sampling.md); a temperature the request names is kept."""

import httpx
import openai

from tests.agent.fake_policy import Script
from webgpt.agent.episode import SAMPLING_TEMPERATURE, answer_temperature

QUESTION = "Do crows remember human faces?"


def _temperatures(script: Script) -> set[float]:
    """The temperatures of every request the policy was sent."""
    return {r["temperature"] for r in script.requests}


def test_the_default_temperature_is_greedy_for_one_episode_only() -> None:
    assert answer_temperature(1) == 0.0
    assert answer_temperature(2) == answer_temperature(8) == SAMPLING_TEMPERATURE == 0.8
    assert answer_temperature(1, 0.5) == answer_temperature(4, 0.5) == 0.5
    assert answer_temperature(4, 0.0) == 0.0  # named: kept, even for n > 1


def test_one_episode_is_greedy_unless_the_request_names_a_temperature(  # type: ignore[no-untyped-def]
    service_url, script: Script
) -> None:
    seen = []
    with service_url() as base:
        for named in ({}, {"temperature": 0.5}):
            script.requests.clear()
            body = {"question": QUESTION, **named}
            assert httpx.post(f"{base}/answer", json=body, timeout=60).status_code == 200
            seen.append(_temperatures(script))
    assert seen == [{0.0}, {0.5}]


def test_n_episodes_are_sampled_on_the_openai_route(service_url, script: Script) -> None:  # type: ignore[no-untyped-def]
    script.answers = ["Crows are corvids [1].", "Crows are birds [1]."] * 4
    seen = []
    with (
        service_url() as base,
        openai.OpenAI(base_url=f"{base}/v1", api_key="x", max_retries=0) as client,
    ):
        for n in (2, 1):
            script.requests.clear()
            messages = [{"role": "user", "content": QUESTION}]
            client.chat.completions.create(model="webgpt", messages=messages, n=n)  # type: ignore[arg-type]
            seen.append(_temperatures(script))
    assert seen == [{SAMPLING_TEMPERATURE}, {0.0}]


def test_a_temperature_out_of_range_is_refused_and_nothing_is_asked(  # type: ignore[no-untyped-def]
    service_url, script: Script
) -> None:
    with service_url() as base:
        for bad in (-0.1, 2.5, "hot"):
            body = {"question": QUESTION, "temperature": bad}
            response = httpx.post(f"{base}/answer", json=body, timeout=60)
            assert response.status_code == 422 and "temperature" in response.text
    assert script.requests == []
