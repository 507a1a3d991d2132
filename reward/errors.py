"""Errors raised by the reward package.

Hierarchy::

    RewardError
    ├── RewardServerError a remote reward server (reward.remote) failed or is unreachable
    └── DataError         a comparisons file cannot be used at all (bad rows are skipped
                          and reported, not raised)

Checkpoint folders that are missing, damaged or of another format raise
infra.errors.CheckpointError (shared with the policy registry).
"""


class RewardError(Exception):
    """Root of every error the reward package raises on purpose."""


class DataError(RewardError):
    """A comparisons file cannot be used (missing, or no usable row at all)."""


class RewardServerError(RewardError):
    """A remote reward server (vLLM pooling) cannot be reached or answered an error."""
