"""Answer quality, measured (`webgpt eval`): run the agent on questions with gold answers.

Per policy:
- correct: a gold answer occurs in the answer (both normalised as SQuAD does: lower case,
  no punctuation or articles), over all questions;
- cited: the answer cites at least one reference, over all questions;
- faithful: every extract the answer cites occurs verbatim in the page it names, checked
  by fetching that page again (a fresh page cache), over the answers that cite;
- invalid-action rate (over all actions), actions per episode, wall time per question,
  and optionally the reward model's mean score.
"""

import asyncio
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from agent.answer import ScoredAnswer, Scorer
from agent.episode import CITATION, EpisodeConfig, EpisodeResult, run_episode
from agent.errors import PolicyError
from agent.policy import Policy
from agent.questions import Question, contains_gold
from agent.trace import Reference
from browser.session import SessionConfig
from browser.web import Web

Progress = Callable[[int, int, "PolicyReport"], None]


@dataclass
class Outcome:
    question: str
    gold_answers: list[str]
    answer: str | None
    correct: bool
    cited: bool
    faithful: bool | None  # None: no citation to check
    actions: int
    invalid_actions: int
    wall_s: float
    end_reason: str | None
    reward: float | None = None
    error: str | None = None


@dataclass
class PolicyReport:
    policy: str
    outcomes: list[Outcome] = field(default_factory=list)

    def figures(self) -> dict[str, float | int | str | None]:
        done = self.outcomes
        count = len(done)
        checked = [o.faithful for o in done if o.faithful is not None]
        actions = sum(o.actions for o in done)
        rewards = [o.reward for o in done if o.reward is not None]
        return {
            "policy": self.policy,
            "questions": count,
            "correct": _share(sum(o.correct for o in done), count),
            "cited": _share(sum(o.cited for o in done), count),
            "faithful": _share(sum(checked), len(checked)),
            "invalid_action_rate": _share(sum(o.invalid_actions for o in done), actions),
            "actions_median": statistics.median(o.actions for o in done) if done else None,
            "actions_mean": round(actions / count, 2) if count else None,
            "wall_s_median": round(statistics.median(o.wall_s for o in done), 2) if done else None,
            "reward_mean": round(statistics.fmean(rewards), 4) if rewards else None,
            "errors": sum(o.error is not None for o in done),
        }

    def to_json(self) -> dict[str, Any]:
        return {"figures": self.figures(), "outcomes": [asdict(o) for o in self.outcomes]}


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def cited_numbers(answer: str, references: Sequence[Reference]) -> list[int]:
    return sorted({int(n) for n in CITATION.findall(answer) if 1 <= int(n) <= len(references)})


async def is_faithful(web: Web, answer: str, references: Sequence[Reference]) -> bool | None:
    """Every cited extract occurs in its page, fetched again; None when nothing is cited."""
    cited = cited_numbers(answer, references)
    if not cited:
        return None
    cache = web.new_cache()
    try:
        for n in cited:
            reference = references[n - 1]
            page = await cache.get(reference.url)
            if page.kind == "error" or page.text_index.find(reference.extract) is None:
                return False
    finally:
        await cache.aclose()
    return True


async def sample_episodes(
    question: str, policy: Policy, web: Web, samples: int, *,
    episode: EpisodeConfig, session: SessionConfig,
) -> list[EpisodeResult]:  # fmt: skip
    """samples episodes of one question at once on one page cache (a vLLM server batches
    them): the N samples of comparisons and of best-of-n."""
    cache = web.new_cache()
    try:
        browsers = [web.session(cache=cache, config=session) for _ in range(samples)]
        return list(
            await asyncio.gather(
                *(run_episode(i, b, policy, question, episode) for i, b in enumerate(browsers))
            )
        )
    finally:
        await cache.aclose()


async def evaluate_policy(
    name: str,
    policy: Policy,
    web: Web,
    questions: Sequence[Question],
    *,
    episode: EpisodeConfig,
    session: SessionConfig,
    scorer: Scorer | None = None,
    verify_web: Web | None = None,
    progress: Progress | None = None,
) -> PolicyReport:
    """One episode per question, one at a time (wall time per question is a figure)."""
    report = PolicyReport(name)
    for number, question in enumerate(questions, start=1):
        started = time.perf_counter()
        cache = web.new_cache()
        browser = web.session(cache=cache, config=session)
        try:
            result = await run_episode(0, browser, policy, question.question, episode)
        except PolicyError as error:
            report.outcomes.append(
                Outcome(
                    question.question,
                    question.gold_answers,
                    None,
                    False,
                    False,
                    None,
                    0,
                    0,
                    time.perf_counter() - started,
                    None,
                    error=str(error),
                )
            )
            continue
        finally:
            await cache.aclose()
        wall_s = time.perf_counter() - started
        answer = result.answer
        faithful = (
            await is_faithful(verify_web or web, answer, result.references) if answer else None
        )
        reward = None
        if scorer is not None and answer and result.answer_prompt:
            [reward] = await scorer.score(
                [ScoredAnswer(question.question, result.answer_prompt, answer)]
            )
        report.outcomes.append(
            Outcome(
                question=question.question,
                gold_answers=question.gold_answers,
                answer=answer,
                correct=bool(answer) and contains_gold(answer or "", question.gold_answers),
                cited=bool(answer) and bool(cited_numbers(answer or "", result.references)),
                faithful=faithful,
                actions=result.actions,
                invalid_actions=result.invalid_actions,
                wall_s=wall_s,
                end_reason=result.end_reason,
                reward=reward,
            )
        )
        if progress is not None:
            progress(number, len(questions), report)
    return report


def format_table(reports: Sequence[PolicyReport]) -> str:
    """The figures of each policy as a fixed-width table."""
    columns = [
        ("policy", "policy", "{}"),
        ("n", "questions", "{}"),
        ("correct", "correct", "{:.1%}"),
        ("cited", "cited", "{:.1%}"),
        ("faithful", "faithful", "{:.1%}"),
        ("invalid", "invalid_action_rate", "{:.1%}"),
        ("actions p50", "actions_median", "{:g}"),
        ("s/question p50", "wall_s_median", "{:.1f}"),
        ("reward", "reward_mean", "{:.3f}"),
    ]
    rows = [[h for h, _, _ in columns]]
    for report in reports:
        figures = report.figures()
        rows.append(
            [
                fmt.format(figures[key]) if figures[key] is not None else "-"
                for _, key, fmt in columns
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def progress_bar(stream: Any) -> Progress:
    """A one-line progress bar (redrawn in place on a terminal, every 10 lines otherwise)."""

    def show(done: int, total: int, report: PolicyReport) -> None:
        figures = report.figures()
        filled = round(20 * done / max(total, 1))
        text = (
            f"[{'#' * filled}{'.' * (20 - filled)}] {done}/{total} {report.policy}: "
            f"correct {figures['correct'] or 0:.0%}, s/question {figures['wall_s_median']}"
        )
        if stream.isatty():
            print("\r" + text, end="\n" if done == total else "", file=stream, flush=True)
        elif done % 10 == 0 or done == total:
            print(text, file=stream, flush=True)

    return show
