"""The work folder of a training run (`webgpt train bc|rl`): checkpoints, resuming, the
config as JSON.

A run's work folder is `--output-dir`, by default OUT/VERSION.work beside the version it
will publish (the registry skips folders without a manifest). The Trainer writes its
checkpoints there (`checkpoint-STEP`: weights, optimizer, schedule, RNG states, the
trainer's state), so a run stopped on the way (killed, out of time, a lost machine)
continues with `--resume` from the last one, as if it had not stopped: the Trainer skips
the batches already seen. A new run refuses a folder that holds checkpoints rather than
mixing two runs in it. Once the version is published its checkpoints are deleted; logs
(`runs/`, TensorBoard's) stay.
"""

import enum
import json
import shutil
from dataclasses import field
from pathlib import Path
from typing import Any

from webgpt.agent.errors import ConfigurationError

CHECKPOINT_PREFIX = "checkpoint-"  # transformers' PREFIX_CHECKPOINT_DIR


def work_folder_field() -> Any:
    """The `output_dir` field of a trainer config (TrainingArguments'), with our default."""
    return field(
        default=None,
        metadata={
            "help": "the run's work folder: checkpoints and logs (default OUT/VERSION.work; "
            "its checkpoints are deleted once the version is published)"
        },
    )


def default_work_folder(out: Path, version: str) -> str:
    return str(out / f"{version}.work")


def checkpoints(work: Path) -> list[Path]:
    """The Trainer's checkpoints in a work folder, oldest step first."""
    if not work.is_dir():
        return []
    steps = {
        int(p.name.removeprefix(CHECKPOINT_PREFIX)): p
        for p in work.iterdir()
        if p.is_dir()
        and p.name.startswith(CHECKPOINT_PREFIX)
        and p.name.removeprefix(CHECKPOINT_PREFIX).isdigit()
    }
    return [steps[step] for step in sorted(steps)]


def checkpoint_to_resume(work: Path, resume: bool, explicit: str | None) -> Path | None:
    """The checkpoint a run continues from: `explicit` (`--resume-from-checkpoint`), else
    with `resume` the last one in the work folder; None for a new run, which must not
    find checkpoints of another there."""
    if explicit:
        path = Path(explicit).expanduser()
        if not (path / "trainer_state.json").is_file():
            raise ConfigurationError(f"--resume-from-checkpoint {path}: not a Trainer checkpoint")
        return path
    found = checkpoints(work)
    if resume:
        if not found:
            raise ConfigurationError(f"--resume: {work} holds no checkpoint to resume from")
        return found[-1]
    if found:
        raise ConfigurationError(
            f"{work} holds checkpoints of an earlier run (last: {found[-1].name}): --resume "
            "continues it; delete the folder to start over"
        )
    return None


def discard_checkpoints(work: Path) -> None:
    """After publishing: the checkpoints go, logs stay; an empty folder goes too."""
    for checkpoint in checkpoints(work):
        shutil.rmtree(checkpoint, ignore_errors=True)
    if work.is_dir() and not any(work.iterdir()):
        work.rmdir()


def jsonable(values: dict[str, Any]) -> dict[str, Any]:
    """A config's fields as JSON values: what `to_dict` of our TrainingArguments subclasses
    gives (the Trainer writes it to TensorBoard and the checkpoints; runs record it)."""
    return {key: _jsonable(value) for key, value in values.items()}


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    try:
        json.dumps(value)
    except TypeError:
        return str(value)
    return value
