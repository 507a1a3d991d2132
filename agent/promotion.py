"""The promotion gate: a version replaces the serving one only if it answers about as well.

`webgpt model promote VERSION` evaluates the candidate and the serving version (the one
`current` names) on the same pinned questions, greedy, one after the other on this
machine, and refuses when the candidate is worse by more than `margin` points on any of:

- correct: the share of factoid questions answered right (higher is better);
- declined (answerable): declines of questions that have an answer (lower is better);
- declined (unanswerable): declines of questions that have none (higher is better).

A figure one side lacks (no question of that kind) is not compared, and an evaluation in
which the policy server failed on some question refuses too: its figures do not compare.
The serving version is evaluated again every time, not read from an earlier record:
figures from another run may come from another offline web, vLLM build or machine, and
greedy decoding reproduces only on one. With no serving version there is nothing to
compare with and the version is promoted as it is. `--force` promotes without
evaluating, keeping the figures of the refusal it overrides where there was one. Every
decision is appended to the registry's promotions.jsonl (agent.registry.PromotionRecord).

The evaluation is a plain callable, version -> figures (evals.evaluate.PolicyReport's),
so the gate is tested without vLLM; `webgpt model promote` passes one that serves each
version (agent.targets) and runs `webgpt eval`'s evaluator on it.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from webgpt.agent.errors import ConfigurationError, PromotionRefused
from webgpt.agent.registry import PROMOTIONS, Figures, PolicyRegistry, PromotionRecord

Evaluate = Callable[[str], Figures]
DEFAULT_MARGIN = 5.0  # points: on ~150 factoids, one question is ~0.7 of a point


@dataclass(frozen=True)
class Check:
    key: str  # a rate among the figures
    label: str
    higher_is_better: bool


CHECKS = (
    Check("correct", "correct", True),
    Check("declined_answerable", "declined (answerable)", False),
    Check("declined_unanswerable", "declined (unanswerable)", True),
)


def _rate(figures: Figures, key: str) -> float | None:
    value = figures.get(key)
    return float(value) if isinstance(value, float | int) else None


def compare(
    version: str, candidate: Figures, serving_version: str, serving: Figures, margin: float
) -> list[str]:
    """How the candidate is worse than the serving version beyond the margin ([]: it is not)."""
    reasons = []
    for name, figures in ((version, candidate), (serving_version, serving)):
        errors = figures.get("errors")
        if isinstance(errors, int) and errors > 0:
            reasons.append(
                f"the policy server failed {name} on {errors} of {figures.get('questions')} "
                "questions, so its figures do not compare"
            )
    digests = {candidate.get("questions_sha256"), serving.get("questions_sha256")}
    if len(digests - {None}) > 1:
        reasons.append("the two were evaluated on different questions")
    for check in CHECKS:
        mine, theirs = _rate(candidate, check.key), _rate(serving, check.key)
        if mine is None or theirs is None:
            continue
        # Rates are rounded to 4 places: round the difference so that exactly the margin
        # counts as within it.
        worse = round(100 * ((theirs - mine) if check.higher_is_better else (mine - theirs)), 2)
        if worse > margin:
            reasons.append(
                f"{check.label} {mine:.1%} against {theirs:.1%} for {serving_version}: "
                f"{worse:.1f} points worse, beyond the margin of {margin:g}"
            )
    return reasons


def format_comparison(record: PromotionRecord) -> str:
    """The compared figures of a gate decision, one line a check."""
    mine = record.figures.get(record.version, {})
    theirs = record.figures.get(record.serving or "", {})
    lines = [f"{'':<24} {record.version:>14} {record.serving or '':>14}"]
    for check in CHECKS:
        cells = [_rate(mine, check.key), _rate(theirs, check.key)]
        lines.append(
            f"{check.label:<24} "
            + " ".join(f"{'-' if c is None else f'{c:.1%}':>14}" for c in cells)
        )
    lines.append(f"{'questions':<24} {mine.get('questions')!s:>14} {theirs.get('questions')!s:>14}")
    return "\n".join(lines)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def promote_gated(
    registry: PolicyRegistry,
    version: str,
    evaluate: Evaluate,
    *,
    margin: float = DEFAULT_MARGIN,
    force: bool = False,
    setup: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> PromotionRecord | None:
    """Promote version if the gate lets it (or force); the decision, recorded. None: version
    is current already. PromotionRefused (recorded too) when it is worse than the serving
    version beyond the margin."""
    if not 0 <= margin <= 100:
        raise ConfigurationError(f"--margin {margin:g}: give points between 0 and 100")
    registry.verify(version)  # its files, before an evaluation that takes an hour
    serving = registry.aliases().current
    if serving == version:
        return None
    if serving is not None and not (registry.root / serving).is_dir():
        serving = None  # `current` names a folder that is gone: nothing to compare with
    if serving is None:
        record = PromotionRecord(
            at=_now(), version=version, serving=None, outcome="ungated", margin=margin
        )
    elif force:
        refusal = _refusal(registry, version, serving)
        if refusal is None:
            record = PromotionRecord(
                at=_now(), version=version, serving=serving, outcome="forced", margin=margin
            )
        else:  # its figures, reasons, setup and margin: what the operator overrode
            record = refusal.model_copy(
                update={"at": _now(), "outcome": "forced", "forced_over": refusal.at}
            )
    else:
        progress(f"gate: evaluating {version}, the candidate")
        candidate = evaluate(version)
        progress(f"gate: evaluating {serving}, the serving version")
        figures = {version: candidate, serving: evaluate(serving)}
        reasons = compare(version, candidate, serving, figures[serving], margin)
        record = PromotionRecord(
            at=_now(),
            version=version,
            serving=serving,
            outcome="refused" if reasons else "promoted",
            margin=margin,
            figures=figures,
            reasons=reasons,
            setup=dict(setup or {}),
        )
        if reasons:
            registry.record(record)
            raise PromotionRefused(
                f"{version} is not promoted: on {candidate.get('questions')} questions it is "
                f"worse than the serving version {serving}: {'; '.join(reasons)}. The figures "
                f"are in {registry.root / PROMOTIONS}; --force promotes it anyway (recorded "
                "as forced)"
            )
    registry.promote(version)
    registry.record(record)
    return record


def _refusal(registry: PolicyRegistry, version: str, serving: str) -> PromotionRecord | None:
    """The gate's refusal of version against serving, if that was its latest word on them."""
    decisions = [r for r in registry.promotions() if (r.version, r.serving) == (version, serving)]
    return decisions[-1] if decisions and decisions[-1].outcome == "refused" else None
