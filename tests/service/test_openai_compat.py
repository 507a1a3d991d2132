"""Existing OpenAI SDK code calls us unchanged: the official `openai` package against
/v1/chat/completions on the real app."""

import openai
import pytest


def test_chat_completion_with_the_official_sdk(service_url) -> None:  # type: ignore[no-untyped-def]
    with (
        service_url(api_keys="sk-webgpt") as base,
        openai.OpenAI(base_url=f"{base}/v1", api_key="sk-webgpt", max_retries=0) as client,
        openai.OpenAI(base_url=f"{base}/v1", api_key="wrong", max_retries=0) as stranger,
    ):
        completion = client.chat.completions.create(
            model="webgpt",
            messages=[
                {"role": "system", "content": "You answer with citations."},
                {"role": "user", "content": "crow corvus"},
            ],
        )
        assert completion.object == "chat.completion"
        message = completion.choices[0].message
        assert message.role == "assistant" and message.content == "Crows are corvids [1]."
        references = completion.model_extra["references"]  # type: ignore[index]
        assert references[0]["url"] == "https://en.wikipedia.org/wiki/Crow"
        assert completion.usage is not None and completion.usage.total_tokens > 0

        stream = client.chat.completions.create(
            model="webgpt", messages=[{"role": "user", "content": "crow corvus"}], stream=True
        )
        chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "Crows are corvids [1]."
        assert chunks[-1].choices[0].finish_reason == "stop"
        assert chunks[-1].model_extra["references"][0]["title"] == "Crow"  # type: ignore[index]

        with pytest.raises(openai.AuthenticationError):
            stranger.chat.completions.create(
                model="webgpt", messages=[{"role": "user", "content": "q"}]
            )
        with pytest.raises(openai.UnprocessableEntityError, match="no user message"):
            client.chat.completions.create(
                model="webgpt", messages=[{"role": "system", "content": "x"}]
            )
