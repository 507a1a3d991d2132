"""Question sets: the format of a question with its gold answers, how a question's page
decides its split, and how an answer is judged against the gold (SQuAD's normalisation).

Three kinds of question, the three a person asks: factoid (gold answers a correct answer
contains), longform (key points a good answer states) and unanswerable (the right answer
is a decline, agent.declines). `webgpt eval` reads any JSONL whose rows have `question`
and `gold_answers` (a demonstrations file is one); learning.question_generator writes them
from the offline web, and data/questions/ holds the people-written set.
"""

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

# gold answers and answers are normalised alike: the agent reads an answer's repeats too
from webgpt.agent.answer_rules import normalize as normalize
from webgpt.agent.declines import is_declined
from webgpt.agent.errors import DataError
from webgpt.agent.followups import Turn

Split = Literal["train", "dev", "test"]
# The people-written set, in a source checkout (an installed wheel does not carry data/).
PEOPLE_QUESTIONS = Path(__file__).resolve().parents[1] / "data" / "questions" / "people.jsonl"
# The sealed test set: evaluated once per released default (evals.ledger), never to choose.
SEALED_QUESTIONS = PEOPLE_QUESTIONS.with_name("sealed-test.jsonl")
# The people-written dev questions over the software manuals of the offline web.
MANUAL_QUESTIONS = PEOPLE_QUESTIONS.with_name("manuals.jsonl")
# People-written follow-ups, each after the conversation before it (dev).
CONVERSATION_QUESTIONS = PEOPLE_QUESTIONS.with_name("conversations.jsonl")
SPLIT_PERCENT = {"train": 80, "dev": 10, "test": 10}
# A link marker of a rendered page (browser.render): 【id†text†domain】 or 【id†text】.
_LINK = re.compile(r"【\d+†([^†】]*)(?:†[^】]*)?】")
Kind = Literal["factoid", "longform", "unanswerable"]


class Question(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    question: str = Field(min_length=1)
    kind: Kind = "factoid"
    gold_answers: list[str] = []  # factoid: a correct answer contains one of them
    # longform: what a good answer states, each point a list of alternative phrases
    key_points: list[list[str]] = []
    url: str | None = None  # the page that holds the answer
    title: str | None = None
    evidence: str | None = None  # the sentence of that page that answers it
    # longform: the sentences to quote, in order, and the page of each (url when None)
    supporting: list[str] = []
    supporting_urls: list[str | None] = []
    answer: str | None = None  # a reference answer citing [1] (a decline for unanswerable)
    # unanswerable: why no page answers ("future event", "made-up entity", "detail no page
    # holds")
    why: str | None = None
    style: str | None = None
    split: Split | None = None
    # the conversation before it, oldest first: the question is then a follow-up, browsed
    # made standalone (agent.followups), as the service browses one
    history: list[Turn] = []

    @model_validator(mode="after")
    def _answerable_has_gold(self) -> Self:
        if self.kind == "factoid" and not self.gold_answers:
            raise ValueError("a factoid question needs gold_answers")
        if self.kind == "unanswerable" and (self.gold_answers or self.key_points):
            raise ValueError("an unanswerable question has no gold_answers or key_points")
        return self


def split_of(url: str) -> Split:
    """train / dev / test by a stable hash of the page's URL (80 / 10 / 10)."""
    bucket = int(hashlib.sha256(url.encode()).hexdigest(), 16) % 100
    if bucket < SPLIT_PERCENT["train"]:
        return "train"
    return "dev" if bucket < SPLIT_PERCENT["train"] + SPLIT_PERCENT["dev"] else "test"


def contains_gold(answer: str, gold_answers: Iterable[str]) -> bool:
    text = f" {normalize(answer)} "
    return any(f" {normalize(g)} " in text for g in gold_answers if normalize(g))


def answers_correctly(answer: str | None, gold_answers: Iterable[str]) -> bool:
    """A factoid's answer is right when it states a gold answer; a decline never is."""
    return bool(answer) and not is_declined(answer) and contains_gold(answer or "", gold_answers)


def page_text(lines: Iterable[str]) -> str:
    """A rendered page's text as one line, links as their text, normalised as answers are
    judged: where a question set's gold answers and key points must be found."""
    return normalize(_LINK.sub(r"\1", " ".join(lines)))


def jsonl_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of every non-blank line of a JSONL file; DataError if unreadable."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise DataError(f"cannot read {path}: {error}") from error
    return ((number, line) for number, line in enumerate(lines, start=1) if line.strip())


def load_questions(path: Path, split: str | None = None) -> list[Question]:
    """Rows with `question` and `gold_answers` (question files and demonstration files)."""
    questions: list[Question] = []
    for number, line in jsonl_lines(path):
        try:
            row = json.loads(line)
            meta = row.get("meta") if isinstance(row, dict) else None
            if isinstance(meta, dict) and "kind" not in row and "kind" in meta:
                row["kind"] = meta["kind"]  # a demonstration records its question's kind
            question = Question.model_validate(row)
        except (ValueError, ValidationError) as error:
            raise DataError(f"{path}:{number}: not a question with gold answers: {error}") from None
        if split is None or question.split == split:
            questions.append(question)
    if not questions:
        raise DataError(f"{path} has no questions" + (f" in split {split!r}" if split else ""))
    return questions


def questions_digest(questions: Iterable[Question]) -> str:
    """sha256 of the questions as evaluated, in order: which set a figure was measured on.
    A question with no history reads as before questions had one, so a registry's recorded
    figures still compare."""
    digest = hashlib.sha256()
    for question in questions:
        unread = None if question.history else {"history"}
        digest.update(question.model_dump_json(exclude=unread).encode() + b"\n")
    return digest.hexdigest()
