"""The docs' runnable code blocks, run as written against a live local service.

A `python` or `bash` fence on the line after `<!-- runnable -->` (hidden when rendered) in
README.md or docs/ is a runnable block. Each runs from the repository root in the shell a
fresh clone has: the virtualenv's python for python blocks (as `.venv/bin/python` would),
bash for bash blocks, no virtualenv on PATH, no API key, a fresh HOME, and the settings the
docs name: `WEBGPT_BASE_URL` for the service, the `WEBGPT_*` service settings for a block
that starts its own server (`webgpt mcp`).
"""

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.agent.fake_policy import Script

ROOT = Path(__file__).resolve().parent.parent
MARKER = "<!-- runnable -->"
LANGUAGES = ("python", "bash")
# The blocks marked today (README's curl and SDK, docs/service.md's sessions, conversation
# and openai, docs/mcp.md's stdio and HTTP clients): fewer means a marker was lost.
MIN_BLOCKS = 7
MUST_HAVE_BLOCKS = ("README.md", "docs/service.md", "docs/mcp.md")

_FENCE = re.compile(r"(?P<indent>\s*)```(?P<language>[\w+-]*)\s*$")
_MARKER_LIKE = re.compile(r"\s*<!--\s*runnable", re.IGNORECASE)  # prose may name it


@dataclass(frozen=True)
class Block:
    path: str  # relative to the repository root
    line: int  # the opening fence's, 1-based
    language: str
    code: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


def runnable_blocks(path: str, text: str) -> tuple[list[Block], list[str]]:
    """The marked blocks of one Markdown text, and what is wrong with any marker."""
    lines = text.splitlines()
    blocks: list[Block] = []
    problems: list[str] = []
    for index, line in enumerate(lines):
        if not _MARKER_LIKE.match(line):
            continue
        where = f"{path}:{index + 1}"
        if line.strip() != MARKER:
            problems.append(f"{where}: a marker is the line {MARKER!r} alone, not {line!r}")
            continue
        fence = _FENCE.fullmatch(lines[index + 1]) if index + 1 < len(lines) else None
        if fence is None or fence["language"] not in LANGUAGES:
            problems.append(f"{where}: {MARKER} must be followed by a ```python or ```bash fence")
            continue
        indent = fence["indent"]
        end = next(
            (i for i in range(index + 2, len(lines)) if lines[i].rstrip() == f"{indent}```"), None
        )
        if end is None:
            problems.append(f"{where}: the marked block is never closed")
            continue
        body = lines[index + 2 : end]
        if any(line.strip() and not line.startswith(indent) for line in body):
            problems.append(f"{where}: a line of the marked block is outside its indentation")
            continue
        code = "\n".join(line[len(indent) :] for line in body).strip("\n")
        if not code.strip():
            problems.append(f"{where}: the marked block is empty")
            continue
        if fence["language"] == "python":
            try:
                compile(code, where, "exec")
            except SyntaxError as error:
                problems.append(f"{where}: the marked block is not Python: {error}")
                continue
        blocks.append(Block(path, index + 2, fence["language"], code + "\n"))
    return blocks, problems


def _docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _all_blocks() -> tuple[list[Block], list[str]]:
    blocks: list[Block] = []
    problems: list[str] = []
    for doc in _docs():
        found, wrong = runnable_blocks(str(doc.relative_to(ROOT)), doc.read_text())
        blocks += found
        problems += wrong
    return blocks, problems


BLOCKS, PROBLEMS = _all_blocks()


def test_every_marker_marks_a_runnable_block() -> None:
    assert PROBLEMS == []


def test_the_docs_keep_their_runnable_blocks() -> None:
    assert len(BLOCKS) >= MIN_BLOCKS, [str(block) for block in BLOCKS]
    assert {block.path for block in BLOCKS} >= set(MUST_HAVE_BLOCKS)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("<!-- runnable -->\n```json\n{}\n```\n", "must be followed by a ```python or ```bash"),
        ("<!-- runnable -->\n\n```bash\ntrue\n```\n", "must be followed by a ```python or ```bash"),
        ("<!-- runnable -->\n```bash\ntrue\n", "never closed"),
        ("<!-- runnable -->\n```python\n\n```\n", "empty"),
        ("<!-- runnable -->\n```python\nprint(1\n```\n", "not Python"),
        ("<!--runnable: bash-->\n```bash\ntrue\n```\n", "a marker is the line"),
        ("- item\n  <!-- runnable -->\n  ```bash\ntrue\n  ```\n", "outside its indentation"),
    ],
)
def test_a_malformed_marked_block_is_reported(text: str, problem: str) -> None:
    blocks, problems = runnable_blocks("doc.md", text)
    assert blocks == [] and len(problems) == 1 and problem in problems[0]


def test_an_indented_marked_block_is_found_as_written() -> None:
    text = "- item:\n\n  <!-- runnable -->\n  ```bash\n  echo a\n    echo b\n  ```\n"
    assert runnable_blocks("doc.md", text) == (
        [Block("doc.md", 4, "bash", "echo a\n  echo b\n")],
        [],
    )


def _fresh_clone_environment(home: Path) -> dict[str, str]:
    """A login shell's variables: this virtualenv's bin off PATH, nothing of the test's own."""
    venv_bin = Path(sys.prefix) / "bin"
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p) != venv_bin]
    home.mkdir()
    return {"PATH": os.pathsep.join(path), "HOME": str(home), "LANG": "C.UTF-8"}


def _json_object(text: str) -> dict[str, object]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _service_requests(base_url: str) -> float:
    """Requests the service counted (webgpt_requests_total), its probes left out."""
    text = httpx.get(f"{base_url}/metrics").text
    counts = re.findall(r'^webgpt_requests_total\{route="([^"]*)"[^}]*\} (\S+)$', text, re.M)
    return sum(float(n) for route, n in counts if route not in ("/metrics", "/healthz", "/readyz"))


@pytest.fixture
def service(
    service_url: Callable[..., AbstractContextManager[str]],
    policy_url: str,
    offline_store: Path,
    tmp_path: Path,
) -> Iterator[tuple[str, dict[str, str]]]:
    """The live service, and the variables a reader of the docs has set to use it."""
    with service_url(feedback_db=str(tmp_path / "fb.db")) as base_url:
        settings = {
            "WEBGPT_BASE_URL": base_url,
            # What `webgpt mcp` on stdio reads: the same policy server and offline web.
            "WEBGPT_POLICY_URL": policy_url,
            "WEBGPT_POLICY_MODEL": "scripted",
            "WEBGPT_OFFLINE_STORE": str(offline_store),
            "WEBGPT_QUOTE_RANKER": "none",  # the scripted policy's service runs without it
        }
        yield base_url, settings


@pytest.mark.slow  # starts a process
@pytest.mark.parametrize("block", BLOCKS, ids=str)
def test_a_runnable_block_runs_as_written(
    block: Block, service: tuple[str, dict[str, str]], script: Script, tmp_path: Path
) -> None:
    base_url, settings = service
    env = {**_fresh_clone_environment(tmp_path / "home"), **settings}
    source = tmp_path / ("snippet.py" if block.language == "python" else "snippet.sh")
    source.write_text(block.code)
    command = (
        [sys.executable, "-W", "error", str(source)]
        if block.language == "python"
        else ["bash", "-e", "-o", "pipefail", str(source)]
    )
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    said = f"{block} ({block.language})\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.returncode == 0, said
    assert done.stdout.strip(), f"printed nothing: {said}"
    assert "error" not in _json_object(done.stdout), said  # curl prints an error's body
    # It reached this service (or the policy server, for a block that serves itself): a
    # block that ignores WEBGPT_BASE_URL would talk to whatever listens on 8080, or fail.
    assert _service_requests(base_url) > 0 or script.requests, f"reached nothing: {said}"
