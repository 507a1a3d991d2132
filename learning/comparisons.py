"""Synthetic comparisons for the reward model (`webgpt comparisons generate`).

Until people have compared enough answers (the front end's feedback, exported by `webgpt
feedback export`), the embedded default's reward model learns from comparisons labelled by
rule. Several answers are sampled per question from the policy (temperature 0.8-1.0), each
from its own episode on one page cache; an answer is *good* when it contains a gold answer
and cites at least one quote, every cited quote occurring verbatim in its page fetched
again (evals.evaluate's `correct` and `faithful`). Every pair of a question's answers is a
row of the comparisons JSONL that `webgpt train rm` reads (reward.data, our format): the
good answer preferred, or a tie (the soft label 0.5) when both are good or neither is.
Rows say they are synthetic (`"source": "synthetic"`) and carry each side's labels, so
they are never mistaken for human judgements.
"""

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from webgpt.agent.episode import EpisodeConfig, answer_sampling, check_citations
from webgpt.agent.policy import Policy
from webgpt.agent.trace import Reference
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web
from webgpt.evals.evaluate import cited_numbers, is_faithful, sample_episodes
from webgpt.evals.questions import Question, contains_gold
from webgpt.learning.demonstrations import Demonstration

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
    """Every pair of distinct answers of one question, labelled by the rule, once: a small
    policy often writes the same answer several times, and repeating a pair would count
    one judgement many times over (in training and in held-out accuracy)."""
    sides = [answer.side() for answer in answers]
    keys = [json.dumps(side, sort_keys=True) for side in sides]
    seen: set[frozenset[str]] = set()
    rows = []
    for i, j in itertools.combinations(range(len(answers)), 2):
        pair = frozenset((keys[i], keys[j]))
        if len(pair) == 1 or pair in seen:
            continue  # the same text twice, or a pair already written, teaches nothing new
        seen.add(pair)
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


async def judge(
    question: Question, answer: str, references: Sequence[Reference], web: Web
) -> JudgedAnswer:
    """The rule's labels of one answer; its cited extracts are checked against their pages
    fetched again."""
    cited = bool(cited_numbers(answer, references))
    faithful = cited and bool(await is_faithful(web, answer, list(references)))
    return JudgedAnswer(
        answer=answer,
        references=tuple(references),
        correct=contains_gold(answer, question.gold_answers),
        faithful=faithful,
    )


async def judged_answers(
    question: Question,
    policy: Policy,
    web: Web,
    *,
    samples: int,
    episode: EpisodeConfig,
    session: SessionConfig,
) -> list[JudgedAnswer]:
    """samples answers to one question, each from its own episode and labelled; episodes
    that end without an answer are left out."""
    results = await sample_episodes(
        question.question, policy, web, samples, episode=episode, session=session
    )
    return [
        await judge(question, result.answer, result.references, web)
        for result in results
        if result.answer
    ]


# Browsing episodes tried, one after another, for quotes to answer from, here and in RL's
# answer-only groups. Tries help when quoting is luck; a question the policy never quotes
# for still has none (how often that happens: docs/reward.md).
ANSWER_ONLY_BROWSE_TRIES = 3
# Other questions an answer-only group of RL tries (`--unquoted swap`) before it falls back
# to whole episodes: one unquoted question in a few dozen would otherwise cost a
# whole-episode group.
ANSWER_ONLY_SWAPS = 3


async def judged_answers_from_one_browse(
    question: Question,
    policy: Policy,
    web: Web,
    *,
    samples: int,
    episode: EpisodeConfig,
    session: SessionConfig,
) -> list[JudgedAnswer]:
    """samples answers to one question written from the quotes of one browsing episode
    (WebGPT's answer-only episodes): the pairs differ only in the answer, which is what an
    answer-only RL step trains, and one browse serves every sample (its own answer is the
    first). No answers when `ANSWER_ONLY_BROWSE_TRIES` episodes kept no quote."""
    for _ in range(ANSWER_ONLY_BROWSE_TRIES):
        (result,) = await sample_episodes(
            question.question, policy, web, 1, episode=episode, session=session
        )
        if result.answer_prompt is not None:
            break
    else:
        return []
    answers = [result.answer or ""]  # the browsing episode's own answer is the first sample
    # Every quote collected: a declined first answer has no references, its samples may.
    quotes = result.quotes
    answers += await _answers(policy, result.answer_prompt, quotes, samples - 1, episode)
    return [await judge(question, a, quotes, web) for a in answers if a]


@dataclass(frozen=True)
class QuotedQuestion:
    """A question with quotes collected before (a demonstration's): its answers are
    written from them, with no browsing."""

    question: Question
    answer_prompt: str
    references: tuple[Reference, ...]


def quoted_question(demo: Demonstration) -> QuotedQuestion | None:
    """A demonstration's question and quotes; None when it has no quotes (no answer prompt)
    or no gold answers to judge its answers by."""
    if demo.answer_prompt is None or not demo.gold_answers:
        return None
    references = tuple(
        Reference(n=n, title=q.title, url=q.url, domain=q.domain, extract=q.extract)
        for n, q in enumerate(demo.quotes, start=1)
    )
    question = Question(
        question=demo.question, gold_answers=demo.gold_answers, url=demo.gold_url, split=demo.split
    )
    return QuotedQuestion(question, demo.answer_prompt, references)


async def judged_answers_from_quotes(
    quoted: QuotedQuestion, policy: Policy, web: Web, *, samples: int, episode: EpisodeConfig
) -> list[JudgedAnswer]:
    """samples answers written from quotes already collected, in one request: answer-level
    pairs at the cost of the answers alone (browsing is most of an episode's time)."""
    answers = await _answers(policy, quoted.answer_prompt, quoted.references, samples, episode)
    return [await judge(quoted.question, a, quoted.references, web) for a in answers if a]


async def _answers(
    policy: Policy,
    answer_prompt: str,
    references: Sequence[Reference],
    samples: int,
    episode: EpisodeConfig,
) -> list[str]:
    """samples answers to one answer prompt, sampled as an episode samples its answer (one
    request with n = samples); citations of no quote removed."""
    if samples < 1:
        return []
    sampling = replace(answer_sampling(episode, references), n=samples)
    completions = await policy.complete(answer_prompt, sampling)
    return [check_citations(c.text.strip(), len(references))[0] for c in completions.choices]


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
    questions: Sequence[Question | QuotedQuestion],
    policy: Policy,
    web: Web,
    write: Callable[[dict[str, Any]], None],
    *,
    samples: int = 4,
    answer_only: bool = False,
    episode: EpisodeConfig,
    session: SessionConfig,
    progress: Callable[[int, GenerationReport], None] | None = None,
) -> GenerationReport:
    """Sample, judge and write the comparison rows of each question in turn: `samples`
    episodes a question, or with `answer_only` one browse and `samples` answers from its
    quotes; a QuotedQuestion's `samples` answers are written from its own quotes."""
    browse = judged_answers_from_one_browse if answer_only else judged_answers
    report = GenerationReport()
    for number, item in enumerate(questions, start=1):
        if isinstance(item, QuotedQuestion):
            question = item.question
            answers = await judged_answers_from_quotes(
                item, policy, web, samples=samples, episode=episode
            )
        else:
            question = item
            answers = await browse(
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
