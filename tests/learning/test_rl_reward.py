"""One reward definition (learning.rl.reward): no answer, empty answers and declines are
rules of their own; the rest is the reward model's score or the outcome."""

from pathlib import Path

import pytest

from tests.agent.fake_policy import Script, fake_policy_app
from tests.learning.test_comparisons import MONA, QUESTION
from tests.learning.test_rl import rollouts_for, tiny_tokenizer_folder  # noqa: F401 (a fixture)
from tests.servers import serve
from webgpt.agent.declines import decline_answer
from webgpt.agent.episode import served_answer
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.trace import Reference
from webgpt.evals.questions import Question
from webgpt.learning.rl.config import RLConfig
from webgpt.learning.rl.reward import EpisodeAnswer, RewardRule, episode_rewards

FACTOID = Question(question="Who painted the Mona Lisa?", gold_answers=["Leonardo da Vinci"])
UNANSWERABLE = Question(question="Who won the 2038 FIFA World Cup?", kind="unanswerable")
LONGFORM = Question(
    question="How do crows recognise faces?",
    kind="longform",
    key_points=[["remember"], ["threat", "danger"], ["years"]],
)
PROMPT = "[1] quote\n[2] quote\nAnswer:■"
QUOTES = [
    Reference(
        n=1,
        domain="en.wikipedia.org",
        title="Mona Lisa",
        url="https://en.wikipedia.org/wiki/Mona_Lisa",
        extract="The Mona Lisa was painted by Leonardo da Vinci. Raphael saw it.",
    ),
    Reference(
        n=2,
        domain="en.wikipedia.org",
        title="Crow",
        url="https://en.wikipedia.org/wiki/Crow",
        extract="Crows remember faces. They remember a threat for years. Brazil is far.",
    ),
]


def answered(text: str, actions: int = 4) -> EpisodeAnswer:
    return EpisodeAnswer(PROMPT, served_answer(text, 2)[0], QUOTES, actions=actions)


class Recorder:
    """A reward model that scores a text by its length and records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    async def __call__(self, texts: list[str]) -> list[float]:
        self.asked.append(list(texts))
        return [len(text) / 100 for text in texts]


async def test_no_answer_empty_answers_and_declines_of_answerable_questions_are_rules() -> None:
    score = Recorder()
    rule = RewardRule(no_answer=-2.0, declined_answerable=-1.0)
    answers = [
        EpisodeAnswer(None, None, quotes=[]),  # no quote kept: nothing to answer from
        answered("   "),  # written, but empty once served
        answered(decline_answer(FACTOID.question) + " [1]"),  # served uncited: a decline
        answered("Leonardo da Vinci painted it [1] [7]."),  # [7] cites no quote
    ]

    rewards = await episode_rewards(FACTOID, answers, rule, score)

    assert rewards[:3] == [-2.0, -2.0, -1.0]
    # one request for the group, holding only what the rules leave to the model: the
    # answer as served, without its dangling citation
    assert score.asked == [[PROMPT + "Leonardo da Vinci painted it [1]."]]
    assert rewards[3] == len(PROMPT + "Leonardo da Vinci painted it [1].") / 100


async def test_the_model_scores_a_decline_of_an_unanswerable_question() -> None:
    score = Recorder()
    decline = decline_answer(UNANSWERABLE.question)

    [reward] = await episode_rewards(UNANSWERABLE, [answered(decline)], RewardRule(), score)

    assert score.asked == [[PROMPT + decline]] and reward == len(PROMPT + decline) / 100


async def test_the_outcome_reward_is_right_for_the_kind_cited_and_supported_less_the_actions() -> (
    None
):
    score = Recorder()
    rule = RewardRule(source="outcome", action_cost=0.01)

    async def rewards(question: Question, *texts: str) -> list[float]:
        return await episode_rewards(question, [answered(t) for t in texts], rule, score)

    assert await rewards(
        FACTOID,
        "Leonardo da Vinci painted it [1].",  # right and cited
        "Leonardo da Vinci painted it.",  # right, citing nothing
        "Raphael painted it [1].",  # cited, wrong
    ) == [1.0 - 0.04, -0.04, -0.04]
    assert await rewards(
        UNANSWERABLE, decline_answer(UNANSWERABLE.question), "Brazil won it [1]."
    ) == [1.0 - 0.04, -0.04]
    [covered] = await rewards(
        LONGFORM, "Crows remember faces [2]. They remember a threat for years [2]."
    )
    assert covered == 1.0 - 0.04
    [partly] = await rewards(LONGFORM, "Crows remember faces [2].")
    assert partly == pytest.approx(1 / 3 - 0.04, abs=1e-4)  # coverage is rounded
    # right, but a claim beyond its quote: half the reward; half of it supported: 3/4,
    # and so when the claim beyond cites nothing
    assert await rewards(
        FACTOID,
        "Leonardo da Vinci painted it in Florence [1].",
        "Leonardo da Vinci painted it [1]. It hangs in the Louvre [2].",
        "Leonardo da Vinci painted it [1]. It hangs in the Louvre.",
    ) == [0.5 - 0.04, 0.75 - 0.04, 0.75 - 0.04]
    assert score.asked == []  # the outcome needs no reward model


def test_both_group_kinds_reward_the_served_answer_by_the_one_rule(
    learning_store: Path,
    reward_checkpoint: Path,
    tiny_tokenizer_folder: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """An answer-only group used to score the raw text (a dangling citation, an empty
    answer) where whole episodes scored the served one; both now go through
    learning.rl.reward, on what would have been served."""
    from webgpt.reward.scorer import RewardScorer

    scorer = RewardScorer(reward_checkpoint)
    for share in (0.0, 1.0):  # whole episodes, then an answer-only group
        config = RLConfig(
            policy=tmp_path, reward_model=reward_checkpoint, questions=tmp_path, out=tmp_path,
            answer_only_share=share, min_actions=10, max_actions=10, store=learning_store,
        )  # fmt: skip
        rollouts = rollouts_for(config, tiny_tokenizer_folder, reward_checkpoint)
        raw = ["Leonardo da Vinci painted it [1] [9].", "   "]
        browsed = ["Browsed [1]."] if share else []  # the answer-only group's own browse
        script = Script(oracle_quote=MONA, answers=[*browsed, *raw], tokenizer=rollouts.tokenizer)
        with serve(fake_policy_app(script)) as base:
            policy = OpenAIPolicy(f"{base}/v1", "scripted", backoff_s=0.01)
            try:
                batch = rollouts.loop.run_until_complete(
                    rollouts.sample([QUESTION.question] * 2, policy)
                )
            finally:
                rollouts.loop.run_until_complete(policy.aclose())
                rollouts.close()
        assert [r.answer_only for r in batch] == [bool(share)] * 2
        by_text = {r.turns[-1].completion.removesuffix("■"): r for r in batch}
        served = by_text[raw[0]]
        [expected] = scorer.score_texts(
            [served.turns[-1].prompt + "Leonardo da Vinci painted it [1]."]
        )
        # Scored alone here, in a batch there: float32 noise, not a change.
        assert served.reward == pytest.approx(expected, abs=1e-4) and served.correct
        empty = by_text[raw[1]]
        assert empty.reward == config.no_answer_reward and not empty.answered
