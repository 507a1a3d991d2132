"""Best-of-n, measured (`webgpt eval --best-of N`; WebGPT Appendix I).

N answers are sampled per question once. For every n <= N the expected figure of the answer
the reward model would pick out of n samples (drawn without replacement from the N) is
estimated without bias: with the N samples sorted by reward, ascending, the i-th (1-based)
is the best of a random n-subset with probability C(i-1, n-1) / C(N, n). Samples whose
rewards tie share their probability (the pick among them is random).

Two policies sampled on the same questions are compared per question (`paired_difference`):
a question's difficulty is shared by both, so the standard error of the mean difference is
far smaller than that of either table, which is what separates them on a few dozen questions.
"""

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from webgpt.agent.episode import EpisodeConfig
from webgpt.agent.policy import Policy
from webgpt.agent.scoring import ScoredAnswer, Scorer
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web
from webgpt.evals.evaluate import sample_episodes
from webgpt.evals.questions import Question, answers_correctly


@dataclass(frozen=True)
class Sample:
    reward: float  # the reward model's score; -inf for an episode without an answer
    value: float  # the figure averaged over picks: correct (0/1) or the reward itself


def best_of_n(samples: Sequence[Sample], n: int) -> float:
    """The expected value of the highest-reward sample of n drawn from samples."""
    total = len(samples)
    if not 1 <= n <= total:
        raise ValueError(f"n must be between 1 and {total}, got {n}")
    ordered = sorted(samples, key=lambda s: s.reward)
    weights = [math.comb(i - 1, n - 1) / math.comb(total, n) for i in range(1, total + 1)]
    estimate = 0.0
    start = 0
    while start < total:  # a run of tied rewards: their weight spread over their values
        end = start
        while end + 1 < total and ordered[end + 1].reward == ordered[start].reward:
            end += 1
        run = ordered[start : end + 1]
        estimate += sum(weights[start : end + 1]) * sum(s.value for s in run) / len(run)
        start = end + 1
    return estimate


@dataclass(frozen=True)
class BestOfRow:
    n: int
    reward: float  # mean over questions of the picked answer's reward
    correct: float  # share of questions whose picked answer is correct


def _valued(rewards: Sequence[float], correct: Sequence[bool]) -> tuple[list[Sample], list[Sample]]:
    """One question's samples valued by reward and by correctness. An answerless episode
    (-inf) is picked last, and counts as the question's lowest answered reward in the mean."""
    floor = min((r for r in rewards if r != float("-inf")), default=0.0)
    by_reward = [Sample(r, floor if r == float("-inf") else r) for r in rewards]
    by_correct = [Sample(r, float(c)) for r, c in zip(rewards, correct, strict=True)]
    return by_reward, by_correct


def _sample_count(rewards: Sequence[Sequence[float]], correct: Sequence[Sequence[bool]]) -> int:
    counts = {len(r) for r in rewards}
    if len(counts) != 1 or len(rewards) != len(correct):
        raise ValueError("every question needs the same number of samples")
    [total] = counts
    return total


def best_of_table(
    rewards: Sequence[Sequence[float]], correct: Sequence[Sequence[bool]]
) -> list[BestOfRow]:
    """Per n = 1..N, the figures averaged over questions (each with N samples)."""
    total = _sample_count(rewards, correct)
    valued = [_valued(r, c) for r, c in zip(rewards, correct, strict=True)]
    rows = []
    for n in range(1, total + 1):
        picked_reward = sum(best_of_n(by_reward, n) for by_reward, _ in valued)
        picked_correct = sum(best_of_n(by_correct, n) for _, by_correct in valued)
        rows.append(BestOfRow(n, picked_reward / len(rewards), picked_correct / len(rewards)))
    return rows


@dataclass(frozen=True)
class PairedRow:
    """Best-of-n of one policy minus another's on the same questions, with one standard
    error of each mean (nan with a single question)."""

    n: int
    reward: float
    reward_se: float
    correct: float  # a share: 0.05 is five points
    correct_se: float


def _mean_and_error(differences: Sequence[float]) -> tuple[float, float]:
    mean = statistics.fmean(differences)
    if len(differences) < 2:
        return mean, math.nan
    return mean, statistics.stdev(differences) / math.sqrt(len(differences))


@dataclass
class BestOfSamples:
    """N sampled answers per question, scored once: what every best-of-n figure is
    estimated from."""

    policy: str
    questions: list[str] = field(default_factory=list)
    rewards: list[list[float]] = field(default_factory=list)  # per question, N rewards
    correct: list[list[bool]] = field(default_factory=list)

    def table(self) -> list[BestOfRow]:
        return best_of_table(self.rewards, self.correct)

    @classmethod
    def from_json(cls, policy: str, rows: object) -> "BestOfSamples":
        """The inverse of `to_json`; a ValueError names what is malformed."""
        samples = cls(policy)
        if not isinstance(rows, list):
            raise ValueError(f"{policy}: samples must be a list of questions")
        for row in rows:
            if not isinstance(row, dict) or not isinstance(row.get("question"), str):
                raise ValueError(f"{policy}: a sample row without its question: {row!r:.80}")
            rewards, correct = row.get("rewards"), row.get("correct")
            if not isinstance(rewards, list) or not isinstance(correct, list):
                raise ValueError(f"{policy}: {row['question']!r} needs rewards and correct lists")
            if len(rewards) != len(correct) or not all(isinstance(c, bool) for c in correct):
                raise ValueError(f"{policy}: {row['question']!r}: one boolean correct per reward")
            if not all(r is None or isinstance(r, int | float) for r in rewards):
                raise ValueError(f"{policy}: {row['question']!r}: rewards are numbers or null")
            samples.questions.append(row["question"])
            samples.rewards.append([float("-inf") if r is None else float(r) for r in rewards])
            samples.correct.append(list(correct))
        return samples

    def extend(self, other: "BestOfSamples") -> None:
        """Add another run's questions (the same policy, none of them already here)."""
        repeated = set(self.questions) & set(other.questions)
        if repeated:
            raise ValueError(
                f"{self.policy}: {len(repeated)} questions sampled twice, e.g. {min(repeated)!r}"
            )
        self.questions += other.questions
        self.rewards += other.rewards
        self.correct += other.correct

    def to_json(self) -> list[dict[str, object]]:
        """Per question, its samples' rewards (null: no answer) and correctness."""
        return [
            {
                "question": question,
                "rewards": [None if r == float("-inf") else r for r in rewards],
                "correct": correct,
            }
            for question, rewards, correct in zip(
                self.questions, self.rewards, self.correct, strict=True
            )
        ]


def paired_difference(base: BestOfSamples, other: BestOfSamples) -> list[PairedRow]:
    """Per n = 1..N, other's best-of-n figures minus base's, question by question."""
    if base.questions != other.questions:
        raise ValueError(f"{base.policy} and {other.policy} were sampled on other questions")
    total = _sample_count(base.rewards + other.rewards, base.correct + other.correct)
    pairs = [
        (_valued(br, bc), _valued(orw, oc))
        for br, bc, orw, oc in zip(
            base.rewards, base.correct, other.rewards, other.correct, strict=True
        )
    ]
    rows = []
    for n in range(1, total + 1):
        reward, correct = [], []
        for (base_reward, base_correct), (other_reward, other_correct) in pairs:
            reward.append(best_of_n(other_reward, n) - best_of_n(base_reward, n))
            correct.append(best_of_n(other_correct, n) - best_of_n(base_correct, n))
        rows.append(PairedRow(n, *_mean_and_error(reward), *_mean_and_error(correct)))
    return rows


def gain_over_one(samples: BestOfSamples) -> list[PairedRow]:
    """Per n = 1..N, the policy's best-of-n figures minus its own single sample's, question
    by question: what picking out of n buys, with the error that says whether it is real."""
    total = _sample_count(samples.rewards, samples.correct)
    valued = [_valued(r, c) for r, c in zip(samples.rewards, samples.correct, strict=True)]
    rows = []
    for n in range(1, total + 1):
        reward = [best_of_n(by_reward, n) - best_of_n(by_reward, 1) for by_reward, _ in valued]
        correct = [best_of_n(by_correct, n) - best_of_n(by_correct, 1) for _, by_correct in valued]
        rows.append(PairedRow(n, *_mean_and_error(reward), *_mean_and_error(correct)))
    return rows


async def sample_best_of(
    label: str,
    policy: Policy,
    web: Web,
    scorer: Scorer,
    questions: Sequence[Question],
    samples: int,
    *,
    episode: EpisodeConfig,
    session: SessionConfig,
    progress: Callable[[int, int], None] | None = None,
) -> BestOfSamples:
    collected = BestOfSamples(label)
    for number, question in enumerate(questions, start=1):
        collected.questions.append(question.question)
        results = await sample_episodes(
            question.question, policy, web, samples, episode=episode, session=session
        )
        answers = [
            ScoredAnswer(question.question, r.answer_prompt, r.answer)
            if r.answer and r.answer_prompt
            else None
            for r in results
        ]
        scores = iter(await scorer.score([a for a in answers if a is not None]))
        collected.rewards.append([float("-inf") if a is None else next(scores) for a in answers])
        collected.correct.append(
            [a is not None and answers_correctly(a.answer, question.gold_answers) for a in answers]
        )
        if progress is not None:
            progress(number, len(questions))
    return collected


def format_best_of(label: str, rows: Sequence[BestOfRow]) -> str:
    lines = [f"best-of-n for {label}", "  n  reward  correct", "---  ------  -------"]
    lines += [f"{row.n:3d}  {row.reward:6.3f}  {row.correct:7.1%}" for row in rows]
    return "\n".join(lines)


def format_paired(base: str, other: str, questions: int, rows: Sequence[PairedRow]) -> str:
    """A paired table; `gain_over_one`'s with other = base."""
    title = f"{other} minus {base}" if other != base else f"{base}: best-of-n minus one sample"
    lines = [
        f"{title}, paired over {questions} questions (± one standard error)",
        "  n  reward          correct (points)",
        "---  --------------  ----------------",
    ]
    lines += [
        f"{row.n:3d}  {row.reward:+6.3f} ± {row.reward_se:5.3f}  "
        f"{100 * row.correct:+5.1f} ± {100 * row.correct_se:4.1f}"
        for row in rows
    ]
    return "\n".join(lines)


def plot_best_of(curves: dict[str, list[BestOfRow]], path: str) -> None:
    """Figure 4 of the paper, per policy: the picked answer's reward and correctness
    against n (log scale). Needs matplotlib (the `model` extra)."""
    import matplotlib

    matplotlib.use("Agg")  # no display: write the file only
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    for label, rows in curves.items():
        ns = [row.n for row in rows]
        left.plot(ns, [row.reward for row in rows], marker="o", label=label)
        right.plot(ns, [100 * row.correct for row in rows], marker="o", label=label)
    for axis, title in ((left, "reward model score"), (right, "correct (%)")):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("n (samples the reward model picks from)")
        axis.set_title(title)
        axis.grid(alpha=0.3)
    right.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
