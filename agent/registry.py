"""The policy registry: versions, and the `current` alias that a running service follows.

    registry/policy/<version>/   a checkpoint: full Hugging Face weights, or a LoRA
                                 adapter on a base (adapter_config.json), with manifest.json
    registry/policy/current      symlink to the version the service serves
    registry/policy/previous     symlink to the version `rollback` returns to
    registry/policy/promotions.jsonl   what the promotion gate decided, one line each

Versions are immutable once published (atomic rename, infra.checkpoints.publish). Moving
an alias is one atomic rename of a symlink, so a service polling `current` sees the old
version or the new, never a missing one. `promote` verifies the version's files before
moving the alias; the service checks them again, and runs canaries, before it serves it.
`webgpt model promote` first runs the quality gate (agent.promotion), which records its
figures and outcome, a forced promotion included, in promotions.jsonl.
"""

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

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
PROMOTIONS = "promotions.jsonl"
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


Figures = dict[str, float | int | str | None]  # evals.evaluate.PolicyReport.figures()
GateOutcome = Literal["promoted", "refused", "forced", "ungated"]


class PromotionRecord(BaseModel):
    """One decision of the promotion gate (agent.promotion): a line of promotions.jsonl.

    Who promoted is not knowable here; what, when, against which version and on which
    figures is. `forced`: promoted with --force, over the refusal at `forced_over` when
    there was one (its figures and reasons are kept), else not evaluated at all.
    `ungated`: there was no serving version to compare with.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    at: str  # ISO 8601, UTC
    version: str
    serving: str | None  # the version it was compared with
    outcome: GateOutcome
    margin: float  # points of a rate (5.0: 5 percentage points)
    figures: dict[str, Figures] = {}  # version -> its figures on the pinned questions
    reasons: list[str] = []  # how the candidate was worse ([] when it was not)
    setup: dict[str, Any] = {}  # the pinned questions (file, split, sha256, ...) and settings
    forced_over: str | None = None

    def note(self) -> str:
        """The record in a few words, for `webgpt model list`."""
        words = [f"gate: {self.outcome} {self.at}"]
        mine, theirs = self.figures.get(self.version), self.figures.get(self.serving or "")
        if mine is not None and theirs is not None:
            words.append(
                f"correct {_percent(mine.get('correct'))} vs {self.serving} "
                f"{_percent(theirs.get('correct'))}, margin {self.margin:g}"
            )
        elif self.outcome == "forced":
            words.append("not evaluated")
        return ", ".join(words)


def _percent(rate: object) -> str:
    return f"{rate:.1%}" if isinstance(rate, float | int) else "-"


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

    def verify(self, version: str) -> Manifest:
        """The manifest of a version this build can serve, every file checked against it."""
        check_version_name(version)
        return load_policy_manifest(self.root / version, verify=True)

    def promote(self, version: str) -> Aliases:
        """Point `current` at version (checked first) and `previous` at what it named."""
        self.verify(version)
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

    def record(self, record: PromotionRecord) -> None:
        """Append a gate decision to promotions.jsonl (one line, on disk before returning)."""
        self.root.mkdir(parents=True, exist_ok=True)
        line = record.model_dump_json().encode() + b"\n"
        with (self.root / PROMOTIONS).open("a+b") as file:
            if file.seek(0, os.SEEK_END) > 0:
                file.seek(-1, os.SEEK_END)
                if file.read(1) != b"\n":  # a line cut short by a crash: leave it alone
                    line = b"\n" + line
            file.write(line)  # appended: "a" writes at the end, wherever it read
            file.flush()
            os.fsync(file.fileno())

    def promotions(self) -> list[PromotionRecord]:
        """The gate's decisions, oldest first. A line that does not parse (one cut short by
        a crash while it was written) is skipped: history must not block a promotion."""
        try:
            lines = (self.root / PROMOTIONS).read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        records = []
        for line in lines:
            try:
                records.append(PromotionRecord.model_validate_json(line))
            except ValidationError:
                continue
        return records


def describe(registry: PolicyRegistry) -> str:
    """The versions as lines of text, the current one marked, with the gate's last word."""
    aliases = registry.aliases()
    gate = {record.version: record for record in registry.promotions()}  # the latest each
    lines = []
    for manifest in registry.versions():
        mark = {aliases.current: "current", aliases.previous: "previous"}.get(manifest.version, "")
        kind = "adapter" if is_adapter(registry.root / manifest.version) else "full"
        figures = {k: manifest.metrics[k] for k in ("train_examples",) if k in manifest.metrics}
        record = gate.get(manifest.version)
        words = [f"{manifest.version:<28} {kind:<8} base={manifest.base_model}", mark]
        words += [json.dumps(figures) if figures else "", record.note() if record else ""]
        lines.append(" ".join(word for word in words if word))
    return "\n".join(lines) if lines else f"no versions in {registry.root}"
