"""Publishing an RL run into the policy registry: its parent, the merged weights, the log."""

import json
from pathlib import Path
from typing import Any

from webgpt.agent.errors import ConfigurationError
from webgpt.agent.registry import is_adapter, load_policy_manifest
from webgpt.browser.observation import OBSERVATION_FORMAT_VERSION
from webgpt.infra.checkpoints import publish, staging_folder
from webgpt.infra.errors import CheckpointError
from webgpt.learning.rl.config import RLConfig


def parent_of(folder: Path) -> tuple[str, str]:
    """(parent version, base model) of the starting policy: its manifest's when it is a
    registry checkpoint, else the folder's name."""
    if is_adapter(folder):
        raise ConfigurationError(
            f"{folder} is a LoRA adapter: start from full weights (`webgpt model prepare` "
            "publishes the default merged)"
        )
    try:
        manifest = load_policy_manifest(folder, verify=False)
    except CheckpointError:
        return folder.name, folder.name
    return manifest.version, manifest.base_model


def publish_policy(
    config: RLConfig,
    model: Any,
    tokenizer: Any,
    base_model: str,
    metrics: dict[str, Any],
    history: list[dict[str, float]],
) -> Path:
    import torch

    checkpoint = config.out / config.version
    with staging_folder(config.out, config.version) as staging:
        # full weights (LoRA merged into the starting policy): the parent is itself a
        # merged checkpoint, so an adapter of it would not load on the registry's base
        merged = model.merge_and_unload()
        merged.to(torch.bfloat16).save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / "train_config.json").write_text(json.dumps(metrics["config"], indent=2))
        (staging / "train_log.jsonl").write_text(
            "".join(json.dumps(entry) + "\n" for entry in history)
        )
        publish(
            staging,
            checkpoint,
            kind="policy",
            version=config.version,
            base_model=base_model,
            observation_format_version=OBSERVATION_FORMAT_VERSION,
            metrics=metrics,
        )
    return checkpoint
