"""Building the service from settings and running it (`webgpt serve`)."""

import ipaddress
import logging

import uvicorn

from agent.errors import ConfigurationError
from agent.openai_policy import OpenAIPolicy
from browser.offline import webgpt_home
from browser.web import Web, WebOptions
from service.app import create_app
from service.metrics import Metrics
from service.scoring import build_scorer
from service.serving import AnswerService
from service.settings import ServiceSettings
from service.store import FeedbackStore


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def build_service(settings: ServiceSettings) -> AnswerService:
    if not settings.api_key_list() and not is_loopback(settings.host):
        raise ConfigurationError(
            f"no API keys are configured, so the service only listens on loopback; set "
            f"WEBGPT_API_KEYS to serve on {settings.host}"
        )
    scorer = build_scorer(settings)
    if (settings.policy_url is None) != (settings.policy_model is None):
        raise ConfigurationError("set the policy URL and model together")
    if settings.policy_url is not None and settings.policy_model is not None:
        url, model = settings.policy_url, settings.policy_model
    else:
        from agent.cli import local_policy_url

        url, model = local_policy_url()
    key = settings.policy_key.get_secret_value() if settings.policy_key else None
    web = Web(WebOptions.from_env(engine=settings.engine))
    store = FeedbackStore(settings.feedback_db or webgpt_home() / "feedback.sqlite")
    policy = OpenAIPolicy(url, model, api_key=key)
    return AnswerService(settings, web, policy, scorer, Metrics(), store)


def serve(settings: ServiceSettings) -> None:
    service = build_service(settings)
    # One JSON object per line per request (service.app builds them), on stderr.
    requests_log = logging.getLogger("webgpt.service")
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    requests_log.addHandler(handler)
    requests_log.setLevel(logging.INFO)
    requests_log.propagate = False
    uvicorn.run(
        create_app(service),
        host=settings.host,
        port=settings.port,
        timeout_graceful_shutdown=30,  # in-flight answers get time to finish on SIGTERM
        log_level="info",
    )
