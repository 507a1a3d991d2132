"""Pairwise comparisons for reward-model training, from two formats.

1. The released WebGPT comparisons schema: each line one pair,
   `{"question": {"full_text": ...} | str, "quotes_0": {"title": [...], "extract": [...]},
   "answer_0": str, "tokens_0": [...], "score_0": float, ... "_1" ...}` with scores in
   [-1, 1] summing to 0 (0 = tie). The probability that answer 0 is preferred is
   (score_0 + 1) / 2, so a tie is the soft label 0.5.
2. Our own JSONL (what the service records from human feedback): `{"question": str,
   "a": {"quotes": [{"title", "domain", "url", "extract"}], "answer": str},
   "b": {...}, "preference": "a" | "b" | "tie", "label": float}`. The optional label is
   the probability that a is better (a graded comparison's soft label, service.protocol
   GRADE_LABELS); without it the preference gives 1, 0 or 0.5.

Both become `Comparison`s whose texts are exactly what the reward model scores: the
answer-phase prompt (browser.observation.answer_prompt) followed by the answer.

3. Quote comparisons (`webgpt comparisons quotes`), which train a quote ranker: `{"question":
   str, "title": str, "quote_a": str, "quote_b": str, "preference": "a" | "b"}`, two
   sentences of one page, the one that answers the question preferred; two sentences of
   different pages give each its page's title as "title_a" and "title_b". Their texts are
   quote_text: the answer-phase prompt holding that one quote, with no answer.

Rows that fit none of the formats are reported with their line number and skipped.
"""

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from webgpt.browser.events import CollectedQuote
from webgpt.browser.observation import answer_prompt
from webgpt.reward.errors import DataError


@dataclass(frozen=True)
class Comparison:
    question: str
    text_a: str  # answer-phase prompt + answer
    text_b: str
    label: float  # probability that a is preferred: 1, 0, or 0.5 for a tie


@dataclass
class LoadReport:
    used: int = 0
    skipped: list[tuple[str, int, str]] = field(default_factory=list)  # (file, line, reason)

    def summary(self) -> str:
        text = f"{self.used} comparisons used, {len(self.skipped)} rows skipped"
        for file, line, reason in self.skipped[:20]:
            text += f"\n  {file}:{line}: {reason}"
        if len(self.skipped) > 20:
            text += f"\n  ... and {len(self.skipped) - 20} more"
        return text


class _RowError(ValueError):
    pass


def scored_text(question: str, quotes: list[CollectedQuote], answer: str) -> str:
    """What the reward model reads: the answer-phase prompt, then the answer."""
    return answer_prompt(question, quotes) + answer


def quote_text(question: str, title: str, sentence: str) -> str:
    """What a quote ranker reads: the answer-phase prompt with sentence as its one quote."""
    return answer_prompt(
        question, [CollectedQuote(title=title, domain="", url="", extract=sentence)]
    )


class ScoredText(Protocol):
    """An answer as the policy produced it. agent.answer.ScoredAnswer satisfies this
    structurally (reward/ never imports agent/)."""

    @property
    def answer_prompt(self) -> str: ...

    @property
    def answer(self) -> str: ...


def answer_text(answer: ScoredText) -> str:
    """scored_text of an answer whose prompt was already built: exactly what the policy read
    and wrote."""
    return answer.answer_prompt + answer.answer


def load_comparisons(paths: Iterable[Path]) -> tuple[list[Comparison], LoadReport]:
    report = LoadReport()
    comparisons: list[Comparison] = []
    for path in paths:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as error:
            raise DataError(f"cannot read {path}: {error}") from error
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                comparisons.append(parse_row(json.loads(line)))
                report.used += 1
            except (ValueError, _RowError) as error:
                report.skipped.append((str(path), number, str(error)[:200]))
    if not comparisons:
        raise DataError(f"no usable comparisons: {report.summary()}")
    return comparisons, report


def parse_row(row: Any) -> Comparison:
    if not isinstance(row, dict):
        raise _RowError("a row must be a JSON object")
    if "answer_0" in row:
        return _webgpt_row(row)
    if "a" in row and "b" in row:
        return _own_row(row)
    if "quote_a" in row and "quote_b" in row:
        return _quote_row(row)
    raise _RowError(
        "none of the WebGPT comparisons schema, ours (a, b, preference) or quote comparisons "
        "(quote_a, quote_b, preference)"
    )


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _RowError(f"{what} must be a non-empty string")
    return value.strip()


def _webgpt_row(row: dict[str, Any]) -> Comparison:
    question_field = row.get("question")
    question = _text(
        question_field.get("full_text") if isinstance(question_field, dict) else question_field,
        "question",
    )
    texts = []
    for side in ("0", "1"):
        quotes_field = row.get(f"quotes_{side}") or {"title": [], "extract": []}
        titles, extracts = quotes_field.get("title"), quotes_field.get("extract")
        if (
            not isinstance(titles, list)
            or not isinstance(extracts, list)
            or len(titles) != len(extracts)
        ):
            raise _RowError(f"quotes_{side} must have title and extract lists of one length")
        quotes = [
            CollectedQuote(title=str(t), domain="", url="", extract=str(e))
            for t, e in zip(titles, extracts, strict=True)
        ]
        texts.append(
            scored_text(question, quotes, _text(row.get(f"answer_{side}"), f"answer_{side}"))
        )
    score_0, score_1 = row.get("score_0"), row.get("score_1")
    if not all(isinstance(s, int | float) and math.isfinite(s) for s in (score_0, score_1)):
        raise _RowError("score_0 and score_1 must be numbers")
    if not -1 <= score_0 <= 1 or abs(score_0 + score_1) > 1e-6:  # type: ignore[operator]
        raise _RowError(f"scores must lie in [-1, 1] and sum to 0, got {score_0}, {score_1}")
    return Comparison(question, texts[0], texts[1], (float(score_0) + 1) / 2)  # type: ignore[arg-type]


PREFERENCE_LABELS = {"a": 1.0, "b": 0.0, "tie": 0.5}


def _own_row(row: dict[str, Any]) -> Comparison:
    question = _text(row.get("question"), "question")
    texts = []
    for side in ("a", "b"):
        candidate = row[side]
        if not isinstance(candidate, dict):
            raise _RowError(f"{side} must be an object with quotes and answer")
        quotes = []
        for quote in candidate.get("quotes") or []:
            if not isinstance(quote, dict):
                raise _RowError(f"{side}.quotes must be objects")
            quotes.append(
                CollectedQuote(
                    title=str(quote.get("title", "")),
                    domain=str(quote.get("domain", "")),
                    url=str(quote.get("url", "")),
                    extract=_text(quote.get("extract"), "quote extract"),
                )
            )
        texts.append(
            scored_text(question, quotes, _text(candidate.get("answer"), f"{side}.answer"))
        )
    preference = row.get("preference")
    if preference not in PREFERENCE_LABELS:
        raise _RowError(f"preference must be one of a, b, tie; got {preference!r}")
    label = row.get("label", PREFERENCE_LABELS[preference])
    if isinstance(label, bool) or not isinstance(label, int | float) or not 0 <= label <= 1:
        raise _RowError(f"label must be a number in [0, 1]; got {label!r}")
    if (label > 0.5, label < 0.5) != (preference == "a", preference == "b"):
        raise _RowError(f"label {label} contradicts preference {preference!r}")
    return Comparison(question, texts[0], texts[1], float(label))


def _quote_row(row: dict[str, Any]) -> Comparison:
    question = _text(row.get("question"), "question")
    texts = []
    for side in "ab":
        title = row.get(f"title_{side}", row.get("title", ""))
        if not isinstance(title, str):
            raise _RowError(f"the title of quote_{side} must be a string")
        texts.append(quote_text(question, title, _text(row[f"quote_{side}"], f"quote_{side}")))
    if texts[0] == texts[1]:
        raise _RowError("quote_a and quote_b are the same sentence")
    preference = row.get("preference")
    if preference not in ("a", "b"):
        raise _RowError(f"preference must be a or b; got {preference!r}")
    return Comparison(question, texts[0], texts[1], PREFERENCE_LABELS[preference])


@dataclass
class QuestionGroup:
    """All comparisons of one question: each distinct text is scored once, every pair of
    the question contributes to one loss (InstructGPT's batching)."""

    question: str
    texts: list[str] = field(default_factory=list)
    pairs: list[tuple[int, int, float]] = field(default_factory=list)  # (i, j, P(i preferred))


def group_by_question(comparisons: Iterable[Comparison]) -> list[QuestionGroup]:
    groups: dict[str, QuestionGroup] = {}
    indexes: dict[str, dict[str, int]] = {}
    for comparison in comparisons:
        group = groups.setdefault(comparison.question, QuestionGroup(comparison.question))
        index = indexes.setdefault(comparison.question, {})
        ids = []
        for text in (comparison.text_a, comparison.text_b):
            if text not in index:
                index[text] = len(group.texts)
                group.texts.append(text)
            ids.append(index[text])
        if ids[0] != ids[1]:
            group.pairs.append((ids[0], ids[1], comparison.label))
    return [g for g in groups.values() if g.pairs]


def iter_batches(groups: list[QuestionGroup], size: int) -> Iterator[list[QuestionGroup]]:
    for start in range(0, len(groups), size):
        yield groups[start : start + size]
