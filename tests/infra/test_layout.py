"""infra/ is a leaf, and WEBGPT_* variables are read one way (infra.settings)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT_PACKAGES = {"agent", "browser", "reward", "service", "webgpt_client", "benchmarks"}


def _python_files(*folders: str) -> list[Path]:
    return [path for folder in folders for path in sorted((ROOT / folder).rglob("*.py"))]


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_infra_imports_no_other_package_of_the_project() -> None:
    files = _python_files("infra")
    assert len(files) >= 6
    offenders = {
        path.name: sorted(_imported_packages(path) & PROJECT_PACKAGES)
        for path in files
        if _imported_packages(path) & PROJECT_PACKAGES
    }
    assert offenders == {}


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
    files = _python_files("agent", "browser", "infra", "reward", "service")
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
