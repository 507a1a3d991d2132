"""Errors raised by the reward package.

Hierarchy::

    RewardError
    ├── CheckpointError   a checkpoint folder is missing, incomplete or does not match
    │   ├── CorruptCheckpoint      a file does not match its manifest's sha256
    │   └── IncompatibleCheckpoint trained on another observation format than this build's
    ├── RewardServerError a remote reward server (reward.remote) failed or is unreachable
    └── DataError         a comparisons file cannot be used at all (bad rows are skipped
                          and reported, not raised)
"""


class RewardError(Exception):
    """Root of every error the reward package raises on purpose."""


class CheckpointError(RewardError):
    """A checkpoint folder is missing, incomplete or does not match its manifest."""


class CorruptCheckpoint(CheckpointError):
    """A file of the checkpoint is missing or does not match its manifest's sha256."""


class IncompatibleCheckpoint(CheckpointError):
    """The checkpoint was trained on another observation format than this build speaks."""


class DataError(RewardError):
    """A comparisons file cannot be used (missing, or no usable row at all)."""


class RewardServerError(RewardError):
    """A remote reward server (vLLM pooling) cannot be reached or answered an error."""
