"""scripts/base_run_data.py: a base run's data is drawn to the documented shares."""

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.scripts import SCRIPTS, load_script

SCRIPT = SCRIPTS / "base_run_data.py"
base_run_data = load_script("base_run_data")

WIKI = "https://en.wikipedia.org/wiki/Malawi"
DOCS = "https://docs.python.org/3.11/library/json.html"
GIT = "https://git-scm.com/docs/git-merge"  # a train page: no sealed question names it
POSTGRES = "https://www.postgresql.org/docs/15/runtime-config-resource.html"


def episode(
    number: int, kind: str, url: str = WIKI, finds: int = 0, split: str = "train"
) -> dict[str, object]:
    steps = [{"observation": "♦Question", "command": "Search x"}]
    steps += [{"observation": "page", "command": "Find in page: dumps("}] * finds
    steps += [{"observation": "page", "command": "End: Answer"}]
    return {
        "id": f"d{number}",
        "question": f"question {number}",
        "split": split,
        "gold_url": url,
        "meta": {"kind": kind},
        "steps": steps,
    }


def test_groups_tell_docs_answered_after_repeated_finds_from_the_rest() -> None:
    assert base_run_data.group_of(episode(0, "factoid")) == "factoid"
    assert base_run_data.group_of(episode(1, "factoid", DOCS, finds=1)) == "docs"
    assert base_run_data.group_of(episode(2, "factoid", DOCS, finds=2)) == "docs-refind"
    assert base_run_data.group_of(episode(3, "longform")) == "longform"
    assert base_run_data.group_of(episode(4, "unanswerable")) == "unanswerable"


def test_a_factoid_on_another_manuals_page_is_the_manual_group_however_many_finds() -> None:
    assert base_run_data.group_of(episode(5, "factoid", GIT, finds=1)) == "manual"
    assert base_run_data.group_of(episode(6, "factoid", POSTGRES, finds=3)) == "manual"
    assert base_run_data.group_of(episode(7, "longform", GIT)) == "longform"
    assert base_run_data.parse_counts(["manual=40"]) == {"manual": 40}


def run(tmp_path: Path, *draws: list[str]) -> tuple[list[dict[str, object]], str]:
    out = tmp_path / "mix.jsonl"
    args = [arg for draw in draws for arg in ("--draw", *draw)]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(out), *args], capture_output=True, text=True
    )
    if done.returncode != 0:
        return [], f"rc={done.returncode} {done.stderr}"
    return [json.loads(line) for line in out.read_text().splitlines()], done.stderr


@pytest.mark.slow  # starts a process
def test_the_script_draws_each_group_to_its_count_from_the_train_split_once(
    tmp_path: Path,
) -> None:
    generated = [episode(i, "factoid") for i in range(10)]  # d0 to d9
    generated += [episode(10 + i, "longform") for i in range(4)]
    generated += [episode(20 + i, "unanswerable") for i in range(3)]
    generated += [episode(30, "longform", split="dev")]  # never trained on
    docs = [episode(40 + i, "factoid", DOCS, finds=i % 3) for i in range(6)]
    docs.append(generated[0])  # the same episode in two files
    (tmp_path / "gen.jsonl").write_text("".join(json.dumps(r) + "\n" for r in generated))
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in docs))

    rows, log = run(
        tmp_path,
        [str(tmp_path / "gen.jsonl"), "longform=all", "unanswerable=all", "factoid=all"],
        [str(tmp_path / "docs.jsonl"), "docs-refind=all", "factoid=1"],
    )
    groups = Counter(base_run_data.group_of(row) for row in rows)
    assert groups == {"longform": 4, "unanswerable": 3, "factoid": 10, "docs-refind": 2}, log
    assert "d30" not in {row["id"] for row in rows}
    assert len({row["id"] for row in rows}) == len(rows)  # d0 drawn twice, written once
    assert f"{len(rows)} episodes" in log and len(rows) == 19
    drawn = [run(tmp_path, [str(tmp_path / "gen.jsonl"), "factoid=3"])[0] for _ in range(2)]
    assert len(drawn[0]) == 3 and drawn[0] == drawn[1]  # seed 0: the same draw every time


@pytest.mark.slow  # starts a process
def test_bad_input_is_a_clear_error_and_leaves_an_earlier_out_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "gen.jsonl").write_text(json.dumps(episode(0, "factoid")) + "\n")
    (tmp_path / "mix.jsonl").write_text("an earlier mix\n")
    rows, log = run(tmp_path, [str(tmp_path / "gen.jsonl"), "factoids=3"])
    assert log.startswith("rc=1") and "is not GROUP=N or GROUP=all" in log
    assert (tmp_path / "mix.jsonl").read_text() == "an earlier mix\n" and rows == []
    _, log = run(tmp_path, [str(tmp_path / "absent.jsonl"), "factoid=3"])
    assert log.startswith("rc=1") and "no such file" in log
    (tmp_path / "broken.jsonl").write_text(json.dumps(episode(0, "factoid")) + "\n{\n")
    _, log = run(tmp_path, [str(tmp_path / "broken.jsonl"), "factoid=all"])
    assert log.startswith("rc=1") and "broken.jsonl:2: not a JSON demonstration" in log
    no_tokenizer = [
        "--tokenizer",
        str(tmp_path),
        "--draw",
        str(tmp_path / "gen.jsonl"),
        "factoid=all",
    ]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "mix.jsonl"), *no_tokenizer],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "is not a model folder with a tokenizer" in done.stderr
    assert (tmp_path / "mix.jsonl").read_text() == "an earlier mix\n"


@pytest.mark.slow  # starts a process
def test_tokens_per_group_are_counted_as_bc_trains_on_them(tmp_path: Path) -> None:
    from tests.reward.tiny import build_tiny_backbone
    from webgpt.learning.bc import examples_of
    from webgpt.learning.demonstrations import Demonstration

    rows = [episode(0, "factoid"), episode(1, "longform"), episode(2, "longform")]
    rows[2]["steps"][1]["observation"] = "word " * 2000  # an example over 1,536: left out
    for row in rows:
        row["source"] = "scripted"
    (tmp_path / "gen.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    tokenizer = build_tiny_backbone(tmp_path / "base")
    out = tmp_path / "mix.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            str(out),
            "--tokenizer",
            str(tokenizer),
            "--draw",
            str(tmp_path / "gen.jsonl"),
            "factoid=all",
            "longform=all",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr

    def words(row: dict[str, object]) -> list[int]:  # the tiny tokenizer: a token a word
        examples = examples_of(Demonstration.model_validate(row))
        return [len(e.prompt.split()) + len(e.completion.split()) for e in examples]

    factoid, longform = sum(words(rows[0])), sum(words(rows[1]))
    longform += sum(n for n in words(rows[2]) if n <= 1536)
    assert max(words(rows[2])) > 1536
    assert f"factoid\t{factoid} tokens" in done.stderr
    assert f"longform\t{longform} tokens" in done.stderr
    assert f"{factoid + longform} tokens in all" in done.stderr
