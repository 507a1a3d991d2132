import time

import httpx
import pytest

from tests.agent.fake_policy import Script
from tests.servers import free_port
from webgpt.agent.errors import PolicyResponseError, PolicyTimeout, PolicyUnavailable
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.policy import Sampling


async def test_n_samples_and_request_shape(policy: OpenAIPolicy, script: Script) -> None:
    script.commands = ["Top", "Back", "Search crows", "End: Answer"]
    sampling = Sampling(n=4, temperature=0.7, max_tokens=16, stop=("\n",), regex="(Top|Back)")
    result = await policy.complete("♦Next action\n", sampling)
    assert [c.text for c in result.choices] == ["Top", "Back", "Search crows", "End: Answer"]
    assert result.usage.prompt_tokens == 2
    [request] = script.requests
    assert request == {
        "model": "scripted",
        "prompt": "♦Next action\n",
        "n": 4,
        "temperature": 0.7,
        "max_tokens": 16,
        "stream": False,
        "stop": ["\n"],
        "structured_outputs": {"regex": "(Top|Back)"},
    }


async def test_guided_decoding_can_be_switched_off(policy_url: str, script: Script) -> None:
    client = OpenAIPolicy(policy_url, "scripted", guided=False)
    try:
        await client.complete("x", Sampling(regex="(Top)"))
    finally:
        await client.aclose()
    assert "structured_outputs" not in script.requests[0]


async def test_refusals_503_and_429_are_retried_then_succeed(
    policy: OpenAIPolicy, script: Script
) -> None:
    script.faults = ["503", "429", ""]
    script.commands = ["Top"]
    result = await policy.complete("p", Sampling())
    assert result.choices[0].text == "Top"
    assert len(script.requests) == 3


async def test_retries_are_bounded(policy: OpenAIPolicy, script: Script) -> None:
    script.faults = ["503"] * 10
    with pytest.raises(PolicyResponseError, match="503: starting up") as caught:
        await policy.complete("p", Sampling())
    assert caught.value.status_code == 503
    assert len(script.requests) == policy.max_retries + 1


async def test_a_request_the_server_worked_on_is_not_sent_again(
    policy: OpenAIPolicy, script: Script
) -> None:
    script.faults = ["500"]  # the engine failed while doing the work: retrying adds load
    with pytest.raises(PolicyResponseError, match="500: engine crashed"):
        await policy.complete("p", Sampling())
    assert len(script.requests) == 1


async def test_client_errors_are_not_retried(policy: OpenAIPolicy, script: Script) -> None:
    script.faults = ["400"]
    with pytest.raises(PolicyResponseError, match="longer than the maximum model length"):
        await policy.complete("p", Sampling())
    assert len(script.requests) == 1


async def test_malformed_answers_are_clear_errors(policy: OpenAIPolicy, script: Script) -> None:
    script.faults = ["garbage-json"]
    with pytest.raises(PolicyResponseError, match="non-JSON"):
        await policy.complete("p", Sampling())


async def test_timeout(policy_url: str, script: Script) -> None:
    client = OpenAIPolicy(policy_url, "scripted", timeout_s=0.5, max_retries=1, backoff_s=0.01)
    script.faults = ["slow", "slow"]
    try:
        with pytest.raises(PolicyTimeout):
            await client.complete("p", Sampling())
    finally:
        await client.aclose()
    assert len(script.requests) == 1  # a slow server is not sent the same work again


async def test_down_server_fails_fast_after_the_first_failure() -> None:
    # A retry waits at least 1 s (half of backoff_s), so the 0.5 s bound tells one apart
    # from a refusal that sends nothing, with room for a slow machine.
    client = OpenAIPolicy(
        f"http://127.0.0.1:{free_port()}/v1", "m", backoff_s=2.0, max_retries=1, cooldown_s=30
    )
    try:
        with pytest.raises(PolicyUnavailable, match="cannot connect"):
            await client.complete("p", Sampling())
        started = time.monotonic()
        with pytest.raises(PolicyUnavailable, match="cooling down"):
            await client.complete("p", Sampling())
        assert time.monotonic() - started < 0.5  # no new connection attempts, no retries
    finally:
        await client.aclose()


async def test_stream_yields_deltas_and_usage(policy: OpenAIPolicy, script: Script) -> None:
    script.answers = ["Crows remember faces [1]."]
    chunks = [c async for c in policy.stream("q■", Sampling(max_tokens=50))]
    assert "".join(c.text for c in chunks) == "Crows remember faces [1]."
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 4
    assert script.requests[0]["stream"] is True


async def test_a_streamed_text_may_hold_any_unicode_line_break(
    policy: OpenAIPolicy, script: Script
) -> None:
    """An event stream's lines end at CR or LF only; vLLM writes U+2028 and U+0085 raw in
    its JSON, and reading lines as str.splitlines does cut such a chunk in two."""
    answer = "Crows\u2028remember\x85faces\u2029and\x1dnames [1]."
    script.answers = [answer]
    chunks = [c async for c in policy.stream("q■", Sampling(max_tokens=50))]
    assert "".join(c.text for c in chunks) == answer


async def test_truncated_stream_is_an_error(policy: OpenAIPolicy, script: Script) -> None:
    script.faults = ["truncated"]
    script.answers = ["A long answer that will be cut off [1]."]
    with pytest.raises(PolicyResponseError, match="truncated"):
        async for _ in policy.stream("q■", Sampling()):
            pass


async def test_broken_connection_mid_stream() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        async def body():  # type: ignore[no-untyped-def]
            yield b'data: {"choices": [{"index": 0, "text": "par"}]}\n\n'
            raise httpx.ReadError("connection reset by peer")

        return httpx.Response(200, content=body())

    client = OpenAIPolicy("http://policy.test/v1", "m", transport=httpx.MockTransport(handler))
    try:
        with pytest.raises(PolicyResponseError, match="broke"):
            async for _ in client.stream("q■", Sampling()):
                pass
    finally:
        await client.aclose()


async def test_a_model_the_server_lost_is_loaded_again_and_the_request_resent(
    policy_url: str, script: Script
) -> None:
    """A restarted vLLM answers 404 for an adapter loaded before: the hook loads it again
    (here: the scripted server learns the name) and the request goes through."""
    loads: list[str] = []

    async def load_again() -> None:
        loads.append("v1")
        script.adapters["v1"] = "/registry/v1"

    client = OpenAIPolicy(policy_url, "v1", on_missing_model=load_again)
    plain = OpenAIPolicy(policy_url, "v2")
    script.commands = ["Back", "Top"]  # the scripted server takes one for the 404 too
    try:
        result = await client.complete("x", Sampling())
        with pytest.raises(PolicyResponseError, match="404"):
            await plain.complete("x", Sampling())  # without the hook: the 404 as it was
    finally:
        await client.aclose()
        await plain.aclose()
    assert [c.text for c in result.choices] == ["Top"] and loads == ["v1"]
    assert [r["model"] for r in script.requests] == ["v1", "v1", "v2"]
