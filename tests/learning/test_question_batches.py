"""scripts/question_batches.py: the pages handed to people who write training questions."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from webgpt.evals.questions import split_of

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "question_batches.py"
# the script imports webgpt: this checkout's, whichever one the interpreter has installed
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
PAGE = re.compile(
    r"### PAGE (\d+)-(\d+)\nurl: (\S+)\ntitle: .+\n(?:description: .+\n)?((?:\[\d+\] .+\n)+)"
)


def batches(store: Path, out: Path, *args: str) -> dict[str, str]:
    subprocess.run(
        [sys.executable, str(SCRIPT), str(out), "--store", str(store), *args],
        check=True,
        env=ENV,
    )
    return {path.name: path.read_text() for path in sorted(out.glob("batch_*.txt"))}


@pytest.mark.slow  # the full offline web
def test_batches_hold_training_pages_numbered_by_sentence_and_never_repeat_one(
    embedded_web_store: Path, tmp_path: Path
) -> None:
    made = batches(embedded_web_store, tmp_path / "a", "--batches", "2", "--pages-each", "1")
    assert list(made) == ["batch_0.txt", "batch_1.txt"]
    urls = []
    for name, text in made.items():
        pages = PAGE.findall(text)
        assert len(pages) == 1 and "".join(p[0] for p in pages) == name[6]
        for _, _, url, sentences in pages:
            assert split_of(url) == "train"  # never a dev or test page
            numbered = re.findall(r"\[(\d+)\] ", sentences)
            assert numbered == [str(n) for n in range(1, len(numbered) + 1)]
            assert len(numbered) >= 3  # an opening and at least two sentences after it
            urls.append(url)
    assert len(set(urls)) == len(urls)
    # batch k is always the same pages: a later drawing goes on from where one stopped
    again = batches(
        embedded_web_store, tmp_path / "b", "--batches", "1", "--first", "1", "--pages-each", "1"
    )
    assert again == {"batch_1.txt": made["batch_1.txt"]}


@pytest.mark.slow  # starts a process
def test_asking_for_more_pages_than_there_are_says_so(learning_store: Path, tmp_path: Path) -> None:
    run = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            str(tmp_path),
            "--store",
            str(learning_store),
            "--batches",
            "1",
        ],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert run.returncode == 2 and "pages to draw from" in run.stderr
    assert not list(tmp_path.glob("batch_*.txt"))


@pytest.mark.slow  # starts a process
def test_a_missing_or_broken_store_is_named(tmp_path: Path) -> None:
    broken = tmp_path / "broken.sqlite"
    broken.write_text("not a database")
    for store in (tmp_path / "absent.sqlite", broken):
        run = subprocess.run(
            [
                sys.executable,
                str(SCRIPT),
                str(tmp_path / "out"),
                "--store",
                str(store),
                "--batches",
                "1",
            ],
            capture_output=True,
            text=True,
            env=ENV,
        )
        assert run.returncode == 2 and str(store) in run.stderr, run.stderr
        assert not (tmp_path / "out").exists()


def test_urls_named_in_files_keep_their_own_parentheses(tmp_path: Path) -> None:
    """A page whose address holds parentheses is named by a file that writes it (the sealed
    set's check and --unused read this), and a Markdown link's closing one is not the
    address's."""
    spec = importlib.util.spec_from_file_location("question_batches", SCRIPT)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "notes.md").write_text(
        "See https://en.wikipedia.org/wiki/Mercury_(planet). And [a link](https://example.org/a).\n"
        '{"url": "https://en.wikipedia.org/wiki/Bass_(fish)"}\n'
    )
    (tmp_path / "skipped.md").write_text("https://example.org/skipped\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    assert script.named_urls(tmp_path, skip=(tmp_path / "skipped.md").resolve()) == {
        "https://en.wikipedia.org/wiki/Mercury_(planet)",
        "https://example.org/a",
        "https://en.wikipedia.org/wiki/Bass_(fish)",
    }
