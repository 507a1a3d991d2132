"""Fits agent.question_kind's model on training questions: `webgpt train question-kind`.

Each question of a training file that names its kind is a row: long-form (its writer meant
an answer of several sentences) or factoid (one fact); unanswerable questions say nothing
of the answer's form and are left out, and so are files of another split than train. The
fit is a class-balanced logistic regression with an L2 penalty, by Adam on the sparse
features: a few thousand questions take seconds. A tenth of the pages (by a hash of the
url) is held out first and its accuracy reported; the model saved is then fitted on all.
"""

import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from webgpt.agent.errors import DataError
from webgpt.agent.question_kind import FEATURE_FORMAT, QuestionKindModel, features
from webgpt.evals.questions import load_questions

# A feature only one training question holds says more about that question than about
# questions of its kind.
MIN_QUESTIONS = 5
# Chosen with MIN_QUESTIONS by five-fold cross-validation over the training pages, never on
# dev (docs/eval/promotion-rules-learned-question-kind.md, K2's outcome).
L2_PENALTY = 1e-4
STEPS = 1500
LEARNING_RATE = 0.05
HELD_OUT_SHARE = 0.1
# Weights this small change no reading; left out of the saved file.
SMALLEST_KEPT = 1e-3


@dataclass(frozen=True)
class Row:
    question: str
    explanation: bool
    page: str  # what the held-out draw is keyed on: questions of one page stay together


def rows_of(paths: Sequence[Path]) -> list[Row]:
    """The long-form and factoid training questions of the files."""
    rows = []
    for path in paths:
        for question in load_questions(path):
            if question.split not in (None, "train"):
                raise DataError(
                    f"{path}: a question of split {question.split} ({question.question!r}); "
                    "train on training questions only"
                )
            if question.kind == "unanswerable":
                continue
            page = question.url or question.question
            rows.append(Row(question.question, question.kind == "longform", page))
    return rows


def held_out(row: Row) -> bool:
    return hashlib.sha256(row.page.encode()).digest()[0] < 256 * HELD_OUT_SHARE


def fit(rows: Sequence[Row], l2_penalty: float = L2_PENALTY) -> QuestionKindModel:
    """Class-balanced logistic regression over the features MIN_QUESTIONS rows hold."""
    if len({r.explanation for r in rows}) < 2:
        raise DataError("the question-kind model needs long-form and factoid questions")
    read = [features(r.question) for r in rows]
    counts = Counter(f for found in read for f in found)
    vocabulary = sorted(f for f, n in counts.items() if n >= MIN_QUESTIONS)
    index = {f: i for i, f in enumerate(vocabulary)}
    pairs = [(r, index[f]) for r, found in enumerate(read) for f in found if f in index]
    row_of = np.array([r for r, _ in pairs], dtype=np.int64)
    column = np.array([c for _, c in pairs], dtype=np.int64)
    y = np.array([1.0 if r.explanation else 0.0 for r in rows])
    positives = y.sum()
    # each class weighs half of the mean loss, however few its rows
    sample = np.where(y == 1, 0.5 / positives, 0.5 / (len(y) - positives))
    theta = np.zeros(len(vocabulary) + 1)  # the weights, then the bias
    moment, second = np.zeros_like(theta), np.zeros_like(theta)
    for step in range(1, STEPS + 1):
        z = theta[-1] + np.bincount(row_of, weights=theta[column], minlength=len(rows))
        residual = sample * (1.0 / (1.0 + np.exp(-np.clip(z, -60, 60))) - y)
        gradient = np.append(
            np.bincount(column, weights=residual[row_of], minlength=len(vocabulary))
            + l2_penalty * theta[:-1],
            residual.sum(),
        )
        moment = 0.9 * moment + 0.1 * gradient
        second = 0.999 * second + 0.001 * gradient**2
        theta -= (
            LEARNING_RATE
            * (moment / (1 - 0.9**step))
            / (np.sqrt(second / (1 - 0.999**step)) + 1e-8)
        )
    weights = {
        f: round(float(w), 4)
        for f, w in zip(vocabulary, theta[:-1], strict=True)
        if abs(w) >= SMALLEST_KEPT
    }
    return QuestionKindModel(weights=weights, bias=float(theta[-1]))


def accuracy(model: QuestionKindModel, rows: Sequence[Row]) -> dict[str, float | int]:
    """The share of each kind the model reads right."""
    explanations = [r for r in rows if r.explanation]
    facts = [r for r in rows if not r.explanation]

    def right(row: Row) -> bool:
        return model.asks_for_explanation(row.question) == row.explanation

    return {
        "longform": len(explanations),
        "longform read right": round(sum(map(right, explanations)) / max(len(explanations), 1), 4),
        "factoid": len(facts),
        "factoid read right": round(sum(map(right, facts)) / max(len(facts), 1), 4),
    }


def train(paths: Sequence[Path], out: Path, log: Callable[[str], None]) -> QuestionKindModel:
    """Reports the held-out pages' accuracy, fits on every row and saves to out."""
    rows = rows_of(paths)
    kept = [r for r in rows if not held_out(r)]
    scores = accuracy(fit(kept), [r for r in rows if held_out(r)])
    log(f"held out ({sum(map(held_out, rows))} questions): {scores}")
    model = fit(rows)
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.read_bytes())
    model.save(
        out,
        {
            "kind": "question-kind",
            "feature_format": FEATURE_FORMAT,
            "questions": [str(p) for p in paths],
            "questions_sha256": digest.hexdigest(),
            "longform": sum(r.explanation for r in rows),
            "factoid": sum(not r.explanation for r in rows),
            "features": len(model.weights),
            "held_out": scores,
            "min_questions": MIN_QUESTIONS,
            "l2_penalty": L2_PENALTY,
            "steps": STEPS,
            "threshold": model.threshold,
        },
    )
    log(f"wrote {out} ({len(rows)} questions, {len(model.weights)} weights)")
    return model
