"""What a change to the answering is worth on recorded dev answers: each rewrite of the
policy's draft on against off, or one full run against another, with sign tests.

Every rewrite (agent.episode.REWRITES) acts in the answer phase only and only where its
condition holds, so an answer it did not change is the same with it left out: its off arm
(`webgpt eval --no-rewrite PART`) need only be run on the questions whose outcome names it
in `shaped_by`, and the other answers are the full run's (docs/agent.md, "Hand rules").

    python scripts/rewrite_worth.py touched FULL.json --questions DEV.jsonl --out DIR
        # DIR/PART.jsonl: the questions of DEV.jsonl whose answer PART changed in FULL
    python scripts/rewrite_worth.py worth FULL.json NAME=RERUN.json [NAME=RERUN.json ...]
        # the full run against each rerun's answering (a part left out, or a variant run
        # on the questions it can change): FULL with RERUN's outcomes in their place
    python scripts/rewrite_worth.py compare BEFORE.json AFTER.json
        # two full runs of the same questions

Choose on dev; the sealed test is never read here.
"""

import argparse
import json
import math
import statistics
from pathlib import Path
from typing import Any

from webgpt.agent.episode import REWRITES
from webgpt.agent.errors import DataError
from webgpt.evals.evaluate import is_long_form, recorded_outcomes

Outcome = dict[str, Any]
# The figures that are shares of a whole, printed as percentages.
SHARES = frozenset({"key points", "support"})


def figures(outcomes: list[Outcome]) -> dict[str, Any]:
    """What an answer can move: factoids right, long-form answers of two sentences citing
    two quotes, key points, declines of each kind, degenerate answers; and what is
    reported beside them."""
    factoids = [o for o in outcomes if o["kind"] == "factoid"]
    longform = [o for o in outcomes if o["kind"] == "longform"]
    answerable = [o for o in outcomes if o["kind"] != "unanswerable"]
    unanswerable = [o for o in outcomes if o["kind"] == "unanswerable"]
    answered = [o for o in outcomes if o.get("answer")]
    points = [o["key_points"] for o in longform if o.get("key_points") is not None]
    # older runs name the sentences checked cited_sentences (and left out any after the
    # last citation)
    checked = sum(o.get("checked_sentences", o.get("cited_sentences", 0)) for o in answered)
    supported = sum(o.get("supported_sentences", 0) for o in answered)
    faithful = sum(o["faithful"] is True for o in outcomes)
    return {
        "factoids": (sum(o["correct"] for o in factoids), len(factoids)),
        "long-form": (sum(_long_enough(o) for o in longform), len(longform)),
        "key points": statistics.fmean(points) if points else None,
        "answerable declined": (sum(o["declined"] for o in answerable), len(answerable)),
        "unanswerable declined": (sum(o["declined"] for o in unanswerable), len(unanswerable)),
        "degenerate": sum(o.get("degenerate") is not None for o in outcomes),
        "faithful": (faithful, sum(o["cited"] for o in outcomes)),
        "support": supported / checked if checked else None,
        "unedited": (sum(not o.get("shaped_by") for o in answered), len(answered)),
        "s/question p50": statistics.median(o["wall_s"] for o in outcomes) if outcomes else None,
    }


def _long_enough(outcome: Outcome) -> bool:
    return is_long_form(outcome.get("sentences", 0), outcome.get("distinct_citations", 0))


def sign_test(gained: int, lost: int) -> float:
    """One-sided p of losing at least `lost` of the gained + lost questions that differ,
    were each as likely to go either way."""
    n = gained + lost
    return sum(math.comb(n, k) for k in range(lost, n + 1)) / 2**n if n else 1.0


def differences(before: list[Outcome], after: list[Outcome]) -> dict[str, tuple[int, int]]:
    """(gained, lost) questions, by question, on factoids right and long-form kept."""
    by_question = {o["question"]: o for o in before}
    found = {"factoids": [0, 0], "long-form": [0, 0]}
    for new in after:
        old = by_question.get(new["question"])
        if old is None:
            continue
        if new["kind"] == "factoid" and new["correct"] != old["correct"]:
            found["factoids"][0 if new["correct"] else 1] += 1
        if new["kind"] == "longform" and _long_enough(new) != _long_enough(old):
            found["long-form"][0 if _long_enough(new) else 1] += 1
    return {name: (gained, lost) for name, (gained, lost) in found.items()}


def replaced(full: list[Outcome], rerun: list[Outcome]) -> list[Outcome]:
    """The full run's outcomes with the rerun's in place of the same questions'."""
    again = {o["question"]: o for o in rerun}
    asked = {o["question"] for o in full}
    missing = [question for question in again if question not in asked]
    if missing:
        raise SystemExit(f"the rerun has questions the full run lacks: {missing[:3]}")
    return [again.get(o["question"], o) for o in full]


def format_figures(label: str, shown: dict[str, Any]) -> str:
    def cell(name: str, value: Any) -> str:
        if isinstance(value, tuple):
            part, whole = value
            return f"{part}/{whole} ({part / whole:.1%})" if whole else "-"
        if isinstance(value, float):
            return f"{value:.1%}" if name in SHARES else f"{value:.1f}"
        return "-" if value is None else str(value)

    return f"{label}: " + "; ".join(f"{name} {cell(name, value)}" for name, value in shown.items())


def format_differences(before: list[Outcome], after: list[Outcome]) -> str:
    return "; ".join(
        f"{name} {gained} gained, {lost} lost (p = {sign_test(gained, lost):.2f})"
        for name, (gained, lost) in differences(before, after).items()
    )


def touched(full: list[Outcome], questions: Path, out: Path) -> None:
    try:
        lines = questions.read_text().splitlines()
        rows = [(row["question"], row) for row in map(json.loads, filter(str.strip, lines))]
    except (OSError, ValueError, TypeError, KeyError) as error:
        raise DataError(f"{questions}: not a JSONL file of questions ({error!r})") from error
    out.mkdir(parents=True, exist_ok=True)
    for part in sorted(REWRITES):
        named = {o["question"] for o in full if part in (o.get("shaped_by") or [])}
        picked = [row for question, row in rows if question in named]
        (out / f"{part}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in picked))
        print(f"{part}: {len(picked)} questions -> {out / f'{part}.jsonl'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    pick = commands.add_parser("touched", help="the questions each rewrite changed")
    pick.add_argument("full", type=Path)
    pick.add_argument("--questions", type=Path, required=True)
    pick.add_argument("--out", type=Path, required=True)
    worth = commands.add_parser("worth", help="the full run against each rerun's answering")
    worth.add_argument("full", type=Path)
    worth.add_argument("reruns", nargs="+", metavar="NAME=RERUN.json")
    compare = commands.add_parser("compare", help="one full run against another")
    compare.add_argument("before", type=Path)
    compare.add_argument("after", type=Path)
    args = parser.parse_args()
    try:
        return run(args, parser)
    except DataError as error:
        parser.exit(2, f"rewrite_worth.py: {error}\n")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.command == "compare":
        before, after = recorded_outcomes(args.before), recorded_outcomes(args.after)
        print(format_figures(args.before.name, figures(before)))
        print(format_figures(args.after.name, figures(after)))
        print(format_differences(before, after))
        return 0
    full = recorded_outcomes(args.full)
    if args.command == "touched":
        touched(full, args.questions, args.out)
        return 0
    print(format_figures("the full run", figures(full)))
    for spec in args.reruns:
        name, _, path = spec.partition("=")
        if not name or not path:
            parser.error(f"{spec!r}: give NAME=RERUN.json")
        rerun = replaced(full, recorded_outcomes(Path(path)))
        print(format_figures(name, figures(rerun)))
        print(f"  the full run against it: {format_differences(rerun, full)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
