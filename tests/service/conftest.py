from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agent.openai_policy import OpenAIPolicy
from browser.web import Web, WebOptions
from service.app import create_app
from service.metrics import Metrics
from service.serving import AnswerService
from service.settings import ServiceSettings
from tests.agent.fake_policy import Script
from tests.servers import serve

CROW_QUOTE = "Crows are birds of the genus Corvus."

RunningService = Callable[..., "contextmanager[str]"]


@pytest.fixture
def script() -> Script:
    return Script(oracle_quote=CROW_QUOTE, answers=["Crows are corvids [1]."] * 20)


@pytest.fixture
def service_url(offline_store: Path, policy_url: str) -> Callable[..., contextmanager]:  # type: ignore[type-arg]
    """Start the real app on loopback with settings overrides; yields its base URL."""

    @contextmanager
    def start(**overrides: object) -> Iterator[str]:
        settings = ServiceSettings(policy_url=policy_url, policy_model="scripted", **overrides)  # type: ignore[arg-type]
        web = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
        policy = OpenAIPolicy(policy_url, "scripted", backoff_s=0.01, max_retries=1)
        service = AnswerService(settings, web, policy, None, Metrics())
        with serve(create_app(service)) as base:
            yield base

    return start
