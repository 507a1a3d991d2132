"""A reward checkpoint's manifest, checked against this build (torch-free, a leaf of reward/)."""

import math
from pathlib import Path

from webgpt.browser.observation import OBSERVATION_FORMAT_VERSION
from webgpt.infra.checkpoints import Manifest, load_usable_manifest, record_metrics
from webgpt.infra.errors import CheckpointError

# The metric of a quote ranker's manifest that holds the margin declines by evidence use
# with it (agent.quote_ranking), chosen on dev after training and written by
# scripts/evidence_declines.py --record (infra.checkpoints.record_metrics).
EVIDENCE_MARGIN = "evidence_margin"


def is_margin(value: object) -> bool:
    """A finite number (not a bool): what a margin may be."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def load_reward_manifest(folder: Path, verify: bool = False) -> Manifest:
    """The manifest of a reward checkpoint this build can score with, or CheckpointError."""
    return load_usable_manifest(folder, "reward", OBSERVATION_FORMAT_VERSION, verify=verify)


def record_evidence_margin(folders: list[Path], margin: float) -> None:
    """Write margin into each quote ranker's manifest, or into none: all are checked first.
    A margin is part of its version once recorded; a folder holding another one is refused
    (publish a new version to change it), so a prepared copy never lags its source."""
    if not is_margin(margin):
        raise ValueError(f"an evidence margin must be a finite number, not {margin!r}")
    for folder in folders:
        recorded = load_reward_manifest(folder).metrics.get(EVIDENCE_MARGIN)
        if recorded is not None and recorded != margin:
            raise CheckpointError(
                f"{folder} records the evidence margin {recorded!r} already: publish a new "
                "version to change it"
            )
    for folder in folders:
        record_metrics(folder, {EVIDENCE_MARGIN: margin})
