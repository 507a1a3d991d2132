"""The environment is the lock: scripts/install.sh installs requirements/<platform>.txt and
nothing else, so every version the suite runs on is one a commit chose (`make lock`)."""

import platform
import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "requirements"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", re.MULTILINE)


def locked(path: Path) -> dict[str, Version]:
    """name -> version of every pin in a lock file."""
    return {canonicalize_name(name): Version(v) for name, v in _PIN.findall(path.read_text())}


def installed_flavour() -> str:
    try:
        metadata.version("vllm")
    except metadata.PackageNotFoundError:
        return "cpu"
    return "cuda"


def declared() -> list[Requirement]:
    """What the project and its SDK ask for: dependencies, the model and dev extras, and the
    flavour's vLLM."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    client = tomllib.loads((ROOT / "client" / "pyproject.toml").read_text())["project"]
    lines = [
        *project["dependencies"],
        *project["optional-dependencies"]["model"],
        *project["optional-dependencies"]["dev"],
        *client["dependencies"],
    ]
    return [Requirement(line) for line in lines]


def vllm_pin(flavour: str) -> Requirement:
    lines = (REQUIREMENTS / f"{flavour}.in").read_text().splitlines()
    [line] = [line for line in lines if line and not line.startswith("#")]
    return Requirement(line)


@pytest.mark.skipif(
    (platform.system(), platform.machine()) != ("Linux", "x86_64"),
    reason="the locks are for Linux x86_64; elsewhere install.sh installs from the ranges",
)
def test_every_locked_package_is_installed_at_its_locked_version() -> None:
    lock = REQUIREMENTS / f"linux-x86_64-{installed_flavour()}.txt"
    wrong = {}
    for name, version in locked(lock).items():
        try:
            found = Version(metadata.version(name))
        except metadata.PackageNotFoundError:
            wrong[name] = f"locked {version}, not installed"
            continue
        if found != version:
            wrong[name] = f"locked {version}, installed {found}"
    assert wrong == {}, f"the environment is not {lock.name}: run `make install`"


@pytest.mark.parametrize("flavour", ["cpu", "cuda"])
def test_each_lock_satisfies_what_the_project_declares(flavour: str) -> None:
    """A lock older than a change to pyproject.toml or requirements/*.in fails here: run
    `make lock`."""
    pins = locked(REQUIREMENTS / f"linux-x86_64-{flavour}.txt")
    unmet = {}
    for requirement in [*declared(), vllm_pin(flavour)]:
        name = canonicalize_name(requirement.name)
        if name not in pins or not requirement.specifier.contains(pins[name], prereleases=True):
            unmet[name] = f"{requirement.specifier or 'any'}, locked {pins.get(name)}"
    assert unmet == {}


def test_every_pin_carries_a_hash() -> None:
    for flavour in ("cpu", "cuda"):
        text = (REQUIREMENTS / f"linux-x86_64-{flavour}.txt").read_text()
        entries = re.split(r"\n(?=[A-Za-z0-9])", text.strip())
        pinned = [entry for entry in entries if _PIN.match(entry)]
        assert pinned and all("--hash=sha256:" in entry for entry in pinned), flavour


def test_the_pin_reader_reads_a_lock_entry(tmp_path: Path) -> None:
    lock = tmp_path / "lock.txt"
    lock.write_text(
        "torch==2.13.0+cpu \\\n    --hash=sha256:00\n    # via webgpt\n"
        "Pillow==12.0.0 \\\n    --hash=sha256:11\n"
    )
    assert locked(lock) == {"torch": Version("2.13.0+cpu"), "pillow": Version("12.0.0")}
