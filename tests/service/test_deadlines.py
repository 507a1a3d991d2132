"""Deadlines, disconnects and Idempotency-Key on the real app over HTTP: a slow answer is
cut at its deadline (504, not retried by the openai client), a JSON client that goes away
cancels its answer, and repeats of a keyed request share one answer."""

import threading
import time

import httpx
import openai
import pytest

from tests.agent.fake_policy import Script
from tests.servers import wait_until

QUESTION = {"question": "crow corvus"}


def answer_request_ended(base: str) -> bool:
    """The service counted an /answer request as ended (a cancelled one counts as 500)."""
    return 'webgpt_requests_total{route="/answer"' in httpx.get(f"{base}/metrics").text


def answer_prompts(script: Script) -> int:
    """How many answers the policy was asked to write (one per episode that got there)."""
    return sum(1 for r in script.requests if r["prompt"].endswith("■"))


def test_an_answer_past_its_deadline_is_504_and_everything_of_it_stops(
    service_url,  # type: ignore[no-untyped-def]
    script: Script,
) -> None:
    script.hold_model = "scripted"  # the first policy call never comes back by itself
    with service_url() as base:
        try:
            # 3 s: time enough on a slow machine to reach the held policy call first.
            response = httpx.post(f"{base}/answer", json={**QUESTION, "deadline_s": 3}, timeout=60)
        finally:
            script.released.set()
        assert response.status_code == 504
        assert response.json()["error"] == {
            "type": "deadline_exceeded",
            "message": "the answer did not finish within its deadline of 3 s",
        }
        assert response.headers["x-should-retry"] == "false"
        assert "retry-after" not in response.headers
        time.sleep(1.0)  # a live episode would go on browsing now that the call returned
        assert len(script.requests) == 1

        too_long = httpx.post(f"{base}/answer", json={**QUESTION, "deadline_s": 901})
        assert too_long.status_code == 422 and "at most 900" in too_long.text


def test_a_stream_past_its_deadline_ends_with_a_deadline_error(
    service_url,  # type: ignore[no-untyped-def]
    script: Script,
) -> None:
    script.hold_model = "scripted"
    with service_url(answer_deadline_s=1) as base:  # the service's default deadline
        try:
            response = httpx.post(f"{base}/answer", json={**QUESTION, "stream": True}, timeout=60)
        finally:
            script.released.set()
    events = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    assert '"error_type":"deadline_exceeded"' in events[-2]


def test_a_json_client_that_goes_away_cancels_its_answer(
    service_url,  # type: ignore[no-untyped-def]
    script: Script,
) -> None:
    script.hold_model = "scripted"
    with service_url() as base:
        try:
            with pytest.raises(httpx.ReadTimeout):  # the policy call is held by then
                httpx.post(f"{base}/answer", json=QUESTION, timeout=3.0)
            wait_until(lambda: answer_request_ended(base))  # the disconnect was seen
        finally:
            script.released.set()
        time.sleep(1.0)  # a live episode would go on browsing now that the call returned
        assert len(script.requests) == 1


def test_repeats_with_one_idempotency_key_share_one_answer(
    service_url,  # type: ignore[no-untyped-def]
    script: Script,
) -> None:
    script.hold_model = "scripted"
    with service_url() as base:
        headers = {"Idempotency-Key": "order-42"}
        results: list[httpx.Response] = []

        def post() -> None:
            results.append(httpx.post(f"{base}/answer", json=QUESTION, headers=headers, timeout=60))

        posters = [threading.Thread(target=post) for _ in range(2)]
        for poster in posters:
            poster.start()
        deadline = time.monotonic() + 30
        while "webgpt_idempotent_replays_total 1.0" not in httpx.get(f"{base}/metrics").text:
            assert time.monotonic() < deadline, "the second request never joined"
            time.sleep(0.05)
        script.released.set()
        for poster in posters:
            poster.join()
        later = httpx.post(f"{base}/answer", json=QUESTION, headers=headers, timeout=60)
        other = httpx.post(
            f"{base}/answer", json={"question": "another"}, headers=headers, timeout=60
        )

    assert [r.status_code for r in results] == [200, 200]
    assert results[0].json()["id"] == results[1].json()["id"] == later.json()["id"]
    assert answer_prompts(script) == 1
    assert other.status_code == 422 and "another request" in other.text


def test_the_openai_client_retrying_a_timeout_joins_the_first_answer(
    service_url,  # type: ignore[no-untyped-def]
    script: Script,
) -> None:
    """The official client times out and retries with the same headers: with an
    Idempotency-Key the retry gets the first answer; nothing is answered twice."""
    script.hold_model = "scripted"
    attempts = []

    def sent(request: httpx.Request) -> None:
        attempts.append(request.headers.get("idempotency-key"))
        if len(attempts) == 2:  # the first attempt timed out: let the answer finish now
            script.released.set()

    with (
        service_url() as base,
        httpx.Client(event_hooks={"request": [sent]}) as http,
        openai.OpenAI(
            base_url=f"{base}/v1", api_key="x", timeout=1.0, max_retries=10, http_client=http
        ) as client,
    ):
        try:
            completion = client.chat.completions.create(
                model="webgpt",
                messages=[{"role": "user", "content": "crow corvus"}],
                extra_headers={"Idempotency-Key": "chat-7"},
            )
        finally:
            script.released.set()
    assert completion.choices[0].message.content == "Crows are corvids [1]."
    assert len(attempts) >= 2 and set(attempts) == {"chat-7"}
    assert answer_prompts(script) == 1


def test_the_openai_client_does_not_retry_a_deadline(
    service_url,  # type: ignore[no-untyped-def]
    script: Script,
) -> None:
    script.hold_model = "scripted"
    with (
        service_url(answer_deadline_s=1) as base,
        openai.OpenAI(base_url=f"{base}/v1", api_key="x", max_retries=2) as client,
    ):
        try:
            with pytest.raises(openai.APIStatusError) as raised:
                client.chat.completions.create(
                    model="webgpt", messages=[{"role": "user", "content": "crow corvus"}]
                )
        finally:
            script.released.set()
        metrics = httpx.get(f"{base}/metrics").text
    assert raised.value.status_code == 504
    assert 'webgpt_requests_total{route="/v1/chat/completions",status="504"} 1.0' in metrics
