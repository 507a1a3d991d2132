"""Best-of-n, measured (`webgpt eval --best-of N`; WebGPT Appendix I).

N answers are sampled per question once. For every n <= N the expected figure of the answer
the reward model would pick out of n samples (drawn without replacement from the N) is
estimated without bias: with the N samples sorted by reward, ascending, the i-th (1-based)
is the best of a random n-subset with probability C(i-1, n-1) / C(N, n). Samples whose
rewards tie share their probability (the pick among them is random).
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from math import comb

from agent.answer import ScoredAnswer, Scorer
from agent.episode import EpisodeConfig
from agent.evaluate import sample_episodes
from agent.policy import Policy
from agent.questions import Question, contains_gold
from browser.session import SessionConfig
from browser.web import Web


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
    weights = [comb(i - 1, n - 1) / comb(total, n) for i in range(1, total + 1)]
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


def best_of_table(
    rewards: Sequence[Sequence[float]], correct: Sequence[Sequence[bool]]
) -> list[BestOfRow]:
    """Per n = 1..N, the figures averaged over questions (each with N samples). Rewards of
    answerless episodes (-inf) count as the lowest answered reward for the mean reward."""
    counts = {len(r) for r in rewards}
    if len(counts) != 1 or len(rewards) != len(correct):
        raise ValueError("every question needs the same number of samples")
    [total] = counts
    by_reward, by_correct = [], []  # per question: its samples valued by reward, by correct
    for question_rewards, question_correct in zip(rewards, correct, strict=True):
        floor = min((r for r in question_rewards if r != float("-inf")), default=0.0)
        by_reward.append([Sample(r, floor if r == float("-inf") else r) for r in question_rewards])
        by_correct.append(
            [Sample(r, float(c)) for r, c in zip(question_rewards, question_correct, strict=True)]
        )
    rows = []
    for n in range(1, total + 1):
        picked_reward = sum(best_of_n(samples, n) for samples in by_reward)
        picked_correct = sum(best_of_n(samples, n) for samples in by_correct)
        rows.append(BestOfRow(n, picked_reward / len(rewards), picked_correct / len(rewards)))
    return rows


@dataclass
class BestOfSamples:
    """N sampled answers per question, scored once: what every best-of-n figure is
    estimated from."""

    policy: str
    rewards: list[list[float]] = field(default_factory=list)  # per question, N rewards
    correct: list[list[bool]] = field(default_factory=list)

    def table(self) -> list[BestOfRow]:
        return best_of_table(self.rewards, self.correct)


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
            [a is not None and contains_gold(a.answer, question.gold_answers) for a in answers]
        )
        if progress is not None:
            progress(number, len(questions))
    return collected


def format_best_of(label: str, rows: Sequence[BestOfRow]) -> str:
    lines = [f"best-of-n for {label}", "  n  reward  correct", "---  ------  -------"]
    lines += [f"{row.n:3d}  {row.reward:6.3f}  {row.correct:7.1%}" for row in rows]
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
