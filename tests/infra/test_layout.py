"""The house's layout holds: one `webgpt` namespace, packages in layers, no import circle,
no library module importing a command-line module, and WEBGPT_* variables read one way
(infra.settings). docs/architecture.md draws the layers."""

import ast
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# What each package may import besides itself: lower layers only (docs/architecture.md).
# The service is on top; learning may use evaluation's judging; nothing imports learning
# or evals from below.
MAY_IMPORT = {
    "infra": set(),
    "browser": {"infra"},
    "reward": {"browser", "infra"},
    "agent": {"reward", "browser", "infra"},
    "evals": {"agent", "reward", "browser", "infra"},
    "learning": {"evals", "agent", "reward", "browser", "infra"},
    "service": {"learning", "evals", "agent", "reward", "browser", "infra"},
}


def _python_files(*folders: str) -> list[Path]:
    return [path for folder in folders for path in sorted((ROOT / folder).rglob("*.py"))]


def _modules() -> dict[str, Path]:
    """webgpt.<package>.<module> -> its file, for every module of the namespace."""
    modules = {}
    for path in _python_files(*MAY_IMPORT):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(["webgpt", *parts])] = path
    return modules


def _imports(path: Path, known: set[str]) -> set[str]:
    """The project's modules a file imports anywhere (top level, functions, TYPE_CHECKING):
    `from webgpt.a import b` is webgpt.a.b when b is a module, else webgpt.a."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in known else node.module)
    return {name for name in found if name in known}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(path, known) - {name} for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def _package(module: str) -> str:
    return module.split(".")[1]


def _is_cli(module: str) -> bool:
    return module.rsplit(".", 1)[-1] == "cli"


def test_the_graph_sees_every_package_and_the_imports_inside_functions() -> None:
    graph = _graph()
    assert {_package(module) for module in graph} == set(MAY_IMPORT)
    # imported inside a function (torch-free until RL trains)
    assert "webgpt.learning.rl.trainer" in graph["webgpt.learning.cli"]
    assert "webgpt.agent.trace" in graph["webgpt.agent.episode"]


def test_no_module_imports_itself_back_through_others() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_check_sees_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_library_module_imports_a_command_line_module() -> None:
    offenders = {
        module: sorted(target for target in targets if _is_cli(target))
        for module, targets in _graph().items()
        if not _is_cli(module) and any(_is_cli(target) for target in targets)
    }
    assert offenders == {}


def test_packages_import_only_lower_layers() -> None:
    offenders = {
        module: sorted(
            target
            for target in targets
            if _package(target) != _package(module)
            and _package(target) not in MAY_IMPORT[_package(module)]
        )
        for module, targets in _graph().items()
    }
    assert {module: bad for module, bad in offenders.items() if bad} == {}


@pytest.mark.slow  # starts a process
def test_the_namespace_is_webgpt_and_no_top_level_package_is_installed(tmp_path: Path) -> None:
    """Outside the checkout, the project's environment imports webgpt.agent, never agent."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    found = subprocess.run(
        [sys.executable, "-c", "import webgpt.agent.episode, webgpt.service.app"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert found.returncode == 0, found.stderr
    for package in ("agent", "service", "browser", "reward", "infra", "learning", "evals"):
        missing = subprocess.run(
            [sys.executable, "-c", f"import {package}"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )
        assert "ModuleNotFoundError" in missing.stderr, package


def _top_level_imports(path: Path) -> list[str]:
    """The project's packages a file imports by their bare folder name (`import agent`,
    `from service.app import ...`), which from the checkout would load a second copy."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        else:
            continue
        found += [name for name in names if name.split(".")[0] in MAY_IMPORT]
    return found


def test_every_file_imports_the_project_as_webgpt() -> None:
    folders = [*MAY_IMPORT, "tests", "scripts", "benchmarks", "examples", "client"]
    files = [path for path in _python_files(*folders) if "tests/data" not in str(path)]
    bare = {str(path.relative_to(ROOT)): _top_level_imports(path) for path in files}
    assert {path: names for path, names in bare.items() if names} == {}


def test_the_bare_import_check_sees_one(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import os\nfrom service.settings import X\nimport agent.episode\n")
    assert _top_level_imports(sample) == ["service.settings", "agent.episode"]


def test_module_commands_name_the_webgpt_package() -> None:
    """`python -m service.cli` works only inside the checkout; the docs never say it."""
    texts = [*ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md"), *_python_files(*MAY_IMPORT)]
    bare = re.compile(r"-m ({})\.".format("|".join(MAY_IMPORT)))
    offenders = [str(path.relative_to(ROOT)) for path in texts if bare.search(path.read_text())]
    assert offenders == []


@pytest.mark.slow  # imports torch and TRL: about 12 s
def test_the_documented_accelerate_command_runs_outside_the_checkout(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    accelerate = Path(sys.executable).parent / "accelerate"
    options = ["--num_processes", "1", "--num_machines", "1", "--mixed_precision", "no"]
    launched = subprocess.run(
        [str(accelerate), "launch", *options, "-m", "webgpt.service.cli", "train", "bc", "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert launched.returncode == 0, launched.stderr[-2000:]
    assert "usage: webgpt train bc" in launched.stdout


def test_webgpt_links_every_package_folder() -> None:
    links = {path.name: path for path in (ROOT / "webgpt").iterdir() if path.is_symlink()}
    assert set(links) == set(MAY_IMPORT)
    assert all(link.resolve() == ROOT / name for name, link in links.items())


def _reads_environment_by_hand(path: Path) -> list[int]:
    """Lines that look a WEBGPT_ name up by hand: X.get("WEBGPT_..."), os.getenv(...),
    X["WEBGPT_..."] (os.environ or an alias of it)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            looked_up = node.func.attr in {"get", "getenv", "pop", "setdefault"} and node.args
            key = node.args[0] if looked_up else None
        elif isinstance(node, ast.Subscript):
            key = node.slice
        else:
            continue
        if isinstance(key, ast.Constant) and str(key.value).startswith("WEBGPT_"):
            lines.append(node.lineno)
    return sorted(lines)


def test_no_package_reads_webgpt_variables_by_hand() -> None:
    files = _python_files(*MAY_IMPORT)
    by_hand = {str(p.relative_to(ROOT)): _reads_environment_by_hand(p) for p in files}
    assert {path: lines for path, lines in by_hand.items() if lines} == {}


def test_the_check_sees_a_read_by_hand(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os\n"
        "a = os.environ.get('WEBGPT_ENGINE')\n"
        "b = os.environ['WEBGPT_HOME']\n"
        "c = os.getenv('WEBGPT_ALLOW', '')\n"
        "env = os.environ\n"
        "d = env.get('WEBGPT_ENGINE', 'offline')\n"
        "e = os.environ.get('PATH')\n"
    )
    assert _reads_environment_by_hand(sample) == [2, 3, 4, 6]


@pytest.mark.slow
def test_the_wheel_installs_one_namespace_with_its_data(tmp_path: Path) -> None:
    """What the service image installs: webgpt/… with the page, the migrations and the
    default's adapter, and nothing else at the top. Built from a copy: setuptools builds
    in the source tree, and a stale build/ there would leak into the wheel."""
    source = tmp_path / "source"
    skip = shutil.ignore_patterns(".*", "build", "*.egg-info", "__pycache__", "tests", "docs")
    shutil.copytree(ROOT, source, symlinks=True, ignore=skip)
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    subprocess.run(
        [*pip, "--wheel-dir", str(tmp_path), str(source)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("webgpt-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"webgpt"}
    for expected in (
        "webgpt/agent/episode.py",
        "webgpt/learning/rl/trainer.py",
        "webgpt/evals/evaluate.py",
        "webgpt/service/static/index.html",
        "webgpt/service/migrations/env.py",
        "webgpt/agent/weights/webgpt-bc-135m-v20/manifest.json",  # the default policy
        "webgpt/agent/weights/webgpt-bc-135m-v14/manifest.json",  # the quote ranker's backbone
        "webgpt/agent/weights/webgpt-bc-135m-v5/manifest.json",  # the reward model's backbone
        "webgpt/agent/weights/rm-synthetic-v5/manifest.json",
        "webgpt/agent/weights/rm-synthetic-v5/score.safetensors",
        "webgpt/agent/weights/quotes-v2/score.safetensors",  # the quote ranker
    ):
        assert expected in names
