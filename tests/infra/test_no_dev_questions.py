"""No rule, comment or test names a dev or sealed test question: a rule written for the
questions it is measured on measures only itself, so code and tests make up questions of
their own."""

import json
import re
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# Shorter questions ("who is he") are ordinary phrases that code may write by chance.
MIN_CHARS = 16
# A line break in a comment or docstring, with the comment marker that opens the next line:
# a question wrapped over two lines is still named.
_LINE_BREAK = re.compile(r"\s*\n\s*(?:#\s*)?")
_QUOTED_QUESTION = re.compile(r'"([^"$]+\?)"')


def _key(question: str) -> str:
    """A question as a file would name it: any case, any spacing, with or without its "?"."""
    return " ".join(question.lower().split()).removesuffix("?").rstrip()


def _questions(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def held_out_questions() -> dict[str, str]:
    """Each question evaluation holds out -> the file it is in: the dev rows of
    data/questions, every question of docs/eval's dev files, and the sealed test set."""
    held: dict[str, str] = {}
    for path in sorted((ROOT / "data" / "questions").glob("*.jsonl")):
        sealed = path.name == "sealed-test.jsonl"
        for row in _questions(path):
            if sealed or row.get("split") == "dev":
                held.setdefault(_key(row["question"]), str(path.relative_to(ROOT)))
    for path in sorted((ROOT / "docs" / "eval").glob("*dev*.jsonl")):
        for row in _questions(path):
            held.setdefault(_key(row["question"]), str(path.relative_to(ROOT)))
    return {question: where for question, where in held.items() if len(question) >= MIN_CHARS}


def demo_questions() -> set[str]:
    """`make demo`'s questions, as scripts/demo.sh asks them. They may be named: the demo is
    the product's documented contract, and its test (tests/agent/test_vllm.py) asserts what
    the demo prints for each."""
    text = (ROOT / "scripts" / "demo.sh").read_text(encoding="utf-8")
    return {_key(question) for question in _QUOTED_QUESTION.findall(text)}


def python_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "*.py"],
        capture_output=True,
        check=True,
    )
    return [ROOT / name for name in listed.stdout.decode().split("\0") if name]


def test_the_demo_s_questions_are_read_from_it() -> None:
    assert len(demo_questions()) == 3  # its default question and the two more it answers


def test_no_python_file_names_a_held_out_question() -> None:
    held = held_out_questions()
    assert len(held) > 500  # the question files were read
    for question in demo_questions():
        held.pop(question, None)
    named = []
    for path in python_files():
        text = _LINE_BREAK.sub(" ", path.read_text(encoding="utf-8").lower())
        named += [
            f"{path.relative_to(ROOT)}: {question!r} ({where})"
            for question, where in held.items()
            if question in text
        ]
    assert not named, "files name dev or sealed questions:\n" + "\n".join(named)
