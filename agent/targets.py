"""A policy named on the command line (`default`, `base`, a checkpoint folder, URL,MODEL)
and a client of it for one run: a checkpoint is served by a local vLLM while the run lasts."""

import contextlib
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Literal

from webgpt.agent.chat_policy import ChatPolicy
from webgpt.agent.errors import ConfigurationError
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.infra.vllm_server import print_progress

POLICY_HELP = (
    "`default` (the trained default), `base` (the untrained base), a checkpoint folder "
    "(full weights, or a LoRA adapter merged into its base first; served by a local vLLM "
    "for the run), or URL,MODEL of a running OpenAI-compatible "
    "server (default: `default`)"
)


PolicyFormat = Literal["completion", "chat"]
POLICY_FORMAT_HELP = (
    "completion: the trained default's format (`/completions`, commands as text under guided "
    "decoding); chat: a chat model's (`/chat/completions`, the commands as tools, unguided; "
    'docs/agent.md, "Bring your own model")'
)


def policy_client(
    url: str, model: str, api_key: str | None, guided: bool, policy_format: PolicyFormat
) -> OpenAIPolicy:
    """A client of the policy at url in its format; a chat policy is never guided."""
    if policy_format == "chat":
        return ChatPolicy(url, model, api_key=api_key, guided=False)
    return OpenAIPolicy(url, model, api_key=api_key, guided=guided)


@dataclasses.dataclass(frozen=True)
class PolicyTarget:
    label: str
    url: str | None = None  # a running server ...
    model: str | None = None
    folder: Path | None = None  # ... or a checkpoint served by a local vLLM for the run


def parse_policy_target(spec: str) -> PolicyTarget:
    label, sep, target = spec.partition("=")
    if not sep:
        label, target = "", spec
    if target in ("default", "base"):
        from webgpt.agent.model import prepare_base_model, prepare_default_model

        folder = (
            prepare_default_model(print_progress)
            if target == "default"
            else prepare_base_model(print_progress)
        )
        return PolicyTarget(label or target, folder=folder)
    if target.startswith(("http://", "https://")):
        url, comma, model = target.partition(",")
        if not comma or not model:
            raise ConfigurationError(f"--policy {spec!r}: give URL,MODEL")
        return PolicyTarget(label or model, url=url, model=model)
    folder = Path(target).expanduser()
    if not folder.is_dir():
        raise ConfigurationError(f"--policy {spec!r}: no checkpoint folder at {folder}")
    return PolicyTarget(label or folder.name, folder=folder)


@contextlib.asynccontextmanager
async def serving(
    target: PolicyTarget,
    api_key: str | None,
    guided: bool,
    policy_format: PolicyFormat = "completion",
) -> AsyncIterator[OpenAIPolicy]:
    """A client of target's policy; a checkpoint folder is served by a local vLLM (started
    here, stopped on exit)."""
    from webgpt.agent.model import merged_adapter
    from webgpt.agent.registry import is_adapter
    from webgpt.infra.vllm_server import DEFAULT_PORT, ServerConfig, start, stop

    running = None
    url, model = target.url, target.model
    if target.folder is not None:
        folder = target.folder
        if is_adapter(folder):  # served merged: vLLM's CPU LoRA ops cost ~4x a prefill
            folder = merged_adapter(folder, print_progress)
        print_progress(f"starting vLLM for {folder} (first start compiles: minutes)")
        running = start(
            ServerConfig(
                model_dir=folder,
                served_name=target.label,
                port=DEFAULT_PORT + 10,
                tool_calls=policy_format == "chat",
            ),
            print_progress,
            record=False,
        )
        url, model = running.url, running.model
    assert url is not None and model is not None
    policy = policy_client(url, model, api_key, guided, policy_format)
    try:
        yield policy
    finally:
        await policy.aclose()
        if running is not None:
            stop(running)
