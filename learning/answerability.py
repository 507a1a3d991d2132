"""Training the answerability model (agent.answerability) on the policy's own episodes.

Its rows come from `webgpt eval --json-out` runs on training questions recorded with the
grounded declines off (`--no-grounded-declines`), so that every question's quotes are the
ones the served policy collects: a factoid whose quotes hold a gold answer is answerable
(1), an explanation with quotes is answerable (1), an unanswerable question is not (0); a
factoid whose quotes hold no gold answer says nothing certain and is left out. The pages
the quotes come from are read again from the offline web, rendered as the browser renders
them. The fit is a class-balanced logistic regression (Newton's method, a small L2
penalty), deterministic for the same rows.
"""

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from webgpt.agent.answerability import FEATURES, AnswerabilityModel, TermRarity, features
from webgpt.agent.errors import DataError
from webgpt.browser.offline import OfflineWeb
from webgpt.browser.render import RenderOptions, render_html
from webgpt.evals.questions import contains_gold

L2_PENALTY = 1e-2
HELD_OUT_SHARE = 0.2  # of the questions, by a hash of their text: for the reported figures
# The share of answerable training rows the chosen threshold may decline (issue #57's 5%).
MAX_ANSWERABLE_DECLINED = 0.05


@dataclass(frozen=True)
class Row:
    question: str
    values: list[float]
    answerable: bool


def label(outcome: dict[str, Any]) -> bool | None:
    """Whether the outcome's quotes answer its question; None where that is not known."""
    if not outcome.get("quotes"):
        return None
    if outcome["kind"] == "unanswerable":
        return False
    if outcome["kind"] == "longform":
        return True
    shown = "\n".join(q["extract"] for q in outcome["quotes"])
    return True if contains_gold(shown, outcome.get("gold_answers") or []) else None


def evidence_texts(
    outcome: dict[str, Any], page_text: Callable[[str], str]
) -> tuple[list[str], list[str]]:
    """The quotes' text (title and extract) and their pages' text (title, address, text), as
    agent.episode reads them at the answer."""
    quotes = [f"{q['title']}\n{q['extract']}" for q in outcome["quotes"]]
    urls = list(dict.fromkeys(q["url"] for q in outcome["quotes"]))
    pages = [f"{url.replace('_', ' ')}\n{page_text(url)}" for url in urls]
    return quotes, pages


def page_reader(web: OfflineWeb) -> Callable[[str], str]:
    """A page's rendered text from the offline web ("" for a page it lacks)."""

    @lru_cache(maxsize=4096)
    def read(url: str) -> str:
        document = web.lookup(url)
        if document is None or not document.content_type.startswith("text/html"):
            return ""
        page = render_html(document.body, document.url, document.charset, RenderOptions())
        return f"{page.title}\n{page.text_index.text}"

    return read


def rows_of(runs: Iterable[Path], rarity: TermRarity, page_text: Callable[[str], str]) -> list[Row]:
    rows = []
    for path in runs:
        try:
            reports = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise DataError(f"{path}: not a `webgpt eval --json-out` file: {error}") from error
        if not isinstance(reports, list) or not all(
            isinstance(r, dict) and isinstance(r.get("outcomes"), list) for r in reports
        ):
            raise DataError(f"{path}: not a `webgpt eval --json-out` file: no outcomes list")
        for report in reports:
            for outcome in report["outcomes"]:
                answerable = label(outcome)
                if answerable is None:
                    continue
                quotes, pages = evidence_texts(outcome, page_text)
                values = features(outcome["question"], quotes, pages, rarity)
                rows.append(Row(outcome["question"], values, answerable))
    return rows


def held_out(question: str) -> bool:
    digest = hashlib.sha256(question.encode()).digest()
    return digest[0] < 256 * HELD_OUT_SHARE


def fit(rows: Sequence[Row]) -> AnswerabilityModel:
    """Class-balanced logistic regression by Newton's method."""
    if not rows or len({r.answerable for r in rows}) < 2:
        raise DataError("answerability needs answerable and unanswerable rows")
    x = np.array([[*r.values, 1.0] for r in rows])
    y = np.array([1.0 if r.answerable else 0.0 for r in rows])
    positives = y.sum()
    sample = np.where(y == 1, len(y) / (2 * positives), len(y) / (2 * (len(y) - positives)))
    penalty = np.eye(x.shape[1]) * L2_PENALTY * len(y)
    penalty[-1, -1] = 0.0  # the bias is not held to 0
    beta = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-x @ beta))
        gradient = x.T @ (sample * (p - y)) + penalty @ beta
        hessian = (x * (sample * p * (1 - p))[:, None]).T @ x + penalty
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if float(np.abs(step).max()) < 1e-9:
            break
    return AnswerabilityModel(weights=tuple(float(b) for b in beta[:-1]), bias=float(beta[-1]))


def with_threshold(model: AnswerabilityModel, rows: Sequence[Row]) -> AnswerabilityModel:
    """The model with the highest threshold that declines at most MAX_ANSWERABLE_DECLINED of
    the answerable rows: chosen on training episodes, never on dev."""
    kept = sorted(model.probability(r.values) for r in rows if r.answerable)
    threshold = kept[math.floor(MAX_ANSWERABLE_DECLINED * len(kept))]
    return replace(model, threshold=threshold)


def accuracy(model: AnswerabilityModel, rows: Sequence[Row]) -> dict[str, float | int]:
    """Share of each class the model gets right at its threshold."""
    kept = [r for r in rows if r.answerable]
    declined = [r for r in rows if not r.answerable]

    def right(row: Row) -> bool:
        return (model.probability(row.values) >= model.threshold) == row.answerable

    return {
        "answerable": len(kept),
        "answerable kept": sum(map(right, kept)) / len(kept) if kept else math.nan,
        "unanswerable": len(declined),
        "unanswerable declined": sum(map(right, declined)) / len(declined)
        if declined
        else math.nan,
    }


def train(
    runs: Sequence[Path], store: Path, out: Path, log: Callable[[str], None]
) -> AnswerabilityModel:
    """Fits on the runs' rows, reports a held-out fifth, refits on all and saves to out."""
    web = OfflineWeb(store)
    try:
        rarity = TermRarity(store)
        rows = rows_of(runs, rarity, page_reader(web))
    finally:
        web.close()
    train_rows = [r for r in rows if not held_out(r.question)]
    test_rows = [r for r in rows if held_out(r.question)]
    scores = accuracy(with_threshold(fit(train_rows), train_rows), test_rows)
    log(f"held out ({len(test_rows)} rows): {scores}")
    model = with_threshold(fit(rows), rows)
    digest = hashlib.sha256()
    for path in sorted(runs):
        digest.update(path.read_bytes())
    model.save(
        out,
        {
            "kind": "answerability",
            "features": list(FEATURES),
            "rows": len(rows),
            "answerable": sum(r.answerable for r in rows),
            "episodes_sha256": digest.hexdigest(),
            "episodes": [p.name for p in runs],
            "held_out": scores,
            "l2_penalty": L2_PENALTY,
            "threshold": model.threshold,
            "max_answerable_declined": MAX_ANSWERABLE_DECLINED,
        },
    )
    weights = ", ".join(f"{n} {w:+.2f}" for n, w in zip(FEATURES, model.weights, strict=True))
    log(
        f"wrote {out} ({len(rows)} rows; weights {weights}, bias {model.bias:+.2f}, "
        f"threshold {model.threshold:.3f})"
    )
    return model
