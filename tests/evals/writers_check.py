"""scripts/check_questions.py, the check a question set's writers ran, as the set's tests
run it: in a process of its own, on the offline web they are given."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def writers_check(
    path: Path, store: Path, *, sealed: bool = False
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_questions.py"), str(path),
         *(["--sealed"] if sealed else []), "--store", str(store)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )  # fmt: skip


def assert_every_line_passes(path: Path, store: Path, *, sealed: bool = False) -> None:
    run = writers_check(path, store, sealed=sealed)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip().endswith("every line passes")
