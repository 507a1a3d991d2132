"""Checkpoint folders with a manifest, shared by policy and reward checkpoints.

A checkpoint is a folder of Hugging Face files plus `manifest.json`:
kind, version, base model, observation format version, sha256 of every file, metrics.
It is published by writing a temporary sibling folder and renaming it into place, so a
reader never sees a half-written checkpoint. The policy registry (agent.registry) and the
reward trainer both publish here; the observation format a build speaks is the caller's
(browser.observation.OBSERVATION_FORMAT_VERSION), as infra/ imports no other package.
"""

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from webgpt.infra.errors import CheckpointError, CorruptCheckpoint, IncompatibleCheckpoint

MANIFEST = "manifest.json"
Kind = Literal["policy", "reward"]


@dataclass(frozen=True)
class Manifest:
    kind: Kind
    version: str
    base_model: str
    observation_format_version: int
    files: dict[str, str]  # relative path -> sha256
    metrics: dict[str, Any] = field(default_factory=dict)
    created_at: float = field(default_factory=time.time)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def publish(
    staging: Path,
    target: Path,
    *,
    kind: Kind,
    version: str,
    base_model: str,
    observation_format_version: int,
    metrics: dict[str, Any] | None = None,
) -> Manifest:
    """Write the manifest into staging (a sibling of target) and rename it to target."""
    if staging.parent != target.parent:
        raise CheckpointError("staging must be a sibling of target so the rename is atomic")
    files = {
        p.relative_to(staging).as_posix(): sha256_of(p)
        for p in sorted(staging.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }
    manifest = Manifest(kind, version, base_model, observation_format_version, files, metrics or {})
    (staging / MANIFEST).write_text(manifest.to_json())
    fsync_tree(staging)
    if target.exists():
        raise CheckpointError(f"{target} already exists; versions are immutable")
    os.rename(staging, target)
    fsync_dir(target.parent)  # the rename itself survives a crash
    return manifest


def fsync_tree(folder: Path) -> None:
    """Files and the folders naming them on disk, so a rename publishes complete data."""
    for path in folder.rglob("*"):
        if path.is_file():
            with path.open("rb") as file:
                os.fsync(file.fileno())
        elif path.is_dir():
            fsync_dir(path)
    fsync_dir(folder)


def fsync_dir(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def load_manifest(folder: Path, verify: bool = False) -> Manifest:
    """Read a checkpoint's manifest; with verify, check every file's sha256."""
    path = folder / MANIFEST
    try:
        data = json.loads(path.read_text())
        manifest = Manifest(**data)
    except (OSError, ValueError, TypeError) as error:
        raise CheckpointError(f"{folder} has no readable {MANIFEST}: {error}") from error
    for name in manifest.files:
        if not _inside(folder, name):
            raise CorruptCheckpoint(f"{folder}: the manifest names {name!r}, outside the folder")
    if verify:
        for name, digest in manifest.files.items():
            file = folder / name
            if not file.is_file() or sha256_of(file) != digest:
                raise CorruptCheckpoint(f"{folder}: {name} does not match its manifest")
    return manifest


def record_metrics(folder: Path, metrics: dict[str, Any]) -> Manifest:
    """Add metrics to a checkpoint's manifest, written beside it and renamed over it: for
    a setting chosen after training on the checkpoint's own scale (a quote ranker's
    evidence margin). Its files, and so their digests, stay as they are."""
    manifest = load_manifest(folder)
    manifest = replace(manifest, metrics={**manifest.metrics, **metrics})
    descriptor, staging = tempfile.mkstemp(prefix=f".{MANIFEST}.", dir=folder)
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(manifest.to_json())
            file.flush()
            os.fsync(file.fileno())
        os.replace(staging, folder / MANIFEST)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise
    fsync_dir(folder)
    return manifest


def _inside(folder: Path, name: str) -> bool:
    """True for a relative path that stays in folder once links and ".." are resolved."""
    if not name or Path(name).is_absolute():
        return False
    root = folder.resolve()
    return (root / name).resolve().is_relative_to(root)


def load_usable_manifest(
    folder: Path, kind: Kind, observation_format_version: int, verify: bool = False
) -> Manifest:
    """The manifest of a checkpoint of this kind trained on the observation format this
    build speaks, or CheckpointError."""
    manifest = load_manifest(folder, verify=verify)
    if manifest.kind != kind:
        raise CheckpointError(f"{folder} is a {manifest.kind} checkpoint, not a {kind} model")
    if manifest.observation_format_version != observation_format_version:
        raise IncompatibleCheckpoint(
            f"{folder} was trained on observation format "
            f"{manifest.observation_format_version}; this build speaks {observation_format_version}"
        )
    return manifest


def point_alias(alias: Path, version: str) -> None:
    """Re-point alias (a symlink beside the versions, e.g. registry/policy/current) at the
    sibling folder `version`, atomically: a reader sees the old target or the new, never none.
    The link is relative, so a registry volume mounted elsewhere still resolves."""
    if not (alias.parent / version).is_dir():
        raise CheckpointError(f"no version {version!r} in {alias.parent}")
    staging = alias.with_name(f".{alias.name}.{os.getpid()}.tmp")
    staging.unlink(missing_ok=True)
    staging.symlink_to(version)
    os.replace(staging, alias)
    fsync_dir(alias.parent)


def alias_target(alias: Path) -> str | None:
    """The version an alias names, or None where there is no alias."""
    return os.readlink(alias) if alias.is_symlink() else None


def discard(staging: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)


@contextmanager
def staging_folder(out: Path, version: str) -> Iterator[Path]:
    """A fresh folder beside OUT/VERSION for a trainer to write a checkpoint into before
    `publish` renames it into place; removed when writing or publishing fails."""
    out.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=out))
    try:
        yield folder
    except BaseException:
        discard(folder)
        raise
