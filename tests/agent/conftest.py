from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.openai_policy import OpenAIPolicy
from browser.web import Web, WebOptions


@pytest.fixture
async def web(offline_store: Path) -> AsyncIterator[Web]:
    opened = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
    yield opened
    await opened.aclose()


@pytest.fixture
async def policy(policy_url: str) -> AsyncIterator[OpenAIPolicy]:
    client = OpenAIPolicy(policy_url, "scripted", backoff_s=0.01, timeout_s=2.0)
    yield client
    await client.aclose()
