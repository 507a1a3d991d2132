"""The sealed test set's ledger (docs/eval/test-ledger.md): one line per evaluation.

The sealed set (data/questions/sealed-test.jsonl) is evaluated once per released default
and never used to choose anything; `webgpt eval --sealed` appends each run's line here,
so every time a figure was read off it is on record.
"""

import datetime
import subprocess
from pathlib import Path

from webgpt.evals.evaluate import PolicyReport

ROOT = Path(__file__).resolve().parents[1]
LEDGER = ROOT / "docs" / "eval" / "test-ledger.md"
# (column, figure, format) of a ledger line after its date, commit and policy
COLUMNS = [
    ("n", "questions", "{}"),
    ("factoids correct", "correct", "{:.1%}"),
    ("declined: answerable", "declined_answerable", "{:.1%}"),
    ("declined: unanswerable", "declined_unanswerable", "{:.1%}"),
    ("long-form 2+ cited", "longform_two_citations", "{:.1%}"),
    ("key points", "key_point_coverage", "{:.1%}"),
    ("support", "support", "{:.1%}"),
    ("faithful", "faithful", "{:.1%}"),
    ("degenerate", "degenerate", "{}"),
    ("unedited", "unedited", "{:.1%}"),
    ("s/question p50", "wall_s_median", "{:.1f}"),
]
HEADER = "| date | commit | policy | " + " | ".join(c for c, _, _ in COLUMNS) + " |"


def commit_of(root: Path = ROOT) -> str:
    """The checkout's short commit, "+changes" when its tracked files differ from it."""
    head = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    dirty = subprocess.run(
        ["git", "-C", str(root), "diff", "--quiet", "HEAD"], capture_output=True, check=False
    ).returncode
    return (head or "unknown") + ("+changes" if dirty else "")


def ledger_line(report: PolicyReport, commit: str, day: datetime.date) -> str:
    figures = report.figures()
    cells = [
        fmt.format(figures[key]) if figures[key] is not None else "-" for _, key, fmt in COLUMNS
    ]
    return f"| {day.isoformat()} | {commit} | {report.policy} | " + " | ".join(cells) + " |"


def record(reports: list[PolicyReport], ledger: Path = LEDGER) -> list[str]:
    """Appends one line per report to the ledger (its table header first, if it has none)."""
    day = datetime.datetime.now(datetime.UTC).date()
    commit = commit_of()
    lines = [ledger_line(report, commit, day) for report in reports]
    text = ledger.read_text(encoding="utf-8") if ledger.exists() else ""
    if HEADER not in text:
        separator = "|" + "---|" * (3 + len(COLUMNS))
        text = text.rstrip("\n") + ("\n\n" if text else "") + f"{HEADER}\n{separator}\n"
    ledger.write_text(text + "".join(f"{line}\n" for line in lines), encoding="utf-8")
    return lines
