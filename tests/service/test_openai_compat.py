"""Existing OpenAI SDK code calls us unchanged, with OpenAI's meanings: the official
`openai` package, sync and async, streaming and not, against /v1/chat/completions on the
real app (service.chat)."""

from pathlib import Path

import openai
import pytest

from tests.agent.fake_policy import Script
from webgpt.agent.declines import decline_answer

CROW = "crow corvus"
ANSWER = "Crows are corvids [1]."
# A decline in the policy's own words, which the answer phase writes again by rule
OWN_DECLINE = "The pages I found do not say much."
CROW_URL = "https://en.wikipedia.org/wiki/Crow"


def ask(text: str = CROW) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You answer with citations."},
        {"role": "user", "content": text},
    ]


def answer_prompts(script: Script) -> int:
    """Answer-phase requests the policy got: one per episode that answered."""
    return sum(str(r.get("prompt", "")).endswith("■") for r in script.requests)


def test_one_choice_with_references_annotations_and_usage(service_url) -> None:  # type: ignore[no-untyped-def]
    with (
        service_url(api_keys="sk-webgpt") as base,
        openai.OpenAI(base_url=f"{base}/v1", api_key="sk-webgpt", max_retries=0) as client,
    ):
        completion = client.chat.completions.create(model="webgpt", messages=ask())
        assert completion.object == "chat.completion" and len(completion.choices) == 1
        message = completion.choices[0].message
        assert message.role == "assistant" and message.content == ANSWER
        extra = message.model_extra or {}
        assert extra["declined"] is False and extra["references"][0]["url"] == CROW_URL
        # OpenAI's web search shape: the span of the sentence the citation ends.
        assert message.annotations is not None and len(message.annotations) == 1
        cited = message.annotations[0]
        assert cited.type == "url_citation" and cited.url_citation.url == CROW_URL
        assert cited.url_citation.title == "Crow"
        span = ANSWER[cited.url_citation.start_index : cited.url_citation.end_index]
        assert span == "Crows are corvids [1]"
        assert completion.usage is not None and completion.usage.total_tokens > 0

        stream = client.chat.completions.create(
            model="webgpt",
            messages=ask(),
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == ANSWER
        finishing = [c for c in chunks if c.choices and c.choices[0].finish_reason == "stop"]
        assert len(finishing) == 1
        delta_extra = finishing[0].choices[0].delta.model_extra or {}
        assert delta_extra["references"][0]["title"] == "Crow"
        assert delta_extra["annotations"][0]["url_citation"]["url"] == CROW_URL
        # include_usage: a last chunk with no choices and the usage; null on the others.
        assert chunks[-1].choices == [] and chunks[-1].usage is not None
        assert chunks[-1].usage.total_tokens > 0
        assert all(c.usage is None for c in chunks[:-1])


def test_n_returns_n_choices_each_its_own_episode(service_url, script: Script) -> None:  # type: ignore[no-untyped-def]
    script.answers = ["Crows are corvids [1].", OWN_DECLINE] * 4
    with (
        service_url() as base,
        openai.OpenAI(base_url=f"{base}/v1", api_key="x", max_retries=0) as client,
    ):
        completion = client.chat.completions.create(model="webgpt", messages=ask(), n=2)
        assert [c.index for c in completion.choices] == [0, 1]
        texts = {c.message.content for c in completion.choices}
        # a decline is written again from the question (agent.declines.decline_answer): the
        # served answer is the second draft
        assert texts == {"Crows are corvids [1].", decline_answer(CROW)}
        assert answer_prompts(script) == 2  # two episodes, no reward model consulted

        chunks = list(
            client.chat.completions.create(model="webgpt", messages=ask(), n=2, stream=True)
        )
        streamed = {0: "", 1: ""}
        finished = set()
        for chunk in chunks:
            for choice in chunk.choices:
                streamed[choice.index] += choice.delta.content or ""
                if choice.finish_reason == "stop":
                    finished.add(choice.index)
        # a streamed choice's content is the served answer, not its drafts one after another
        assert set(streamed.values()) == {"Crows are corvids [1].", decline_answer(CROW)}
        assert finished == {0, 1}


async def test_async_client_streaming_and_not(service_url) -> None:  # type: ignore[no-untyped-def]
    with service_url() as base:
        async with openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="x", max_retries=0) as client:
            completion = await client.chat.completions.create(model="webgpt", messages=ask(), n=2)
            assert [c.message.content for c in completion.choices] == [ANSWER, ANSWER]
            stream = await client.chat.completions.create(
                model="webgpt", messages=ask(), stream=True
            )
            text = ""
            async for chunk in stream:
                if chunk.choices:
                    text += chunk.choices[0].delta.content or ""
            assert text == ANSWER


def test_best_of_reranks_with_the_reward_model(
    service_url, script: Script, reward_checkpoint: Path
) -> None:  # type: ignore[no-untyped-def]
    # Four episodes run at once, so which episode gets which answer is arbitrary.
    colours = ("green", "blue", "red", "purple")
    script.answers = [f"in story 7 the sky is {c} [1]" for c in colours] * 3
    with (
        service_url(reward_model=str(reward_checkpoint)) as base,
        openai.OpenAI(base_url=f"{base}/v1", api_key="x", max_retries=0) as client,
    ):
        best = client.chat.completions.create(
            model="webgpt", messages=ask(), extra_body={"best_of": 4}
        )
        assert len(best.choices) == 1
        assert best.choices[0].message.content == "in story 7 the sky is blue [1]"
        assert answer_prompts(script) == 4

        two = client.chat.completions.create(
            model="webgpt", messages=ask(), n=2, extra_body={"best_of": 4}
        )
        assert len(two.choices) == 2
        assert two.choices[0].message.content == "in story 7 the sky is blue [1]"

        chunks = list(
            client.chat.completions.create(
                model="webgpt", messages=ask(), stream=True, extra_body={"best_of": 4}
            )
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "in story 7 the sky is blue [1]"  # the chosen one only, once scored


def test_errors_come_in_openai_shape(service_url) -> None:  # type: ignore[no-untyped-def]
    with (
        service_url(api_keys="sk-webgpt") as base,
        openai.OpenAI(base_url=f"{base}/v1", api_key="sk-webgpt", max_retries=0) as client,
        openai.OpenAI(base_url=f"{base}/v1", api_key="wrong", max_retries=0) as stranger,
    ):
        with pytest.raises(openai.AuthenticationError) as caught:
            stranger.chat.completions.create(model="webgpt", messages=ask("q"))
        assert caught.value.type == "authentication_error"
        assert caught.value.code == "unauthorized"
        with pytest.raises(openai.BadRequestError, match="no user message") as invalid:
            client.chat.completions.create(
                model="webgpt", messages=[{"role": "system", "content": "x"}]
            )
        assert invalid.value.status_code == 400  # OpenAI's status; our own routes say 422
        assert invalid.value.type == "invalid_request_error"
        assert invalid.value.code == "invalid_request"
        with pytest.raises(openai.BadRequestError, match="greater than or equal to n"):
            client.chat.completions.create(
                model="webgpt", messages=ask(), n=3, extra_body={"best_of": 2}
            )
        with pytest.raises(openai.BadRequestError, match="messages"):
            client.chat.completions.create(model="webgpt", messages=[])
