"""What a decline judgment would decline on recorded dev answers, beside the rule it replaces.

Reads `webgpt eval --json-out` files recorded with `--no-grounded-declines` (each outcome
keeps the quotes its episode collected and, under guided decoding, `unshown`: what the
grounded-decline rule would have named), scores each answer and the decline from the same
quotes with a reward checkpoint, and prints, per margin, what serving the decline where it
outscores the answer by more than the margin would give: factoids right, answerable and
unanswerable questions declined, long-form answers kept. The rule's row declines where
`unshown` is not empty. Choose the margin on dev; the sealed test is never read here.

    python scripts/decline_judgment.py --judge REWARD_FOLDER EVAL.json [EVAL.json ...]
"""

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from webgpt.agent.declines import decline_answer, is_declined
from webgpt.browser.events import CollectedQuote
from webgpt.browser.page import domain_of
from webgpt.evals.evaluate import recorded_outcomes
from webgpt.reward.data import scored_text
from webgpt.reward.scorer import RewardScorer

MARGINS = (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0)


@dataclass(frozen=True)
class Judged:
    outcome: dict[str, Any]
    margin: float | None  # the decline's score less the answer's; None: nothing to judge


def judged(
    outcomes: list[dict[str, Any]], score_texts: Callable[[list[str]], list[float]]
) -> list[Judged]:
    """Each outcome with the decline's score less its answer's, from the same quotes; None
    where there is nothing to judge (no answer, a decline, no quotes)."""
    texts: list[str] = []
    at: list[int] = []
    for number, outcome in enumerate(outcomes):
        if not outcome["answer"] or outcome["declined"] or not outcome.get("quotes"):
            continue
        quotes = [CollectedQuote(**q, domain=domain_of(q["url"])) for q in outcome["quotes"]]
        decline = decline_answer(outcome["question"])
        texts += [
            scored_text(outcome["question"], quotes, outcome["answer"]),
            scored_text(outcome["question"], quotes, decline),
        ]
        at.append(number)
    scores = score_texts(texts)
    margins: dict[int, float] = {
        number: scores[2 * i + 1] - scores[2 * i] for i, number in enumerate(at)
    }
    return [Judged(o, margins.get(n)) for n, o in enumerate(outcomes)]


def figures(rows: list[Judged], declines: list[bool]) -> str:
    """Factoids right, answerable and unanswerable questions declined, long-form answers
    (two sentences citing two quotes) kept, where `declines` marks what is declined."""

    def share(kind: str | None, what: str) -> str:
        picked = [
            (row.outcome, declined)
            for row, declined in zip(rows, declines, strict=True)
            if (kind is None and row.outcome["kind"] != "unanswerable")
            or row.outcome["kind"] == kind
        ]
        if what == "right":
            hits = sum(o["correct"] and not d for o, d in picked)
        elif what == "declined":
            hits = sum(d for _, d in picked)
        else:  # long-form: two sentences citing two quotes, not declined
            hits = sum(
                o["sentences"] >= 2 and o["distinct_citations"] >= 2 and not d for o, d in picked
            )
        return f"{hits}/{len(picked)} ({hits / max(len(picked), 1):.1%})"

    return " | ".join(
        [
            share("factoid", "right"),
            share(None, "declined"),
            share("unanswerable", "declined"),
            share("longform", "long"),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", type=Path, required=True, help="reward checkpoint folder")
    parser.add_argument("evals", type=Path, nargs="+", help="webgpt eval --json-out files")
    args = parser.parse_args()
    outcomes = [outcome for path in args.evals for outcome in recorded_outcomes(path)]
    rows = judged(outcomes, RewardScorer(args.judge, batch_size=8).score_texts)
    policy = [is_declined(row.outcome["answer"]) for row in rows]
    print(f"{len(rows)} outcomes; judge {args.judge.name}")
    print("answering | factoids right | answerable declined | unanswerable declined | long-form")
    print(f"policy alone | {figures(rows, policy)}")
    rule = [d or bool(row.outcome.get("unshown")) for row, d in zip(rows, policy, strict=True)]
    print(f"grounded-decline rule | {figures(rows, rule)}")
    for margin in MARGINS:
        judge = [
            d or (row.margin is not None and row.margin > margin)
            for row, d in zip(rows, policy, strict=True)
        ]
        print(f"judge, margin {margin:+.1f} | {figures(rows, judge)}")
        both = [j or r for j, r in zip(judge, rule, strict=True)]
        print(f"judge {margin:+.1f} and rule | {figures(rows, both)}")


if __name__ == "__main__":
    main()
