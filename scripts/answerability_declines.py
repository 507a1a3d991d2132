"""What an answerability model (agent.answerability) would decline, read off recorded runs.

    python scripts/answerability_declines.py FULL.json --rerun OFF.json --model DIR [--store S]

FULL is a `webgpt eval --json-out` run of the default's answering; OFF its rerun with
`--no-grounded-declines` on the questions the grounded declines declined in FULL
(`scripts/rewrite_worth.py touched` lists the questions a part changed). Every answer is
then the one written with the grounded declines off, and each the model judges below its
threshold becomes the decline: the figures of answering with the model in place of the
grounded declines, question by question against FULL, before a full run. Choose on dev;
the sealed test is never read here.
"""

import argparse
import sys
from pathlib import Path
from typing import Any

from webgpt.agent.answerability import AnswerabilityModel, TermRarity, features
from webgpt.browser.offline import OfflineWeb, default_store_path
from webgpt.evals.evaluate import recorded_outcomes
from webgpt.learning.answerability import evidence_texts, page_reader

sys.path.insert(0, str(Path(__file__).parent))
from rewrite_worth import figures, format_differences, format_figures, replaced


def declined(outcome: dict[str, Any]) -> dict[str, Any]:
    """The outcome as the decline would have made it."""
    points = 0.0 if outcome.get("key_points") is not None else None
    return {
        **outcome,
        "answer": "declined",
        "declined": True,
        "correct": False,
        "cited": False,
        "faithful": None,
        "sentences": 0,
        "distinct_citations": 0,
        "key_points": points,
        "checked_sentences": 0,
        "supported_sentences": 0,
        "degenerate": None,
        "shaped_by": ["answerability_decline"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("full", type=Path)
    parser.add_argument("--rerun", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--store", type=Path, default=None)
    parser.add_argument("--list", action="store_true", help="print each changed decline")
    args = parser.parse_args()
    store = args.store or default_store_path()
    model = AnswerabilityModel.load(args.model)
    rarity, web = TermRarity(store), OfflineWeb(store)
    read = page_reader(web)
    full = recorded_outcomes(args.full)
    without = replaced(full, recorded_outcomes(args.rerun))
    judged = []
    for before, outcome in zip(full, without, strict=True):
        probability = None
        if outcome.get("quotes"):
            quotes, pages = evidence_texts(outcome, read)
            probability = model.probability(features(outcome["question"], quotes, pages, rarity))
        below = probability is not None and probability < model.threshold
        judged.append(declined(outcome) if below and not outcome["declined"] else outcome)
        if args.list and judged[-1]["declined"] != before["declined"]:
            now = "declined" if judged[-1]["declined"] else "answered"
            print(f"  {now} ({probability:.2f}) {outcome['kind']}: {outcome['question']}")
    web.close()
    print(format_figures("the full run (grounded declines)", figures(full)))
    print(format_figures("grounded declines off", figures(without)))
    print(format_figures(f"answerability below {model.threshold}", figures(judged)))
    print("  against the full run: " + format_differences(full, judged))


if __name__ == "__main__":
    main()
