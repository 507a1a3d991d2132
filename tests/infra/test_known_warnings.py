"""Dependencies' known warnings are silenced by name: others still reach the suite."""

import subprocess
import sys
import warnings

import pytest

from webgpt.infra.known_warnings import trainer_import_warnings_silenced


@pytest.mark.slow  # starts a process
def test_trl_imports_cleanly_under_warnings_as_errors() -> None:
    """A fresh interpreter: the import runs (and warns) for real, not from the module cache."""
    imported = subprocess.run(
        [
            sys.executable,
            "-W",
            "error",
            "-c",
            "from webgpt.infra.known_warnings import trainer_import_warnings_silenced\n"
            "with trainer_import_warnings_silenced():\n"
            "    from trl.trainer.grpo_trainer import GRPOTrainer\n",
        ],
        capture_output=True,
        text=True,
    )
    assert imported.returncode == 0, imported.stderr[-2000:]


def test_a_warning_it_does_not_name_still_raises() -> None:
    """The suite makes warnings errors (pyproject.toml); inside, only the named ones pass."""
    with trainer_import_warnings_silenced():
        warnings.warn(
            "TRL currently supports vLLM versions from 0 to 1.", UserWarning, stacklevel=1
        )
        with pytest.raises(UserWarning):
            warnings.warn("TRL supports every vLLM now", UserWarning, stacklevel=1)
        with pytest.raises(DeprecationWarning):
            warnings.warn("`torch.jit.trace` is deprecated", DeprecationWarning, stacklevel=1)
