"""A two-turn conversation over every interface: /answer (JSON and stream), the OpenAI
route, the SDK's conversation and the MCP answer tool. The follow-up's pronoun points to
what the first answer named, and the episodes browse the question made standalone."""

import httpx
import openai
import pytest
from webgpt_client import AsyncClient, Client

from tests.agent.fake_policy import Script
from tests.service.test_mcp import http_client

FIRST = "Which bird is bigger than the crow?"
FIRST_ANSWER = "The Raven is a large Corvus species, bigger than the Crow [1]."
FOLLOW_UP = "how long do they live"
STANDALONE = "how long do the Raven live"
RAVEN_QUOTE = "Ravens live up to 21 years in the wild."
RAVEN_ANSWER = "Ravens live up to 21 years in the wild [1]."
HISTORY = [{"role": "user", "content": FIRST}, {"role": "assistant", "content": FIRST_ANSWER}]


@pytest.fixture
def raven_script(script: Script) -> Script:
    """The scripted policy reads the page it is shown: it quotes the raven's life span."""
    script.oracle_quote = RAVEN_QUOTE
    script.answers = [RAVEN_ANSWER] * 20
    return script


def browsed(script: Script) -> set[str]:
    """The questions the policy's browsing prompts asked."""
    return {
        str(r["prompt"]).split("♦Question\n", 1)[1].split("\n", 1)[0]
        for r in script.requests
        if "♦Question\n" in str(r.get("prompt", ""))
    }


def test_answer_takes_the_conversation(service_url, raven_script: Script) -> None:  # type: ignore[no-untyped-def]
    with service_url() as base:
        body = {"question": FOLLOW_UP, "history": HISTORY, "include_trace": True}
        result = httpx.post(f"{base}/answer", json=body, timeout=60).json()
        assert (result["question"], result["question_asked"]) == (FOLLOW_UP, STANDALONE)
        assert result["answer"] == RAVEN_ANSWER
        assert result["references"][0]["url"] == "https://en.wikipedia.org/wiki/Raven"
        follow_up = result["trace"][0]  # before any episode
        assert follow_up == {
            "type": "follow_up",
            "question": FOLLOW_UP,
            "question_asked": STANDALONE,
            "replaced": [["they", "the Raven"]],
            "by": "rule",
        }
        assert browsed(raven_script) == {STANDALONE}

        alone = httpx.post(f"{base}/answer", json={"question": FIRST}, timeout=60).json()
        assert alone["question_asked"] == FIRST  # a question that stands alone is browsed so

        with httpx.stream(
            "POST", f"{base}/answer", json={**body, "stream": True}, timeout=60
        ) as response:
            lines = [line for line in response.iter_lines() if line.startswith("data: {")]
        assert '"type":"follow_up"' in lines[0] and STANDALONE in lines[0]

        for history, why in [
            ([{"role": "system", "content": "x"}], "role"),
            ([{"role": "user", "content": "x" * 20_001}], "content"),
            ([{"role": "user", "content": "x"}] * 51, "history"),
        ]:
            refused = httpx.post(f"{base}/answer", json={**body, "history": history}, timeout=60)
            assert refused.status_code == 422 and why in refused.text


def test_the_openai_route_reads_the_messages_before_the_question(  # type: ignore[no-untyped-def]
    service_url, raven_script: Script
) -> None:
    messages = [{"role": "system", "content": "Answer with citations."}, *HISTORY]
    with (
        service_url() as base,
        openai.OpenAI(base_url=f"{base}/v1", api_key="x", max_retries=0) as client,
    ):
        completion = client.chat.completions.create(
            model="webgpt",
            messages=[*messages, {"role": "user", "content": FOLLOW_UP}],  # type: ignore[list-item]
        )
        message = completion.choices[0].message
        assert message.content == RAVEN_ANSWER
        assert (message.model_extra or {})["question_asked"] == STANDALONE
        assert browsed(raven_script) == {STANDALONE}


def test_the_sdk_conversation_sends_each_question_with_the_ones_before(  # type: ignore[no-untyped-def]
    service_url, raven_script: Script
) -> None:
    raven_script.answers = [FIRST_ANSWER, RAVEN_ANSWER]
    with service_url() as base, Client(base) as client:
        conversation = client.conversation()
        first = conversation.ask(FIRST)
        assert first.question_asked == FIRST and first.answer == FIRST_ANSWER
        second = conversation.ask(FOLLOW_UP, include_trace=True)
        assert (second.question, second.question_asked) == (FOLLOW_UP, STANDALONE)
        assert second.trace and second.trace[0]["type"] == "follow_up"
        assert conversation.history == [*HISTORY, *_said(FOLLOW_UP, RAVEN_ANSWER)]
        with client.stream(FOLLOW_UP, history=HISTORY) as events:
            kinds = [event.type for event in events]
        assert kinds[0] == "follow_up" and kinds[-1] == "final"


async def test_the_async_sdk_conversation(service_url, raven_script: Script) -> None:  # type: ignore[no-untyped-def]
    raven_script.answers = [FIRST_ANSWER, RAVEN_ANSWER]
    with service_url() as base:
        async with AsyncClient(base) as client:
            conversation = client.conversation()
            await conversation.ask(FIRST)
            second = await conversation.ask(FOLLOW_UP)
    assert second.question_asked == STANDALONE and second.answer == RAVEN_ANSWER
    assert len(conversation.history) == 4


async def test_the_mcp_answer_tool_takes_the_conversation(  # type: ignore[no-untyped-def]
    service_url, raven_script: Script
) -> None:
    with service_url() as base:
        async with http_client(base) as client:
            result = await client.call_tool("answer", {"question": FOLLOW_UP, "history": HISTORY})
            bad = await client.call_tool(
                "answer", {"question": FOLLOW_UP, "history": [{"role": "tool", "content": "x"}]}
            )
    assert not result.is_error, result.content
    answer = result.structured_content
    assert answer is not None
    assert answer["question_asked"] == STANDALONE and answer["answer"] == RAVEN_ANSWER
    assert bad.is_error
    assert browsed(raven_script) == {STANDALONE}


def _said(question: str, answer: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
