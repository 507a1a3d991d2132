"""The HTTP API on a real uvicorn: answers, streams, and every error status."""

import asyncio
import json
import time
import uuid

import httpx
import pytest

from tests.agent.fake_policy import Script
from tests.servers import free_port, wait_until
from webgpt.service import app as service_app

QUESTION = {"question": "crow corvus"}


def test_answer_json(service_url) -> None:  # type: ignore[no-untyped-def]
    with service_url() as base:
        response = httpx.post(f"{base}/answer", json=QUESTION, timeout=60)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["id"].startswith("ans_")
    assert body["answer"] == "Crows are corvids [1]."
    assert body["references"] == [
        {
            "n": 1,
            "title": "Crow",
            "url": "https://en.wikipedia.org/wiki/Crow",
            "domain": "en.wikipedia.org",
            "extract": "Crows are birds of the genus Corvus.",
        }
    ]
    assert body["usage"]["actions"] == 4 and body["usage"]["pages_fetched"] == 1
    assert body["versions"] == {
        "policy": "scripted",
        "reward": None,
        "quote_ranker": None,
        "format": 1,
    }
    assert body["trace"] is None
    assert response.headers["x-request-id"]
    with service_url() as base:
        traced = httpx.post(f"{base}/answer", json={**QUESTION, "include_trace": True}, timeout=60)
    kinds = [event["type"] for event in traced.json()["trace"]]
    assert kinds[0] == "episode_start" and kinds.count("action") == 4 and kinds[-1] == "candidate"


def test_stream_sends_typed_events_then_done(service_url) -> None:  # type: ignore[no-untyped-def]
    with (
        service_url() as base,
        httpx.stream(
            "POST",
            f"{base}/answer",
            json={**QUESTION, "stream": True},
            headers={"x-request-id": "trace-42"},
            timeout=60,
        ) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["x-request-id"] == "trace-42"  # the caller's id, echoed
        data = [
            line[len("data: ") :] for line in response.iter_lines() if line.startswith("data: ")
        ]
        response.close()
        # Recorded once the stream's last byte is sent, which may be just after [DONE] arrives.
        wait_until(lambda: 'route="/answer",status="200"' in httpx.get(f"{base}/metrics").text)
        metrics = httpx.get(f"{base}/metrics").text
    assert 'webgpt_requests_total{route="/answer",status="200"} 1.0' in metrics
    assert 'webgpt_request_seconds_count{route="/answer"} 1.0' in metrics
    assert data[-1] == "[DONE]"
    events = [json.loads(d) for d in data[:-1]]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "episode_start"
    assert [e["event"]["type"] for e in events if e["type"] == "action"] == [
        "search",
        "page",
        "quote",
        "end",
    ]
    assert "answer_delta" in kinds and kinds[-2] == "candidate" and kinds[-1] == "final"
    assert events[-1]["result"]["answer"] == "Crows are corvids [1]."


def test_a_stream_waiting_on_a_slow_policy_sends_keep_alive_pings(
    service_url,  # type: ignore[no-untyped-def]
    script: Script,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(service_app, "SSE_PING_S", 0.2)
    script.delay_s = 1.0  # each policy call: five ping periods without an event
    with (
        service_url() as base,
        httpx.stream(
            "POST", f"{base}/answer", json={**QUESTION, "stream": True}, timeout=60
        ) as response,
    ):
        lines = [line for line in response.iter_lines() if line]
    first_event = next(i for i, line in enumerate(lines) if line.startswith("data: "))
    pings = [i for i, line in enumerate(lines) if line.startswith(":")]
    assert len(pings) >= 4 and lines[-1] == "data: [DONE]"
    assert any(i > first_event for i in pings)  # between events too, not only before the first


def test_a_stream_that_fails_unexpectedly_still_ends_with_error_then_done(
    service_url,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from webgpt.service.recording import AnswerRecorder

    async def bug(self: AnswerRecorder, result: object) -> None:
        raise RuntimeError("a bug at /srv/webgpt while recording the answer")

    monkeypatch.setattr(AnswerRecorder, "record", bug)
    with (
        service_url() as base,
        httpx.stream(
            "POST", f"{base}/answer", json={**QUESTION, "stream": True}, timeout=60
        ) as response,
    ):
        data = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    assert json.loads(data[-2]) == {
        "type": "error",
        "message": "internal error",  # no internals leak to the client
        "error_type": "internal_error",
    }


def test_api_keys(service_url) -> None:  # type: ignore[no-untyped-def]
    with service_url(api_keys="key-one, key-two") as base:
        for headers in (
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": "Basic key-one"},
            {"Authorization": "Bearer key-one-and-more"},
        ):
            response = httpx.post(f"{base}/answer", json=QUESTION, headers=headers, timeout=30)
            assert response.status_code == 401
            assert response.json()["error"]["type"] == "unauthorized"
        ok = httpx.post(
            f"{base}/answer", json=QUESTION, headers={"Authorization": "Bearer key-two"}, timeout=60
        )
        assert ok.status_code == 200
        assert httpx.get(f"{base}/healthz").status_code == 200  # probes need no key


def test_invalid_requests_are_422_with_one_error_shape(service_url) -> None:  # type: ignore[no-untyped-def]
    cases = [
        ({}, "question"),
        ({"question": ""}, "question"),
        ({"question": "   "}, "question"),
        ({"question": "q", "n": 0}, "n"),
        ({"question": "q", "temperature": 9}, "temperature"),
        ({"question": "q", "surprise": 1}, "surprise"),
        ({"question": "q", "n": 99}, "at most"),
        ({"question": "x" * 3000}, "longer than"),
        ({"question": "q", "max_actions": 10_000}, "max_actions"),
        ({"question": "q", "engine": "bing"}, "not enabled"),
    ]
    with service_url() as base:
        for body, needle in cases:
            response = httpx.post(f"{base}/answer", json=body, timeout=30)
            assert response.status_code == 422, (body, response.text)
            error = response.json()["error"]
            assert error["type"] == "invalid_request" and needle in error["message"], error
        garbage = httpx.post(
            f"{base}/answer", content=b"{not json", headers={"content-type": "application/json"}
        )
        assert garbage.status_code == 422
        assert garbage.json()["error"]["message"].startswith("the body is not valid JSON")


def test_best_of_n_turned_off_is_422(service_url) -> None:  # type: ignore[no-untyped-def]
    with service_url(reward_model="none") as base:
        response = httpx.post(f"{base}/answer", json={**QUESTION, "n": 2}, timeout=30)
    assert response.status_code == 422
    assert "reward model" in response.json()["error"]["message"]


def test_oversized_bodies_are_413(service_url) -> None:  # type: ignore[no-untyped-def]
    with service_url(max_request_bytes=2048) as base:
        big = {"question": "q" * 5000}
        assert httpx.post(f"{base}/answer", json=big).status_code == 413

        def chunks():  # type: ignore[no-untyped-def]
            for _ in range(10):
                yield b" " * 1000

        chunked = httpx.post(
            f"{base}/answer", content=chunks(), headers={"content-type": "application/json"}
        )
        assert chunked.status_code == 413
        assert chunked.json()["error"]["type"] == "payload_too_large"


def test_overload_is_429_with_retry_after(service_url, script: Script) -> None:  # type: ignore[no-untyped-def]
    script.delay_s = 0.3
    with service_url(max_concurrent_requests=1, max_waiting_requests=0) as base:

        async def both() -> list[httpx.Response]:
            async with httpx.AsyncClient(timeout=60) as client:
                return await asyncio.gather(
                    client.post(f"{base}/answer", json=QUESTION),
                    client.post(f"{base}/answer", json=QUESTION),
                )

        statuses = sorted(r.status_code for r in asyncio.run(both()))
        assert statuses == [200, 429]
        rejected = httpx.post(f"{base}/answer", json={**QUESTION, "stream": True}, timeout=60)
        assert rejected.status_code == 200  # capacity is free again


def test_policy_down_is_503_and_not_ready(offline_store, script: Script) -> None:  # type: ignore[no-untyped-def]
    from tests.servers import serve
    from webgpt.agent.openai_policy import OpenAIPolicy
    from webgpt.browser.web import Web, WebOptions
    from webgpt.service.app import create_app
    from webgpt.service.metrics import Metrics
    from webgpt.service.serving import AnswerService
    from webgpt.service.settings import ServiceSettings
    from webgpt.service.store import FeedbackStore

    down = f"http://127.0.0.1:{free_port()}/v1"
    settings = ServiceSettings(policy_url=down, policy_model="m", retry_after_s=7)
    web = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
    policy = OpenAIPolicy(down, "m", backoff_s=0.01, max_retries=1)
    store = FeedbackStore(offline_store.parent / "down.sqlite")
    service = AnswerService(settings, web, policy, None, Metrics(), store)
    with serve(create_app(service)) as base:
        response = httpx.post(f"{base}/answer", json=QUESTION, timeout=30)
        assert response.status_code == 503
        assert response.headers["retry-after"] == "7"
        assert response.json()["error"]["type"] == "policy_unavailable"
        ready = httpx.get(f"{base}/readyz")
        assert ready.status_code == 503 and not ready.json()["checks"]["policy"]["ok"]
        assert down not in ready.text  # an unauthenticated probe shows no internal address


def test_ready_and_metrics(service_url) -> None:  # type: ignore[no-untyped-def]
    with service_url() as base:
        assert httpx.get(f"{base}/readyz").json() == {
            "status": "ready",
            "checks": {"policy": {"ok": True}, "database": {"ok": True, "spooled": 0}},
        }
        httpx.post(f"{base}/answer", json=QUESTION, timeout=60)
        text = httpx.get(f"{base}/metrics").text
    assert 'webgpt_requests_total{route="/answer",status="200"} 1.0' in text
    assert "webgpt_actions_total 4.0" in text
    assert "webgpt_request_seconds_bucket" in text


def test_metrics_label_routes_by_template_so_random_paths_add_no_series(service_url) -> None:  # type: ignore[no-untyped-def]
    with service_url() as base, httpx.Client() as client:
        for i in range(1000):
            assert client.get(f"{base}/no/such/{i}-{uuid.uuid4().hex}").status_code == 404
        text = client.get(f"{base}/metrics").text
    series = [line for line in text.splitlines() if line.startswith("webgpt_requests_total{")]
    assert 'webgpt_requests_total{route="unmatched",status="404"} 1000.0' in text
    assert not any("/no/such" in line for line in series)
    assert len(series) <= 4, series


def test_client_disconnect_cancels_the_answer(service_url, script: Script) -> None:  # type: ignore[no-untyped-def]
    script.delay_s = 0.5
    script.oracle_quote = None
    script.default_command = "Top"  # an endless browse: only cancellation stops it early
    with service_url() as base:
        with httpx.stream(
            "POST",
            f"{base}/answer",
            json={**QUESTION, "stream": True, "max_actions": 100},
            timeout=60,
        ) as response:
            for line in response.iter_lines():
                if line.startswith("data: ") and '"action"' in line:
                    break  # the first action arrived; now the client goes away
        # The disconnect takes a moment to be seen: wait until the count rests for 1.5 s (a
        # live episode calls every ~0.5 s), bounded; then it must stay still.
        deadline = time.monotonic() + 30
        seen = -1
        while (count := len(script.requests)) != seen:
            assert time.monotonic() < deadline, "policy requests kept coming after the client left"
            seen = count
            time.sleep(1.5)
        time.sleep(2.0)
        assert len(script.requests) == seen, "policy requests kept coming after the client left"
        assert seen < 10


class _BrokenScorer:
    name = "broken"

    async def score(self, answers):  # type: ignore[no-untyped-def]
        raise RuntimeError("CUDA error: device-side assert")

    async def aclose(self) -> None:
        pass


def test_ready_needs_a_reward_model_that_answers(offline_store, policy_url) -> None:  # type: ignore[no-untyped-def]
    from tests.servers import serve
    from webgpt.agent.openai_policy import OpenAIPolicy
    from webgpt.browser.web import Web, WebOptions
    from webgpt.service.app import create_app
    from webgpt.service.metrics import Metrics
    from webgpt.service.serving import AnswerService
    from webgpt.service.settings import ServiceSettings
    from webgpt.service.store import FeedbackStore

    settings = ServiceSettings(policy_url=policy_url, policy_model="scripted")
    web = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
    store = FeedbackStore(offline_store.parent / "broken.sqlite")
    policy = OpenAIPolicy(policy_url, "scripted")
    service = AnswerService(settings, web, policy, _BrokenScorer(), Metrics(), store)
    with serve(create_app(service)) as base:
        ready = httpx.get(f"{base}/readyz")
    assert ready.status_code == 503
    checks = ready.json()["checks"]
    assert checks["reward"] == {"ok": False, "detail": "the reward model failed: internal error"}
    assert checks["policy"]["ok"]


def test_without_api_keys_the_service_only_listens_on_loopback() -> None:
    import pytest

    from webgpt.agent.errors import ConfigurationError
    from webgpt.service.server import build_service, is_loopback
    from webgpt.service.settings import ServiceSettings

    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.5")
    with pytest.raises(ConfigurationError, match="WEBGPT_API_KEYS"):
        build_service(ServiceSettings(host="0.0.0.0", policy_url="http://x/v1", policy_model="m"))


def test_serve_refuses_a_bad_port_or_host_before_starting(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from webgpt.service.cli import main

    for argv, problem in [
        (["--port", "99999"], "port: Input should be less than or equal to 65535"),
        (["--port", "0"], "port: Input should be greater than or equal to 1"),
        (["--host", "not a host!"], "'not a host!' is neither an IP address nor a hostname"),
    ]:
        assert main(["serve", *argv]) == 1
        assert problem in capsys.readouterr().err
    monkeypatch.setenv("WEBGPT_PORT", "70000")
    assert main(["serve"]) == 1
    assert "less than or equal to 65535" in capsys.readouterr().err
