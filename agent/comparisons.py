"""Synthetic comparisons for the reward model (`webgpt comparisons generate`).

Until people have compared enough answers (the front end's feedback, exported by `webgpt
feedback export`), the embedded default's reward model learns from comparisons labelled by
rule. Several answers are sampled per question from the policy (temperature 0.8-1.0), each
from its own episode on one page cache; an answer is *good* when it contains a gold answer
and cites at least one quote, every cited quote occurring verbatim in its page fetched
again (agent.evaluate's `correct` and `faithful`). Every pair of a question's answers is a
row of the comparisons JSONL that `webgpt train rm` reads (reward.data, our format): the
good answer preferred, or a tie (the soft label 0.5) when both are good or neither is.
Rows say they are synthetic (`"source": "synthetic"`) and carry each side's labels, so
they are never mistaken for human judgements.
"""

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agent.episode import EpisodeConfig
from agent.evaluate import cited_numbers, is_faithful, sample_episodes
from agent.policy import Policy
from agent.questions import Question, contains_gold
from agent.trace import Reference
from browser.session import SessionConfig
from browser.web import Web

SOURCE = "synthetic"
Preference = Literal["a", "b", "tie"]


@dataclass(frozen=True)
class JudgedAnswer:
    """One sampled answer with the rule's labels."""

    answer: str
    references: tuple[Reference, ...]
    correct: bool  # a gold answer occurs in it
    faithful: bool  # cites, and every cited extract occurs in its page

    @property
    def good(self) -> bool:
        return self.correct and self.faithful

    def side(self) -> dict[str, Any]:
        quotes = [r.model_dump(exclude={"n", "type"}) for r in self.references]
        return {"quotes": quotes, "answer": self.answer}

    def labels(self) -> dict[str, bool]:
        return {"correct": self.correct, "faithful": self.faithful}


def preference(a: JudgedAnswer, b: JudgedAnswer) -> Preference:
    if a.good == b.good:
        return "tie"
    return "a" if a.good else "b"


def comparison_rows(question: Question, answers: Sequence[JudgedAnswer]) -> list[dict[str, Any]]:
    """Every pair of distinct answers of one question, labelled by the rule."""
    sides = [answer.side() for answer in answers]
    rows = []
    for i, j in itertools.combinations(range(len(answers)), 2):
        if sides[i] == sides[j]:
            continue  # the same text twice teaches nothing
        a, b = answers[i], answers[j]
        rows.append(
            {
                "question": question.question,
                "a": sides[i],
                "b": sides[j],
                "preference": preference(a, b),
                "source": SOURCE,
                "labels": {"a": a.labels(), "b": b.labels()},
                "split": question.split,
            }
        )
    return rows


async def judged_answers(
    question: Question,
    policy: Policy,
    web: Web,
    *,
    samples: int,
    episode: EpisodeConfig,
    session: SessionConfig,
) -> list[JudgedAnswer]:
    """samples answers to one question, each labelled; episodes that end without an answer
    are left out."""
    results = await sample_episodes(
        question.question, policy, web, samples, episode=episode, session=session
    )
    judged = []
    for result in results:
        if not result.answer:
            continue
        cited = bool(cited_numbers(result.answer, result.references))
        faithful = cited and bool(await is_faithful(web, result.answer, result.references))
        judged.append(
            JudgedAnswer(
                answer=result.answer,
                references=tuple(result.references),
                correct=contains_gold(result.answer, question.gold_answers),
                faithful=faithful,
            )
        )
    return judged


@dataclass
class GenerationReport:
    questions: int = 0
    answers: int = 0
    good_answers: int = 0
    rows: int = 0
    ties: int = 0

    def summary(self) -> str:
        good = f"{self.good_answers / self.answers:.0%}" if self.answers else "-"
        return (
            f"{self.questions} questions, {self.answers} answers ({good} good), "
            f"{self.rows} comparisons ({self.rows - self.ties} preferences, {self.ties} ties)"
        )


async def generate_comparisons(
    questions: Sequence[Question],
    policy: Policy,
    web: Web,
    write: Callable[[dict[str, Any]], None],
    *,
    samples: int = 4,
    episode: EpisodeConfig,
    session: SessionConfig,
    progress: Callable[[int, GenerationReport], None] | None = None,
) -> GenerationReport:
    """Sample, judge and write the comparison rows of each question in turn."""
    report = GenerationReport()
    for number, question in enumerate(questions, start=1):
        answers = await judged_answers(
            question, policy, web, samples=samples, episode=episode, session=session
        )
        rows = comparison_rows(question, answers)
        for row in rows:
            write(row)
        report.questions += 1
        report.answers += len(answers)
        report.good_answers += sum(a.good for a in answers)
        report.rows += len(rows)
        report.ties += sum(row["preference"] == "tie" for row in rows)
        if progress is not None:
            progress(number, report)
    return report
