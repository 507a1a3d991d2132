"""Building the service from settings and running it (`webgpt serve`)."""

import ipaddress
import logging
import os
from dataclasses import replace

import uvicorn

from webgpt.agent.errors import ConfigurationError
from webgpt.agent.model import default_policy_server
from webgpt.agent.quote_ranking import QuoteRanker
from webgpt.agent.scoring import Scorer
from webgpt.agent.targets import policy_client
from webgpt.browser.web import Web, WebOptions
from webgpt.infra.checkpoints import load_manifest
from webgpt.infra.vllm_server import lora_server_config, print_progress, start_lora_server
from webgpt.service.app import create_app
from webgpt.service.metrics import Metrics
from webgpt.service.policies import (
    LoRAServer,
    PolicyVersions,
    VLLMLauncher,
    check_gpu_shares,
    launch_cpu_binds,
)
from webgpt.service.scoring import build_decline_judge, build_quote_ranker, build_scorer
from webgpt.service.serving import AnswerService
from webgpt.service.settings import ServiceSettings
from webgpt.service.store import FeedbackStore


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
    if (settings.policy_url is None) != (settings.policy_model is None):
        raise ConfigurationError("set the policy URL and model together")
    if settings.policy_format == "chat" and (
        settings.policy_url is None or settings.policy_checkpoint is not None
    ):
        raise ConfigurationError(
            "WEBGPT_POLICY_FORMAT=chat is for a chat model you bring: set WEBGPT_POLICY_URL and "
            "WEBGPT_POLICY_MODEL (the trained versions of WEBGPT_POLICY_CHECKPOINT are "
            "completion-format)"
        )
    scorer = build_scorer(settings)
    judge, ranker = build_decline_judge(settings), build_quote_ranker(settings)
    key = settings.policy_key.get_secret_value() if settings.policy_key else None
    web = Web(WebOptions.from_env(engine=settings.engine))
    store = FeedbackStore(settings.database(), connect=False)  # it may be down: spooled
    if settings.policy_checkpoint is not None:
        versions = policy_versions(settings, web, key, decline_judge=judge, quote_ranker=ranker)
        return AnswerService(settings, web, None, scorer, Metrics(), store, versions, judge, ranker)
    if settings.policy_url is not None and settings.policy_model is not None:
        url, model = settings.policy_url, settings.policy_model
    else:
        running = default_policy_server(print_progress)
        url, model = running.url, running.model
    policy = policy_client(url, model, key, guided=True, policy_format=settings.policy_format)
    return AnswerService(
        settings, web, policy, scorer, Metrics(), store, decline_judge=judge, quote_ranker=ranker
    )


def policy_versions(
    settings: ServiceSettings,
    web: Web,
    key: str | None,
    *,
    decline_judge: Scorer | None = None,
    quote_ranker: QuoteRanker | None = None,
) -> PolicyVersions:
    """Where the versions of settings.policy_checkpoint are loaded: the vLLM server at
    policy_url (serving their base as policy_model), or a local one the service starts. A
    version's canaries are answered greedily as the service answers, with its decline
    judgment and quote ranker."""
    alias = settings.policy_checkpoint
    assert alias is not None
    if not alias.exists():
        raise ConfigurationError(
            f"{alias} names no version: `webgpt model publish` one and `webgpt model promote` it"
        )
    canary = replace(
        settings.episode_config(temperature=0.0),
        decline_judge=decline_judge,
        quote_ranker=quote_ranker,
    )
    if settings.policy_url is not None and settings.policy_model is not None:
        server = LoRAServer(settings.policy_url, settings.policy_model, api_key=key)
        return PolicyVersions(server, web, settings.policy_canaries, canary_episode=canary)
    share, launch_share = settings.policy_gpu_memory_share, settings.policy_launch_gpu_memory_share
    gpus = settings.policy_launch_gpus
    check_gpu_shares(share, launch_share, gpus, os.environ.get("CUDA_VISIBLE_DEVICES"))
    base = load_manifest(alias.resolve()).base_model
    rank = settings.policy_max_lora_rank
    config = lora_server_config(alias.resolve().parent / base, base, rank, share)
    running = start_lora_server(config, print_progress)
    launcher = None  # a launch share of 0: full-weight versions are refused
    if launch_share > 0:
        binds = (
            (settings.policy_launch_cpus,) if settings.policy_launch_cpus else launch_cpu_binds()
        )
        launcher = VLLMLauncher(cpu_binds=binds, gpu_memory_share=launch_share, gpus=gpus)
    server = LoRAServer(running.url, base, max_rank=rank)
    return PolicyVersions(
        server, web, settings.policy_canaries, running, launcher, canary_episode=canary
    )


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
