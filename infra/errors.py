"""Errors raised by the infra package.

Hierarchy::

    InfraError
    ├── CheckpointError          a checkpoint folder is missing, incomplete or does not match
    │   ├── CorruptCheckpoint    a file does not match its manifest's sha256
    │   └── IncompatibleCheckpoint  trained on another observation format than this build's
    ├── OptionsError             a trainer's options do not parse (a flag, a value, --config)
    ├── PackageError             a registry package (embedded default data) is unavailable
    └── VLLMServerError          a local vLLM server exited or never answered during start-up
"""


class InfraError(Exception):
    """Root of every error the infra package raises on purpose."""


class CheckpointError(InfraError):
    """A checkpoint folder is missing, incomplete or does not match its manifest."""


class CorruptCheckpoint(CheckpointError):
    """A file of the checkpoint is missing or does not match its manifest's sha256."""


class IncompatibleCheckpoint(CheckpointError):
    """The checkpoint was trained on another observation format than this build speaks."""


class OptionsError(InfraError):
    """A trainer's options do not parse: an unknown flag or YAML key, a bad value, a
    --config file that cannot be read."""


class PackageError(InfraError):
    """A registry package (the embedded defaults' data and model) is unavailable."""


class VLLMServerError(InfraError):
    """A local vLLM server exited or did not answer during start-up."""
