"""Keys with roles and a token bucket per key (service.access): parsing, the bucket's
arithmetic on an injected clock, and the real app on loopback refusing, limiting and
serving each route as the key's roles and bucket say."""

import asyncio

import httpx
import pytest
from starlette.requests import Request

from webgpt.agent.errors import ConfigurationError
from webgpt.service.access import LOCAL, ROLES, Access, ApiKey, TokenBucket, parse_keys
from webgpt.service.cli import main
from webgpt.service.errors import Forbidden, RateLimited, Unauthorized
from webgpt.service.settings import ServiceSettings

QUESTION = {"question": "crow corvus"}
INVALID = {"question": ""}  # refused after authorization: a 422 shows the key got through


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


# Parsing ----------------------------------------------------------------------------------


def test_keys_parse_with_roles_and_a_bare_key_may_only_answer() -> None:
    keys = parse_keys(" k1 , k2:answer+label, k3 : admin ,k4:label,")
    assert [(key.secret, set(key.roles)) for key in keys] == [
        ("k1", {"answer"}),
        ("k2", {"answer", "label"}),
        ("k3", {"admin"}),
        ("k4", {"label"}),
    ]
    assert parse_keys("") == [] and parse_keys(" , ") == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("k1:lable", "entry 1 has an empty or unknown role"),
        ("k1,k2:answer+root", "entry 2 has an empty or unknown role"),
        ("k1:", "entry 1 has an empty or unknown role"),
        ("k1:answer+", "entry 1 has an empty or unknown role"),
        ("k1:answer++label", "entry 1 has an empty or unknown role"),
        (":label", "entry 1 has no key before its roles"),
        ("k1, :admin", "entry 2 has no key before its roles"),
        ("k1,k2,k1:label", "entry 3 repeats an earlier key"),
        ("k1:answer, k1 :admin", "entry 2 repeats an earlier key"),
    ],
)
def test_a_malformed_key_configuration_is_refused(text: str, problem: str) -> None:
    with pytest.raises(ConfigurationError, match=problem):
        parse_keys(text)


def test_errors_and_reprs_never_show_a_key() -> None:
    # A ':' typed for a ',' puts the second key where a role belongs.
    with pytest.raises(ConfigurationError) as caught:
        parse_keys("first-secret-key:second-secret-key")
    assert "secret" not in str(caught.value)
    settings = ServiceSettings(api_keys="first-secret-key:label")
    assert "secret" not in repr(settings) and "secret" not in repr(settings.api_key_list())


def test_serve_refuses_a_malformed_key_configuration_before_starting(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEBGPT_API_KEYS", "good-key:answer,other-key:lable")
    monkeypatch.setenv("WEBGPT_POLICY_URL", "http://127.0.0.1:9/v1")  # never reached
    monkeypatch.setenv("WEBGPT_POLICY_MODEL", "m")
    assert main(["serve"]) == 1
    err = capsys.readouterr().err
    assert "WEBGPT_API_KEYS entry 2 has an empty or unknown role" in err
    assert "good-key" not in err and "other-key" not in err


# The bucket and the dependencies, on an injected clock -------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def request(authorization: str | None) -> Request:
    headers = [] if authorization is None else [(b"authorization", authorization.encode())]
    return Request({"type": "http", "method": "POST", "path": "/", "headers": headers})


def test_the_bucket_refills_at_its_rate_up_to_its_capacity() -> None:
    bucket = TokenBucket(capacity=2, rate=0.5, now=0.0)
    assert bucket.take(0.0) == 0.0 and bucket.take(0.0) == 0.0
    assert bucket.take(0.0) == pytest.approx(2.0)  # one token takes 1 / 0.5 s
    assert bucket.take(1.5) == pytest.approx(0.5)  # 0.75 of a token so far
    assert bucket.take(2.0) == 0.0
    assert bucket.take(1000.0) == 0.0 and bucket.take(1000.0) == 0.0  # never more than 2
    assert bucket.take(1000.0) > 0


def test_over_the_limit_is_rate_limited_with_the_buckets_own_wait() -> None:
    clock = Clock()
    access = Access(parse_keys("one,two"), per_minute=20, burst=3, clock=clock)  # 1 per 3 s
    one, two = access.identify("Bearer one"), access.identify("Bearer two")
    for _ in range(3):
        access.admit(one)
    with pytest.raises(RateLimited) as caught:
        access.admit(one)
    assert caught.value.retry_after_s == 3 and "(20 a minute, bursts of 3)" in str(caught.value)
    access.admit(two)  # each key has its own bucket
    clock.now += 1.2
    with pytest.raises(RateLimited) as caught:
        access.admit(one)
    assert caught.value.retry_after_s == 2  # 1.8 s left, in whole seconds rounded up
    clock.now += 1.8
    access.admit(one)  # refilled at 20 a minute: one token after 3 s
    with pytest.raises(RateLimited):
        access.admit(one)
    clock.now += 3600
    for _ in range(3):  # a long pause refills the burst, no more
        access.admit(one)
    with pytest.raises(RateLimited):
        access.admit(one)


async def test_require_checks_the_role_and_admin_implies_every_role() -> None:
    keys = "answerer,labeler:label,both:answer+label,boss:admin"
    access = Access(parse_keys(keys), per_minute=60, burst=100, clock=Clock())
    allowed = {
        "answerer": {"answer"},
        "labeler": {"label"},
        "both": {"answer", "label"},
        "boss": {"answer", "label", "admin"},
    }
    for key, roles in allowed.items():
        for role in ROLES:
            dependency = access.require(role)
            if role in roles:
                caller_id = await dependency(request(f"Bearer {key}"))
                assert caller_id == ApiKey(key, frozenset()).fingerprint
            else:
                with pytest.raises(Forbidden, match=f"'{role}' role"):
                    await dependency(request(f"Bearer {key}"))
    for header in (None, "Bearer nobody", "Basic boss", "Bearer boss-and-more"):
        with pytest.raises(Unauthorized):
            await access.require("answer")(request(header))


async def test_without_keys_the_local_caller_has_every_role_and_no_limit() -> None:
    access = Access([], per_minute=1, burst=1, clock=Clock())
    for _ in range(10):
        assert await access.require("admin")(request(None)) == "local"
    assert access.identify("Bearer anything") is LOCAL


# The real app on loopback -----------------------------------------------------------------


def test_a_key_without_label_can_answer_but_not_write_training_data(service_url) -> None:  # type: ignore[no-untyped-def]
    with (
        service_url(api_keys="asker,labeler:answer+label") as base,
        httpx.Client(base_url=base, timeout=60) as http,
    ):
        answered = http.post("/answer", json=QUESTION, headers=bearer("asker"))
        assert answered.status_code == 200, answered.text
        chat = http.post("/v1/chat/completions", json={}, headers=bearer("asker"))
        assert chat.status_code == 400, chat.text  # past the role check (OpenAI's status)
        assert chat.json()["error"]["type"] == "invalid_request_error"
        answer_id = answered.json()["id"]
        comparison = {"answer_id": answer_id, "better": 0, "worse": 0, "tie": True}
        for method, path, body in [
            ("POST", "/feedback", comparison),
            ("POST", "/sessions", {"question": "crows"}),
            ("POST", "/sessions/s1/step", {"command": "Top"}),
            ("POST", "/sessions/s1/answer", {"answer": "Corvus [1]."}),
            ("DELETE", "/sessions/s1", None),
        ]:
            refused = http.request(method, path, json=body, headers=bearer("asker"))
            assert refused.status_code == 403, (path, refused.text)
            assert refused.json() == {
                "error": {
                    "type": "forbidden",
                    "message": "this API key does not have the 'label' role",
                }
            }
            assert "retry-after" not in refused.headers
        # The same requests with label get past the role check.
        created = http.post("/sessions", json={"question": "crows"}, headers=bearer("labeler"))
        assert created.status_code == 200, created.text
        session = created.json()["id"]
        assert http.delete(f"/sessions/{session}", headers=bearer("labeler")).status_code == 204
        assert http.post("/feedback", json={}, headers=bearer("labeler")).status_code == 422


def test_an_admin_key_may_do_everything(service_url) -> None:  # type: ignore[no-untyped-def]
    with (
        service_url(api_keys="asker,boss:admin") as base,
        httpx.Client(base_url=base, timeout=60) as http,
    ):
        assert http.post("/answer", json=INVALID, headers=bearer("boss")).status_code == 422
        assert http.post("/feedback", json={}, headers=bearer("boss")).status_code == 422
        created = http.post("/sessions", json={"question": "crows"}, headers=bearer("boss"))
        assert created.status_code == 200, created.text


def test_a_burst_over_the_limit_is_429_per_key_with_the_buckets_wait(service_url) -> None:  # type: ignore[no-untyped-def]
    limits = {"rate_limit_per_minute": 1, "rate_limit_burst": 3, "retry_after_s": 5}
    with (
        service_url(api_keys="one,two", **limits) as base,
        httpx.Client(base_url=base, timeout=60) as http,
    ):
        for _ in range(3):
            assert http.post("/answer", json=INVALID, headers=bearer("one")).status_code == 422
        limited = http.post("/answer", json=QUESTION, headers=bearer("one"))
        assert limited.status_code == 429
        error = limited.json()["error"]
        assert error["type"] == "rate_limited" and "(1 a minute, bursts of 3)" in error["message"]
        # The bucket's own wait (a token a minute, minus the moments since), not retry_after_s.
        assert 55 <= int(limited.headers["retry-after"]) <= 60
        chat = {"messages": [{"role": "user", "content": "crows?"}]}
        assert (
            http.post("/v1/chat/completions", json=chat, headers=bearer("one")).status_code == 429
        )
        # Another key still has its own tokens; a wrong key is still 401, not 429.
        assert http.post("/answer", json=INVALID, headers=bearer("two")).status_code == 422
        assert http.post("/answer", json=INVALID, headers=bearer("three")).status_code == 401


def test_session_steps_are_rate_limited_too(service_url) -> None:  # type: ignore[no-untyped-def]
    limits = {"rate_limit_per_minute": 1, "rate_limit_burst": 4}
    with (
        service_url(api_keys="person:label", **limits) as base,
        httpx.Client(base_url=base, timeout=60, headers=bearer("person")) as http,
    ):
        session = http.post("/sessions", json={"question": "crows"}).json()["id"]
        statuses = [
            http.post(f"/sessions/{session}/step", json={"command": "Search crow"}).status_code
            for _ in range(4)
        ]
        assert statuses == [200, 200, 200, 429]  # one search per token: no unmetered search API
        assert http.delete(f"/sessions/{session}").status_code == 429


def test_probes_and_the_page_are_never_limited(service_url) -> None:  # type: ignore[no-untyped-def]
    limits = {"rate_limit_per_minute": 1, "rate_limit_burst": 1}
    with (
        service_url(api_keys="one", **limits) as base,
        httpx.Client(base_url=base, timeout=60) as http,
    ):
        assert http.post("/answer", json=INVALID, headers=bearer("one")).status_code == 422
        assert http.post("/answer", json=INVALID, headers=bearer("one")).status_code == 429
        for _ in range(5):
            for path in ("/healthz", "/metrics", "/", "/static/app.js"):
                assert http.get(path, headers=bearer("one")).status_code == 200, path
            assert http.get("/readyz", headers=bearer("one")).status_code != 429


def test_local_mode_has_every_role_and_no_limit(service_url) -> None:  # type: ignore[no-untyped-def]
    limits = {"rate_limit_per_minute": 1, "rate_limit_burst": 1}
    with service_url(**limits) as base, httpx.Client(base_url=base, timeout=60) as http:

        async def many() -> list[int]:
            async with httpx.AsyncClient(base_url=base, timeout=60) as client:
                sent = [client.post("/feedback", json={}) for _ in range(10)]
                return [response.status_code for response in await asyncio.gather(*sent)]

        assert asyncio.run(many()) == [422] * 10  # past every check, to the body's validation
        assert http.post("/sessions", json={"question": "crows"}).status_code == 200
