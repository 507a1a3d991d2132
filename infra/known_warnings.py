"""Warnings the locked dependencies are known to give, silenced by name and nowhere else.

The suite turns every warning into an error (pyproject.toml), so a dependency that starts
warning after `make lock` fails it: the new warning is read, then either fixed or named
here. A blanket `simplefilter("ignore")` would hide it.
"""

import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

# (category, the start of the message): each given on importing TRL beside this vLLM.
ON_TRAINER_IMPORT: tuple[tuple[type[Warning], str], ...] = (
    # TRL checks the installed vLLM against the range it was tested with; TRL's vLLM
    # generation modes are not used (rollouts run through the project's own policy).
    (UserWarning, "TRL currently supports vLLM versions"),
    # torch deprecates TorchScript; modules that TRL and vLLM import still define it.
    (DeprecationWarning, "`torch.jit.script_method` is deprecated"),
)


@contextmanager
def trainer_import_warnings_silenced() -> Iterator[None]:
    """Import TRL's trainers inside this: the warnings of ON_TRAINER_IMPORT are not shown."""
    with warnings.catch_warnings():
        for category, message in ON_TRAINER_IMPORT:
            # a filter's message is a regex matched at the start of the warning's message
            warnings.filterwarnings("ignore", message=re.escape(message), category=category)
        yield
