"""Answer quality, measured (`webgpt eval`): run the agent on questions with gold answers.

Per policy:
- correct: a gold answer occurs in the answer (both normalised as SQuAD does: lower case,
  no punctuation or articles), over the factoid questions; a decline is never correct;
- declined: the answer is a decline (agent.declines), over all questions, and apart over
  the answerable ones (factoid and long-form: should be rare) and the unanswerable ones
  (should be most);
- long-form: the share of long-form answers with at least two distinct sentences and two
  distinct citations (an answer that repeats itself has none, and a sentence of under
  three words such as a page's title does not count: policies write both), and key-point
  coverage (the share of a question's key points the answer states, a point stated when
  one of its phrases occurs in it, normalised);
- cited: the answer cites at least one reference, over all questions;
- faithful: every extract the answer cites occurs verbatim in the page it names, checked
  by fetching that page again (a fresh page cache), over the answers that cite;
- support: the share of the cited answers' sentences whose content words all stand in
  the quotes the sentence cites (a word stands there when a word of the quote shares its
  first SUPPORT_LETTERS letters, so "painted" stands in "painting"): a check an answer can
  fail, unlike faithful, which guided decoding makes sure of;
- degenerate: how many answers loop, repeat, leave blanks, stop mid-sentence or say
  nothing the question does not (agent.degenerate), which the service must never serve;
- unedited: the share of answers that are the policy's first draft as it wrote it, no
  answer rule having changed them (agent.episode.SHAPING_PARTS);
- invalid-action rate (over all actions), actions per episode, wall time per question,
  and optionally the reward model's mean score.
"""

import asyncio
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from webgpt.agent.answer_rules import CITATION
from webgpt.agent.answer_rules import distinct_sentence_count as distinct_sentence_count
from webgpt.agent.declines import is_declined
from webgpt.agent.degenerate import degeneracy
from webgpt.agent.episode import EpisodeConfig, EpisodeResult, run_episode
from webgpt.agent.errors import DataError, PolicyError
from webgpt.agent.followups import made_standalone
from webgpt.agent.policy import Policy
from webgpt.agent.scoring import ScoredAnswer, Scorer
from webgpt.agent.targets import PolicyFormat, PolicyTarget, serving
from webgpt.agent.trace import Reference
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web, offline_web
from webgpt.evals.questions import Kind, Question, answers_correctly, normalize

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
    kind: Kind = "factoid"
    declined: bool = False
    sentences: int = 0  # distinct ones (distinct_sentence_count)
    distinct_citations: int = 0
    key_points: float | None = None  # share of the key points stated (long-form)
    # Guided: what the question named that no quote showed (a decline where grounded
    # declines are on; with them off, what they would have declined)
    unshown: list[str] = field(default_factory=list)
    # With a decline judgment: the answer's score and the decline's
    judgment: tuple[float, float] | None = None
    # With declines by evidence: how far the best quote's score passed the decline's
    evidence: float | None = None
    answerability: float | None = None  # EpisodeResult.answerability
    degenerate: str | None = None  # agent.degenerate.degeneracy of the answer
    shaped_by: list[str] = field(default_factory=list)  # EpisodeResult.shaped_by
    checked_sentences: int = 0  # an answer's sentences, cited or not (a decline has none)
    supported_sentences: int = 0  # of them, those whose content words stand in their quotes
    # Every quote the episode collected (title, url, extract), a decline's too: what a
    # judgement of the answer against its evidence reads again offline
    quotes: list[dict[str, str]] = field(default_factory=list)
    # Where the episode's time went (agent.episode.Timings): what a speed change moves
    timings: dict[str, float] = field(default_factory=dict)
    asked: str | None = None  # a follow-up as browsed, where made standalone differs
    # The episode's commands as the policy wrote them, in order: how it browsed, for
    # reading a run's misses without running its episodes again
    commands: list[str] = field(default_factory=list)

    @property
    def long_enough(self) -> bool:
        return is_long_form(self.sentences, self.distinct_citations)


def is_long_form(sentences: int, distinct_citations: int) -> bool:
    """WebGPT's answer style: two distinct sentences or more, citing two quotes or more."""
    return sentences >= 2 and distinct_citations >= 2


# Words a sentence needs no quote for: function words, and the answer's own frame.
_FUNCTION_WORDS = frozenset({
    "a", "an", "the", "of", "in", "on", "at", "to", "for", "with", "by", "from", "as", "and",
    "or", "but", "nor", "that", "which", "who", "whom", "whose", "what", "when", "where",
    "why", "how", "is", "are", "was", "were", "be", "been", "being", "it", "its", "he",
    "she", "they", "them", "his", "her", "their", "this", "these", "those", "there", "has",
    "have", "had", "do", "does", "did", "not", "also", "can", "could", "may", "might",
    "will", "would", "so", "than", "then", "into", "about", "one", "i", "you", "we",
})  # fmt: skip
SUPPORT_LETTERS = 5
_SENTENCE_CITES = re.compile(r"((?:\s*\[\d+\])+)[.!?]?")
_CONTENT_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentence_support(answer: str, references: Sequence[Reference]) -> tuple[int, int]:
    """(supported, checked) sentences of the answer: each run of text up to its citations is
    a sentence citing those quotes; it is supported when every content word of it stands
    in one of them (SUPPORT_LETTERS letters shared). Each sentence after the last citation
    cites nothing, so nothing supports it: it is checked, and fails."""
    supported = checked = start = 0
    for match in _SENTENCE_CITES.finditer(answer):
        text, start = answer[start : match.start()], match.end()
        numbers = [int(n) for n in CITATION.findall(match[1]) if 1 <= int(n) <= len(references)]
        words = _content_words(text)
        if not numbers or not words:
            continue
        quoted = {
            w[:SUPPORT_LETTERS]
            for n in numbers
            for w in _CONTENT_WORD.findall(
                f"{references[n - 1].title} {references[n - 1].extract}".lower()
            )
        }
        checked += 1
        supported += all(w[:SUPPORT_LETTERS] in quoted for w in words)
    checked += sum(bool(_content_words(s)) for s in _SENTENCE_END.split(answer[start:]))
    return supported, checked


def _content_words(text: str) -> list[str]:
    return [w for w in _CONTENT_WORD.findall(text.lower()) if w not in _FUNCTION_WORDS]


def key_point_coverage(answer: str | None, key_points: Sequence[Sequence[str]]) -> float | None:
    """The share of key points the answer states (one of a point's phrases occurs in it)."""
    if not key_points:
        return None
    text = f" {normalize(answer or '')} "
    stated = sum(any(f" {normalize(p)} " in text for p in point) for point in key_points)
    return round(stated / len(key_points), 4)


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
        factoids = [o for o in done if o.kind == "factoid"]
        longform = [o for o in done if o.kind == "longform"]
        answerable = [o for o in done if o.kind != "unanswerable"]
        unanswerable = [o for o in done if o.kind == "unanswerable"]
        coverage = [o.key_points for o in longform if o.key_points is not None]
        answered = [o for o in done if o.answer]
        return {
            "policy": self.policy,
            "questions": count,
            "correct": _share(sum(o.correct for o in factoids), len(factoids)),
            "cited": _share(sum(o.cited for o in done), count),
            "faithful": _share(sum(checked), len(checked)),
            "invalid_action_rate": _share(sum(o.invalid_actions for o in done), actions),
            "actions_median": statistics.median(o.actions for o in done) if done else None,
            "actions_mean": round(actions / count, 2) if count else None,
            "wall_s_median": round(statistics.median(o.wall_s for o in done), 2) if done else None,
            "reward_mean": round(statistics.fmean(rewards), 4) if rewards else None,
            "errors": sum(o.error is not None for o in done),
            "declined": _share(sum(o.declined for o in done), count),
            "declined_answerable": _share(sum(o.declined for o in answerable), len(answerable)),
            "declined_unanswerable": _share(
                sum(o.declined for o in unanswerable), len(unanswerable)
            ),
            "longform_two_citations": _share(sum(o.long_enough for o in longform), len(longform)),
            "key_point_coverage": round(statistics.fmean(coverage), 4) if coverage else None,
            "support": _share(
                sum(o.supported_sentences for o in done), sum(o.checked_sentences for o in done)
            ),
            "degenerate": sum(o.degenerate is not None for o in done),
            "unedited": _share(sum(not o.shaped_by for o in answered), len(answered)),
        }

    def to_json(self) -> dict[str, Any]:
        return {"figures": self.figures(), "outcomes": [asdict(o) for o in self.outcomes]}


def recorded_outcomes(path: Path) -> list[dict[str, Any]]:
    """The outcomes of a `webgpt eval --json-out` file (PolicyReport.to_json, one report a
    policy), which must keep the quotes each episode collected."""
    import json

    try:
        reports = json.loads(path.read_text())
        outcomes = [outcome for report in reports for outcome in report["outcomes"]]
        if outcomes and not any("quotes" in outcome for outcome in outcomes):
            raise DataError(f"{path}: its outcomes keep no quotes; record it anew with webgpt eval")
        return outcomes
    except (OSError, ValueError, TypeError, KeyError) as error:
        raise DataError(f"{path}: not a `webgpt eval --json-out` file ({error})") from error


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
    follow_ups: bool = True,
) -> PolicyReport:
    """One episode per question, one at a time (wall time per question is a figure). A
    question with a history is a follow-up, browsed made standalone as the service browses
    one, or with follow_ups off as typed (to measure agent.followups)."""
    report = PolicyReport(name)
    for number, question in enumerate(questions, start=1):
        started = time.perf_counter()
        asked = question.question
        if question.history and follow_ups:
            asked = (await made_standalone(asked, question.history, policy)).question
        cache = web.new_cache()
        browser = web.session(cache=cache, config=session)
        try:
            result = await run_episode(0, browser, policy, asked, episode)
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
                    kind=question.kind,
                    key_points=key_point_coverage(None, question.key_points),
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
            [reward] = await scorer.score([ScoredAnswer(asked, result.answer_prompt, answer)])
        declined = is_declined(answer)
        supported, checked = (
            sentence_support(answer, result.references) if answer and not declined else (0, 0)
        )
        report.outcomes.append(
            Outcome(
                question=question.question,
                gold_answers=question.gold_answers,
                answer=answer,
                correct=answers_correctly(answer, question.gold_answers),
                cited=bool(answer) and bool(cited_numbers(answer or "", result.references)),
                faithful=faithful,
                actions=result.actions,
                invalid_actions=result.invalid_actions,
                wall_s=wall_s,
                end_reason=result.end_reason,
                reward=reward,
                kind=question.kind,
                declined=declined,
                sentences=distinct_sentence_count(answer or ""),
                distinct_citations=len(cited_numbers(answer or "", result.references)),
                key_points=key_point_coverage(answer, question.key_points),
                unshown=result.unshown,
                judgment=result.judgment,
                evidence=result.evidence,
                answerability=result.answerability,
                degenerate=degeneracy(answer, asked),
                shaped_by=result.shaped_by,
                checked_sentences=checked,
                supported_sentences=supported,
                quotes=[
                    {"title": q.title, "url": q.url, "extract": q.extract} for q in result.quotes
                ],
                timings={
                    "policy_s": round(result.timings.policy_s, 3),
                    "browser_s": round(result.timings.browser_s, 3),
                    "scoring_s": round(result.timings.scoring_s, 3),
                },
                asked=asked if asked != question.question else None,
                commands=[step.command for step in result.steps],
            )
        )
        if progress is not None:
            progress(number, len(questions), report)
    return report


async def evaluate_target(
    target: PolicyTarget,
    questions: Sequence[Question],
    *,
    store: Path | None,
    policy_key: str | None,
    policy_format: PolicyFormat = "completion",
    episode: EpisodeConfig,
    session: SessionConfig,
    scorer: Scorer | None = None,
    progress: Progress | None = None,
    follow_ups: bool = True,
) -> PolicyReport:
    """evaluate_policy for a policy named as `webgpt eval --policy` names it (a checkpoint is
    served by a local vLLM while it runs), on the offline web: `webgpt eval` and the
    promotion gate (agent.promotion) measure the same way."""
    web = offline_web(store)
    try:
        async with serving(target, policy_key, episode.guided, policy_format) as policy:
            return await evaluate_policy(
                target.label,
                policy,
                web,
                questions,
                episode=episode,
                session=session,
                scorer=scorer,
                progress=progress,
                follow_ups=follow_ups,
            )
    finally:
        await web.aclose()


def format_table(reports: Sequence[PolicyReport]) -> str:
    """The figures of each policy as a fixed-width table."""
    columns = [
        ("policy", "policy", "{}"),
        ("n", "questions", "{}"),
        ("correct", "correct", "{:.1%}"),
        ("cited", "cited", "{:.1%}"),
        ("faithful", "faithful", "{:.1%}"),
        ("declined", "declined", "{:.1%}"),
        ("declined: answerable", "declined_answerable", "{:.1%}"),
        ("declined: unanswerable", "declined_unanswerable", "{:.1%}"),
        ("long-form 2+ cited", "longform_two_citations", "{:.1%}"),
        ("key points", "key_point_coverage", "{:.1%}"),
        ("support", "support", "{:.1%}"),
        ("degenerate", "degenerate", "{}"),
        ("unedited", "unedited", "{:.1%}"),
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
