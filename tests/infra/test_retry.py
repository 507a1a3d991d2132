"""The one retry rule (infra.retry) and the SDK's mirror of it."""

import httpx
import pytest

from webgpt.infra.retry import NOT_SENT, REFUSED_STATUSES, RetryPolicy, retry_after


def test_only_what_the_server_did_not_process_is_retried() -> None:
    rule = RetryPolicy()
    request = httpx.Request("POST", "http://x/answer")
    for error in (httpx.ConnectError("refused"), httpx.ConnectTimeout("slow connect"),
                  httpx.PoolTimeout("no free connection")):  # fmt: skip
        assert rule.retries_error(error)
    for error in (httpx.ReadTimeout("slow", request=request),
                  httpx.RemoteProtocolError("dropped", request=request)):  # fmt: skip
        assert not rule.retries_error(error)  # sent: the server may be working on it
    assert [s for s in (400, 404, 429, 500, 502, 503, 504) if rule.retries_status(s)] == [429, 503]


def test_retry_after_is_honoured_up_to_a_cap_else_backoff_grows() -> None:
    rule = RetryPolicy(backoff_s=1.0, max_retry_after_s=10.0)
    assert rule.delay(1, retry_after=3.0) == 3.0 and rule.delay(1, retry_after=600.0) == 10.0
    assert 0.5 <= rule.delay(1) <= 1.5 and 2.0 <= rule.delay(3) <= 6.0
    assert retry_after(httpx.Response(429, headers={"retry-after": "7"})) == 7.0
    assert retry_after(httpx.Response(429, headers={"retry-after": "soon"})) is None


def test_the_sdk_mirrors_the_rule() -> None:
    pytest.importorskip("webgpt_client")
    from webgpt_client import _client

    assert set(_client.NOT_SENT) == set(NOT_SENT)
    assert set(_client.RETRIED_STATUSES) == set(REFUSED_STATUSES)
