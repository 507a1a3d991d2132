"""What declines by evidence would give on recorded dev answers, per margin, beside the
grounded-decline rule and the policy's own choice.

Reads `webgpt eval --json-out` files recorded with `--no-grounded-declines` (each outcome
keeps its quotes and `unshown`, what the rule would have named), scores each quote and the
decline as a sentence of the quote's page with a quote ranker
(agent.quote_ranking.evidence_lead), and prints, per margin, what serving the decline
where no quote passes it by more than the margin would give, alone and with the rule
beside it. Evidence also turns the policy's own declines into cited answers where a quote
passes the margin: those answers were never drafted, so they are counted apart as
"unknown" (a full `webgpt eval --evidence-margin M` measures them). Choose the margin on
dev; the sealed test is never read here. `--record M` then writes the chosen margin into
the ranker's manifest (and into each `--also` folder's: the adapter a repository ships), so
the episodes that load it use it (agent.episode.EpisodeConfig.evidence_threshold).

    python scripts/evidence_declines.py --ranker RANKER_FOLDER EVAL.json [EVAL.json ...]
    python scripts/evidence_declines.py --ranker RANKER_FOLDER --record M [--also ADAPTER]
"""

import argparse
import asyncio
from pathlib import Path
from typing import Any

from webgpt.agent.declines import is_declined
from webgpt.agent.quote_ranking import QuoteRanker, evidence_lead
from webgpt.browser.events import CollectedQuote
from webgpt.browser.page import domain_of
from webgpt.evals.evaluate import recorded_outcomes
from webgpt.reward.manifest import is_margin, record_evidence_margin

MARGINS = (-8.0, -7.0, -6.0, -5.5, -5.0, -4.5, -4.0, -3.5, -3.0, -2.5, -2.0, -1.0, 0.0, 1.0)


async def margins(ranker: QuoteRanker, outcomes: list[dict[str, Any]]) -> list[float | None]:
    """Each outcome's evidence margin; None where it collected no quote."""
    found: list[float | None] = []
    for outcome in outcomes:
        quotes = [
            CollectedQuote(**q, domain=domain_of(q["url"])) for q in outcome.get("quotes") or []
        ]
        found.append(await evidence_lead(ranker, outcome["question"], quotes) if quotes else None)
    return found


def figures(outcomes: list[dict[str, Any]], declined: list[bool], unknown: set[int]) -> str:
    """Factoids right, answerable and unanswerable questions declined, long-form answers
    (two sentences citing two quotes) kept; `unknown`: answers evidence would serve that
    were never drafted, counted apart."""

    def of(kind: str | None) -> list[int]:
        return [
            i
            for i, o in enumerate(outcomes)
            if o["kind"] == kind or (kind is None and o["kind"] != "unanswerable")
        ]

    def shown(hits: int, picked: list[int], extra: int | None = None) -> str:
        more = f" +{extra} unknown" if extra else ""
        return f"{hits}/{len(picked)} ({hits / max(len(picked), 1):.1%}){more}"

    factoids, longform = of("factoid"), of("longform")
    right = sum(outcomes[i]["correct"] and not declined[i] and i not in unknown for i in factoids)
    kept = sum(
        outcomes[i]["sentences"] >= 2
        and outcomes[i]["distinct_citations"] >= 2
        and not declined[i]
        and i not in unknown
        for i in longform
    )
    return " | ".join(
        [
            shown(right, factoids, sum(i in unknown for i in factoids)),
            shown(sum(declined[i] for i in of(None)), of(None)),
            shown(sum(declined[i] for i in of("unanswerable")), of("unanswerable")),
            shown(kept, longform, sum(i in unknown for i in longform)),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranker", type=Path, required=True, help="quote ranker folder")
    parser.add_argument("evals", type=Path, nargs="*", help="webgpt eval --json-out files")
    parser.add_argument(
        "--margins",
        type=lambda text: tuple(float(m) for m in text.split(",")),
        default=MARGINS,
        help="the margins to print, comma-separated (--margins=-5,-4.5)",
    )
    parser.add_argument(
        "--record", type=float, metavar="M", help="write margin M into the ranker's manifest"
    )
    parser.add_argument(
        "--also", type=Path, nargs="*", default=[], help="with --record: more checkpoint folders"
    )
    args = parser.parse_args()
    if args.record is not None:
        if args.evals:
            parser.error("--record writes a margin and reads no eval file")
        if not is_margin(args.record):
            parser.error(f"--record {args.record}: give a finite number")
        folders = [args.ranker, *args.also]
        record_evidence_margin(folders, args.record)
        print(f"evidence margin {args.record:+g} recorded in " + ", ".join(map(str, folders)))
        return
    if args.also:
        parser.error("--also names folders for --record")
    if not args.evals:
        parser.error("give the eval files to read, or --record M")
    from webgpt.reward.quote_scorer import QuoteScorer  # torch: only when run

    outcomes = [outcome for path in args.evals for outcome in recorded_outcomes(path)]
    ranker = QuoteScorer(args.ranker)
    found = asyncio.run(margins(ranker, outcomes))
    policy = [not o["answer"] or is_declined(o["answer"]) for o in outcomes]
    rule = [bool(o.get("unshown")) for o in outcomes]
    print(f"{len(outcomes)} outcomes; ranker {args.ranker.name}")
    print("answering | factoids right | answerable declined | unanswerable declined | long-form")
    print(f"policy alone | {figures(outcomes, policy, set())}")
    by_rule = [p or r for p, r in zip(policy, rule, strict=True)]
    print(f"grounded-decline rule | {figures(outcomes, by_rule, set())}")
    for margin in args.margins:
        evidence = [p if m is None else m <= margin for p, m in zip(policy, found, strict=True)]
        unknown = {i for i, (p, e) in enumerate(zip(policy, evidence, strict=True)) if p and not e}
        with_rule = [e or r for e, r in zip(evidence, rule, strict=True)]
        print(f"evidence, margin {margin:+.1f} | {figures(outcomes, evidence, unknown)}")
        unknown_beside = {i for i in unknown if not rule[i]}
        print(f"evidence {margin:+.1f} and rule | {figures(outcomes, with_rule, unknown_beside)}")


if __name__ == "__main__":
    main()
