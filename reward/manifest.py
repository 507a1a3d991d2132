"""A reward checkpoint's manifest, checked against this build (torch-free, a leaf of reward/)."""

from pathlib import Path

from webgpt.browser.observation import OBSERVATION_FORMAT_VERSION
from webgpt.infra.checkpoints import Manifest, load_usable_manifest

# The metric of a quote ranker's manifest that holds the margin declines by evidence use
# with it (agent.quote_ranking), chosen on dev after training and written by
# scripts/evidence_declines.py --record (infra.checkpoints.record_metrics).
EVIDENCE_MARGIN = "evidence_margin"


def load_reward_manifest(folder: Path, verify: bool = False) -> Manifest:
    """The manifest of a reward checkpoint this build can score with, or CheckpointError."""
    return load_usable_manifest(folder, "reward", OBSERVATION_FORMAT_VERSION, verify=verify)
