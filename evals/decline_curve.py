"""Every decline threshold's outcome, from one `webgpt eval` run at `--decline-threshold 1`.

At threshold 1 a policy never declines by the threshold, and each outcome records its
decline probability and the cited answer it wrote instead. A lower threshold declines the
answers whose probability reaches it and keeps the others as they were, so one greedy run
gives the whole curve (`webgpt eval --decline-curve JSON`). The threshold to serve with is
chosen on one question set and measured on others (docs/questions.md, "A decline
threshold").
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webgpt.agent.errors import DataError

THRESHOLDS = (0.5, 0.3, 0.2, 0.1, 0.05, 0.03, 0.02, 0.01, 0.005, 0.002, 0.001)
MAX_ANSWERABLE_DECLINED = 0.10  # the bound on declining answerable questions


@dataclass(frozen=True)
class CurvePoint:
    threshold: float
    unanswerable_declined: int
    unanswerable: int
    answerable_declined: int
    answerable: int
    factoids_right: int
    factoids: int

    @property
    def answerable_share(self) -> float:
        return self.answerable_declined / self.answerable if self.answerable else 0.0


def decline_curve(
    outcomes: Sequence[Mapping[str, Any]], thresholds: Sequence[float] = THRESHOLDS
) -> list[CurvePoint]:
    """What each threshold would have declined, and the factoids it would have kept right.
    An answer declined anyway (a decline written in the cited branch) stays declined."""
    if not any(o.get("decline_probability") is not None for o in outcomes):
        raise DataError("no decline probabilities: record the run with --decline-threshold 1")
    points = []
    for threshold in thresholds:
        declined = [
            bool(o.get("declined")) or (o.get("decline_probability") or 0.0) >= threshold
            for o in outcomes
        ]
        kinds = [o.get("kind", "factoid") for o in outcomes]
        points.append(
            CurvePoint(
                threshold=threshold,
                unanswerable_declined=sum(
                    d for d, k in zip(declined, kinds, strict=True) if k == "unanswerable"
                ),
                unanswerable=kinds.count("unanswerable"),
                answerable_declined=sum(
                    d for d, k in zip(declined, kinds, strict=True) if k != "unanswerable"
                ),
                answerable=len(kinds) - kinds.count("unanswerable"),
                factoids_right=sum(
                    bool(o.get("correct")) and not d
                    for o, d, k in zip(outcomes, declined, kinds, strict=True)
                    if k == "factoid"
                ),
                factoids=kinds.count("factoid"),
            )
        )
    return points


def chosen_threshold(points: Sequence[CurvePoint]) -> CurvePoint | None:
    """The lowest threshold (the most declines) that declines at most
    MAX_ANSWERABLE_DECLINED of the answerable questions; None when none does."""
    allowed = [p for p in points if p.answerable_share <= MAX_ANSWERABLE_DECLINED]
    return min(allowed, key=lambda p: p.threshold, default=None)


def format_curve(label: str, points: Sequence[CurvePoint]) -> str:
    chosen = chosen_threshold(points)
    lines = [
        f"{label}",
        "threshold  unanswerable declined  answerable declined  factoids right",
    ]
    for p in points:
        mark = "  <- chosen" if p is chosen else ""
        lines.append(
            f"{p.threshold:<9g}  {p.unanswerable_declined:>3}/{p.unanswerable:<17}  "
            f"{p.answerable_declined:>3}/{p.answerable:<15}  "
            f"{p.factoids_right:>3}/{p.factoids}{mark}"
        )
    if chosen is None:
        lines.append(f"no threshold declines at most {MAX_ANSWERABLE_DECLINED:.0%} of answerable")
    return "\n".join(lines)
