"""A message that asks nothing gets a short reply saying what the service answers, without
browsing: on /answer (JSON and stream), the OpenAI route and MCP (service.small_talk)."""

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import httpx
import openai
import pytest

from tests.agent.fake_policy import Script
from tests.client.fake_reward import shipped_reward_model
from tests.service.test_mcp import http_client
from webgpt.service.small_talk import NOT_A_QUESTION, REPLY, asks_nothing

ServiceUrl = Callable[..., AbstractContextManager[str]]
QUESTIONS = Path(__file__).parents[2] / "data" / "questions"


@pytest.mark.parametrize(
    "message",
    ["hi", "Hello there!", "hey webgpt", "thanks!", "Thank you so much.", "👋", "?", "ok, bye",
     "Good morning!", "how are you?", "What can you do?", "cheers, see you later"],
)  # fmt: skip
def test_a_message_with_no_content_word_asks_nothing(message: str) -> None:
    assert asks_nothing(message)


@pytest.mark.parametrize(
    "message",
    ["crows?", "python", "hi, who wrote Hamlet?", "1984", "thanks! and the capital of Peru?",
     "What is love", "Is it raining?", "good will hunting"],
)  # fmt: skip
def test_a_message_naming_something_is_a_question(message: str) -> None:
    assert not asks_nothing(message)


def test_no_question_of_the_question_sets_reads_as_small_talk() -> None:
    """The rule measured on questions it was not written from: every question people and
    the generators wrote for evaluation and training (data/questions/) is still browsed."""
    questions = [
        json.loads(line)["question"]
        for path in sorted(QUESTIONS.glob("*.jsonl"))
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    assert len(questions) > 1000
    assert [q for q in questions if asks_nothing(q)] == []


def test_answer_replies_without_browsing(
    service_url: ServiceUrl, script: Script, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        shipped_reward_model(tmp_path / "home", monkeypatch) as reward,
        service_url(**reward) as base,
    ):
        body = httpx.post(f"{base}/answer", json={"question": "hi"}, timeout=30).json()
        several = httpx.post(f"{base}/answer", json={"question": "Thanks!", "n": 2}, timeout=30)
        with httpx.stream(
            "POST", f"{base}/answer", json={"question": "hello", "stream": True}, timeout=30
        ) as response:
            data = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert body["answer"] == REPLY and body["references"] == [] and not body["declined"]
    assert body["candidates"][0]["end_reason"] == NOT_A_QUESTION
    assert body["usage"]["actions"] == 0 and body["versions"]["policy"] is None
    assert several.status_code == 200 and several.json()["answer"] == REPLY
    # Two episodes were asked for; none ran, so no reward model was needed or loaded.
    assert not (tmp_path / "home" / "registry" / "reward" / "current").exists()
    assert data[-1] == "[DONE]" and len(data) == 2  # the reply, then the end: no trace
    assert json.loads(data[0])["result"]["answer"] == REPLY
    assert script.requests == []  # the policy was never asked


def test_openai_route_replies_without_browsing(service_url: ServiceUrl, script: Script) -> None:
    with (
        service_url() as base,
        openai.OpenAI(base_url=f"{base}/v1", api_key="x", max_retries=0) as client,
    ):
        messages = [
            {"role": "user", "content": "crow corvus"},
            {"role": "assistant", "content": "Crows are corvids [1]."},
            {"role": "user", "content": "thank you!"},
        ]
        completion = client.chat.completions.create(model="webgpt", messages=messages, n=2)  # type: ignore[arg-type]
        streamed = client.chat.completions.create(
            model="webgpt",
            messages=[{"role": "user", "content": "hey"}],
            stream=True,
        )
        text = "".join(chunk.choices[0].delta.content or "" for chunk in streamed if chunk.choices)
    assert [choice.message.content for choice in completion.choices] == [REPLY, REPLY]
    assert completion.model == "webgpt"  # no policy version wrote it
    assert text == REPLY
    assert script.requests == []


async def test_mcp_answer_replies_without_browsing(service_url: ServiceUrl, script: Script) -> None:
    with service_url() as base:
        async with http_client(base) as client:
            result = await client.call_tool("answer", {"question": "hello!"})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert result.structured_content["answer"] == REPLY
    assert result.structured_content["references"] == []
    assert script.requests == []
