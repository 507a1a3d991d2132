"""Opening a reward checkpoint, torch-free: the scorer that runs it (its manifest is
reward.manifest, which both scorers read without importing this module).

`open_scorer` is the one place that chooses between scoring in this process
(reward.scorer, torch) and on a vLLM pooling server (reward.remote, no torch).
"""

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from webgpt.reward.remote import RemoteRewardScorer
    from webgpt.reward.scorer import RewardScorer


def open_scorer(
    folder: Path, url: str | None = None, api_key: str | None = None
) -> "RewardScorer | RemoteRewardScorer":
    """The checkpoint in folder, scored on the vLLM server at url, or in this process."""
    if url is not None:
        from webgpt.reward.remote import RemoteRewardScorer

        return RemoteRewardScorer(url, folder, api_key=api_key)
    from webgpt.reward.scorer import RewardScorer  # torch: only when the model runs in-process

    return RewardScorer(folder)
