"""Best-of-n by default: a service with no reward model configured loads the shipped one
on the first request for more than one episode, on every interface (/answer and its
stream, which the page uses, the OpenAI route's best_of, MCP's best_of), names its
version in the result, and an operator can turn it off.

The shipped reward model is here already prepared in a fresh WEBGPT_HOME and scores on a
stand-in server (tests/client/fake_reward.py: the shortest answer wins); the in-process
load of a real checkpoint is tested once, marked slow."""

import asyncio
import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.agent.fake_policy import Script
from tests.client.fake_reward import shipped_reward_model
from tests.servers import wait_until
from tests.service.test_mcp import http_client
from webgpt.agent.model import DEFAULT_REWARD_VERSION

QUESTION = "crow corvus"
SHORT = "Crows are corvids [1]."
LONG = "Crows, birds that remember faces for years, are corvids [1]."
ServiceUrl = Callable[..., AbstractContextManager[str]]


@pytest.fixture
def shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    with shipped_reward_model(tmp_path / "home", monkeypatch) as settings:
        yield settings


@pytest.fixture
def two_answers(script: Script) -> Script:
    """Episodes answer long or short in turn: the reward model's pick is the short one."""
    script.answers = [LONG, SHORT] * 20
    return script


def test_answer_with_n_4_is_the_reward_models_pick_named_in_the_result(
    service_url: ServiceUrl, shipped: dict[str, str], two_answers: Script, tmp_path: Path
) -> None:
    with service_url(**shipped, readiness_check_s=0.1) as base:
        before = httpx.get(f"{base}/readyz").json()
        one = httpx.post(f"{base}/answer", json={"question": QUESTION}, timeout=60).json()
        assert not (tmp_path / "home" / "registry" / "reward" / "current").exists()  # not yet
        response = httpx.post(f"{base}/answer", json={"question": QUESTION, "n": 4}, timeout=120)
        wait_until(lambda: "reward" in httpx.get(f"{base}/readyz").json()["checks"])
        after = httpx.get(f"{base}/readyz").json()
        metrics = httpx.get(f"{base}/metrics").text
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["versions"]["reward"] == DEFAULT_REWARD_VERSION
    assert len(body["candidates"]) == 4
    assert all(c["reward"] is not None for c in body["candidates"])
    assert body["answer"] == SHORT and body["candidates"][body["best"]]["answer"] == SHORT
    # One episode needs no reward model: none was loaded for it, and none scored it.
    assert one["versions"]["reward"] is None and one["candidates"][0]["reward"] is None
    assert "reward" not in before["checks"] and after["checks"]["reward"] == {"ok": True}
    # Loaded through the alias an operator re-points (service.scoring: hot reload).
    alias = tmp_path / "home" / "registry" / "reward" / "current"
    assert alias.resolve().name == DEFAULT_REWARD_VERSION
    assert 'webgpt_reward_reloads_total{outcome="loaded"} 1.0' in metrics


def test_the_page_stream_with_two_episodes_ends_with_the_pick(
    service_url: ServiceUrl, shipped: dict[str, str], two_answers: Script
) -> None:
    """What the page's episodes box sends: /answer, streamed, with n."""
    with (
        service_url(**shipped) as base,
        httpx.stream(
            "POST",
            f"{base}/answer",
            json={"question": QUESTION, "n": 2, "stream": True},
            timeout=120,
        ) as response,
    ):
        data = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    final = json.loads(data[-2])
    assert final["type"] == "final", final
    assert final["result"]["answer"] == SHORT
    assert final["result"]["versions"]["reward"] == DEFAULT_REWARD_VERSION
    candidates = [json.loads(d) for d in data[:-1] if '"type":"candidate"' in d]
    assert sorted(c["answer"] for c in candidates) == sorted([SHORT, LONG])
    assert all(c["reward"] is not None for c in candidates)


def test_openai_best_of_4_is_the_pick_and_n_alone_loads_nothing(
    service_url: ServiceUrl, shipped: dict[str, str], two_answers: Script, tmp_path: Path
) -> None:
    alias = tmp_path / "home" / "registry" / "reward" / "current"
    ask = [{"role": "user", "content": QUESTION}]
    with (
        service_url(**shipped) as base,
        openai.OpenAI(base_url=f"{base}/v1", api_key="x", max_retries=0) as client,
    ):
        two = client.chat.completions.create(model="webgpt", messages=ask, n=2)  # type: ignore[arg-type]
        assert len(two.choices) == 2 and not alias.exists()  # OpenAI's n: no reranking
        best = client.chat.completions.create(
            model="webgpt",
            messages=ask,  # type: ignore[arg-type]
            extra_body={"best_of": 4},
        )
        streamed: list[Any] = list(
            client.chat.completions.create(
                model="webgpt",
                messages=ask,  # type: ignore[arg-type]
                stream=True,
                extra_body={"best_of": 2},
            )
        )
    assert [c.message.content for c in best.choices] == [SHORT]
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == SHORT
    assert alias.resolve().name == DEFAULT_REWARD_VERSION


async def test_mcp_answer_with_best_of_4_is_the_pick(
    service_url: ServiceUrl, shipped: dict[str, str], two_answers: Script
) -> None:
    with service_url(**shipped) as base:
        async with http_client(base) as client:
            result = await client.call_tool("answer", {"question": QUESTION, "best_of": 4})
    assert not result.is_error, result.content
    answer = result.structured_content
    assert answer is not None
    assert answer["answer"] == SHORT
    assert answer["versions"]["reward"] == DEFAULT_REWARD_VERSION


def test_requests_arriving_while_it_loads_share_one_load(
    service_url: ServiceUrl, shipped: dict[str, str], two_answers: Script
) -> None:
    with service_url(**shipped) as base:

        async def three() -> list[httpx.Response]:
            async with httpx.AsyncClient(timeout=120) as client:
                return await asyncio.gather(
                    *(
                        client.post(f"{base}/answer", json={"question": QUESTION, "n": 2})
                        for _ in range(3)
                    )
                )

        responses = asyncio.run(three())
        metrics = httpx.get(f"{base}/metrics").text
    assert [r.status_code for r in responses] == [200, 200, 200]
    assert {r.json()["versions"]["reward"] for r in responses} == {DEFAULT_REWARD_VERSION}
    assert 'webgpt_reward_reloads_total{outcome="loaded"} 1.0' in metrics


def test_a_load_that_fails_is_503_and_tried_again(
    service_url: ServiceUrl, two_answers: Script, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped model cannot be prepared (here: a damaged folder where it goes); the
    request says the reward model is unavailable, and once repaired the next one loads it."""
    home = tmp_path / "home"
    with shipped_reward_model(home, monkeypatch) as settings:
        folder = home / "registry" / "reward" / DEFAULT_REWARD_VERSION
        saved = tmp_path / "saved"
        shutil.move(folder, saved)
        folder.mkdir()  # no manifest: damaged
        with service_url(**settings) as base:
            failed = httpx.post(f"{base}/answer", json={"question": QUESTION, "n": 2}, timeout=60)
            one = httpx.post(f"{base}/answer", json={"question": QUESTION}, timeout=60)
            folder.rmdir()
            shutil.move(saved, folder)
            loaded = httpx.post(f"{base}/answer", json={"question": QUESTION, "n": 2}, timeout=60)
    assert failed.status_code == 503, failed.text
    assert failed.json()["error"]["type"] == "reward_unavailable"
    assert failed.headers["retry-after"]
    assert str(home) not in failed.text  # the cause is in the service's log, not the reply
    assert one.status_code == 200  # one episode needs no reward model
    assert loaded.status_code == 200, loaded.text
    assert loaded.json()["versions"]["reward"] == DEFAULT_REWARD_VERSION


@pytest.mark.parametrize("path", ["/answer", "/v1/chat/completions"])
def test_an_operator_can_turn_best_of_n_off(
    service_url: ServiceUrl, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEBGPT_REWARD_MODEL", "none")
    if path == "/answer":
        one: dict[str, Any] = {"question": QUESTION}
        several = {**one, "n": 2}
    else:
        one = {"messages": [{"role": "user", "content": QUESTION}]}
        several = {**one, "best_of": 2}
    with service_url() as base:
        refused = httpx.post(base + path, json=several, timeout=30)
        streamed = httpx.post(base + path, json={**several, "stream": True}, timeout=30)
        answered = httpx.post(base + path, json=one, timeout=60)
    status = 422 if path == "/answer" else 400  # OpenAI's status for a request it won't run
    for response in (refused, streamed):  # a stream too, before its first byte
        assert response.status_code == status, response.text
        assert "one episode" in response.text
    assert answered.status_code == 200, answered.text


async def test_mcp_best_of_is_refused_when_it_is_off(
    service_url: ServiceUrl, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEBGPT_REWARD_MODEL", "none")
    with service_url() as base:
        async with http_client(base) as client:
            refused = await client.call_tool("answer", {"question": QUESTION, "best_of": 2})
            blank = await client.call_tool("answer", {"question": "   "})
    assert refused.is_error and "one episode" in refused.content[0].text  # type: ignore[union-attr]
    assert blank.is_error and "question: should not be empty or blank" in blank.content[0].text  # type: ignore[union-attr]


@pytest.mark.slow
def test_the_shipped_model_loads_in_process_on_first_use(
    service_url: ServiceUrl,
    script: Script,
    reward_checkpoint: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No reward server: the first request for two episodes loads the prepared checkpoint
    (a tiny trained one stands in for the shipped weights) into this process."""
    from tests.reward.tiny import answer

    monkeypatch.setenv("WEBGPT_HOME", str(tmp_path / "home"))
    registry = tmp_path / "home" / "registry" / "reward"
    shutil.copytree(reward_checkpoint, registry / DEFAULT_REWARD_VERSION)
    script.answers = [answer(7, "red"), answer(7, "blue")] * 5
    with service_url() as base:
        response = httpx.post(f"{base}/answer", json={"question": QUESTION, "n": 2}, timeout=300)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["answer"] == answer(7, "blue")  # what the tiny reward model prefers
    assert body["versions"]["reward"] == "rm-bon"  # the version its manifest names
    assert (registry / "current").resolve().name == DEFAULT_REWARD_VERSION
