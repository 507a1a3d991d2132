"""The policy registry: versions, and the `current` alias that a running service follows.

    registry/policy/<version>/   a checkpoint: full Hugging Face weights, or a LoRA
                                 adapter on a base (adapter_config.json), with manifest.json
    registry/policy/current      symlink to the version the service serves
    registry/policy/previous     symlink to the version `rollback` returns to

Versions are immutable once published (atomic rename, infra.checkpoints.publish). Moving
an alias is one atomic rename of a symlink, so a service polling `current` sees the old
version or the new, never a missing one. `promote` verifies the version's files before
moving the alias; the service checks them again, and runs canaries, before it serves it.
"""

import json
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from webgpt.agent.errors import ConfigurationError
from webgpt.browser.observation import OBSERVATION_FORMAT_VERSION
from webgpt.infra.checkpoints import (
    MANIFEST,
    Manifest,
    alias_target,
    discard,
    load_manifest,
    load_usable_manifest,
    point_alias,
    publish,
)
from webgpt.infra.errors import IncompatibleCheckpoint

CURRENT = "current"
PREVIOUS = "previous"
ADAPTER_CONFIG = "adapter_config.json"
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def load_policy_manifest(folder: Path, verify: bool = False) -> Manifest:
    """The manifest of a policy checkpoint this build can serve, or CheckpointError."""
    return load_usable_manifest(folder, "policy", OBSERVATION_FORMAT_VERSION, verify=verify)


def is_adapter(folder: Path) -> bool:
    """A LoRA adapter (served on its base by vLLM's runtime LoRA loading), not full weights."""
    return (folder / ADAPTER_CONFIG).is_file()


def adapter_rank(folder: Path) -> int:
    """The LoRA rank of an adapter folder (PEFT's adapter_config.json, "r")."""
    try:
        rank = json.loads((folder / ADAPTER_CONFIG).read_text())["r"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise IncompatibleCheckpoint(f"{folder}: no LoRA rank in {ADAPTER_CONFIG}") from error
    if not isinstance(rank, int) or rank < 1:
        raise IncompatibleCheckpoint(f"{folder}: LoRA rank {rank!r} in {ADAPTER_CONFIG}")
    return rank


def check_version_name(version: str) -> None:
    # The version becomes a folder name and vLLM's served model name: keep it plain.
    if not _VERSION.fullmatch(version) or version in (CURRENT, PREVIOUS):
        raise ConfigurationError(
            f"version {version!r} must be 1-64 letters, digits, '.', '_' or '-' (not "
            f"{CURRENT!r} or {PREVIOUS!r})"
        )


@dataclass(frozen=True)
class Aliases:
    current: str | None
    previous: str | None


class PolicyRegistry:
    """The policy versions under one folder (`$WEBGPT_HOME/registry/policy` by default)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def current(self) -> Path:
        return self.root / CURRENT

    def aliases(self) -> Aliases:
        return Aliases(alias_target(self.root / CURRENT), alias_target(self.root / PREVIOUS))

    def versions(self) -> list[Manifest]:
        """Every published version, oldest first (folders without a manifest are skipped)."""
        found = []
        for folder in self.root.iterdir() if self.root.is_dir() else ():
            if folder.is_dir() and not folder.is_symlink() and (folder / MANIFEST).is_file():
                found.append(load_manifest(folder))
        return sorted(found, key=lambda m: m.created_at)

    def publish(self, source: Path, version: str, base_model: str | None = None) -> Manifest:
        """Copy a checkpoint folder into the registry as an immutable version.

        A source with a manifest (what `webgpt train bc` writes) must match it, and its base
        model, observation format and metrics carry over; without one, base_model is needed.
        """
        check_version_name(version)
        if not source.is_dir():
            raise ConfigurationError(f"{source} is not a folder")
        if not (is_adapter(source) or (source / "config.json").is_file()):
            raise ConfigurationError(
                f"{source} is neither a LoRA adapter ({ADAPTER_CONFIG}) nor a Hugging Face "
                "model (config.json)"
            )
        if (self.root / version).exists():
            raise ConfigurationError(
                f"version {version} is already published; versions are immutable"
            )
        metrics: dict[str, object] = {}
        format_version = OBSERVATION_FORMAT_VERSION
        if (source / MANIFEST).is_file():
            source_manifest = load_manifest(source, verify=True)
            base_model = base_model or source_manifest.base_model
            format_version = source_manifest.observation_format_version
            metrics = {**source_manifest.metrics, "published_from": source_manifest.version}
        if base_model is None:
            raise ConfigurationError(
                f"{source} has no {MANIFEST}: say its base model (--base-model)"
            )
        self.root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{version}.", dir=self.root))
        try:
            shutil.copytree(
                source, staging, dirs_exist_ok=True, ignore=shutil.ignore_patterns(MANIFEST)
            )
            return publish(
                staging,
                self.root / version,
                kind="policy",
                version=version,
                base_model=base_model,
                observation_format_version=format_version,
                metrics=metrics,
            )
        except BaseException:
            discard(staging)
            raise

    def promote(self, version: str) -> Aliases:
        """Point `current` at version (checked first) and `previous` at what it named."""
        check_version_name(version)
        load_policy_manifest(self.root / version, verify=True)
        before = self.aliases()
        if before.current == version:
            return before
        point_alias(self.root / CURRENT, version)
        if before.current is not None and (self.root / before.current).is_dir():
            point_alias(self.root / PREVIOUS, before.current)
        return self.aliases()

    def rollback(self) -> Aliases:
        """Point `current` back at `previous` (and `previous` at what `current` named)."""
        before = self.aliases()
        if before.previous is None:
            raise ConfigurationError(f"{self.root} has no previous version to roll back to")
        return self.promote(before.previous)


def describe(registry: PolicyRegistry) -> str:
    """The versions as lines of text, the current one marked."""
    aliases = registry.aliases()
    lines = []
    for manifest in registry.versions():
        mark = {aliases.current: "current", aliases.previous: "previous"}.get(manifest.version, "")
        kind = "adapter" if is_adapter(registry.root / manifest.version) else "full"
        figures = {k: manifest.metrics[k] for k in ("train_examples",) if k in manifest.metrics}
        lines.append(
            f"{manifest.version:<28} {kind:<8} base={manifest.base_model} {mark} "
            f"{json.dumps(figures) if figures else ''}".rstrip()
        )
    return "\n".join(lines) if lines else f"no versions in {registry.root}"
