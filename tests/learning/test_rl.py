"""RL in the browsing environment: packing episodes, masking observations, a tiny run."""

import asyncio
import json
import math
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from tests.agent.fake_policy import Script, fake_policy_app
from tests.agent.test_quote_ranking import WordRanker
from tests.learning.test_bc import KillAt, Killed, build_tiny_policy
from tests.learning.test_comparisons import MONA, QUESTION
from tests.learning.test_demonstrations import scripted_demos
from tests.learning.test_record import webgpt
from tests.servers import serve
from webgpt.agent.errors import ConfigurationError, DataError
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.policy import Completions, Sampling, StreamChunk
from webgpt.agent.prompts import browsing_prompt
from webgpt.agent.quote_ranking import QuoteRanker
from webgpt.browser.web import Web, WebOptions
from webgpt.evals.questions import Question
from webgpt.infra.checkpoints import load_manifest
from webgpt.infra.errors import OptionsError
from webgpt.infra.trainer_options import parse_config
from webgpt.learning.bc import BCConfig, examples_of, train_bc
from webgpt.learning.demonstrations import Demonstration, write_demonstrations
from webgpt.learning.rl.config import RLConfig
from webgpt.learning.rl.packing import SegmentTable, Turn, pack_episode, packed_positions_hook
from webgpt.learning.rl.reward import RewardRule
from webgpt.learning.rl.rollouts import EpisodeRollouts
from webgpt.learning.rl.trainer import restore_rollout_state, save_rollout_state, train_rl
from webgpt.reward.data import load_comparisons
from webgpt.service.cli import build_parser, main

TURNS = [
    Turn(browsing_prompt("Question: who painted it?\n♦Next action"), "Search Mona Lisa\n"),
    Turn(browsing_prompt("Result 1: Mona Lisa\n♦Next action"), "Quote: painted by Leonardo\n"),
    Turn("Question: who painted it?\n[1] painted by Leonardo\nAnswer:", " Leonardo [1].■"),
]


@pytest.fixture(scope="module")
def tiny_tokenizer_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    texts = [t.prompt + t.completion for t in TURNS] * 20
    return build_tiny_policy(tmp_path_factory.mktemp("tiny-rl"), texts)


def test_an_episode_packs_into_one_sequence_with_observations_masked(
    tiny_tokenizer_folder: Path,
) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer_folder)
    packed = pack_episode(tokenizer, TURNS)

    assert packed.prompt_ids == tokenizer(TURNS[0].prompt)["input_ids"]
    assert len(packed.env_mask) == len(packed.completion_ids)
    policy = [t for t, m in zip(packed.completion_ids, packed.env_mask, strict=True) if m]
    observed = [t for t, m in zip(packed.completion_ids, packed.env_mask, strict=True) if not m]
    # the policy's tokens are exactly its completions; every prompt token is masked out
    assert tokenizer.decode(policy) == "".join(t.completion for t in TURNS)
    assert tokenizer.decode(observed) == TURNS[1].prompt + TURNS[2].prompt
    # segments: each prompt with the completion that answers it
    expected = [
        len(tokenizer(t.prompt)["input_ids"])
        + len(tokenizer(t.completion, add_special_tokens=False)["input_ids"])
        for t in TURNS
    ]
    assert packed.segment_lengths == expected
    assert sum(expected) == len(packed.prompt_ids) + len(packed.completion_ids)


def test_packed_log_probs_equal_each_step_scored_alone(tiny_tokenizer_folder: Path) -> None:
    """No command sees an earlier step's text: the packed forward scores every completion
    token as the step's own prompt → completion forward does, pads and all."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer_folder)
    model = AutoModelForCausalLM.from_pretrained(tiny_tokenizer_folder).eval()
    packed = pack_episode(tokenizer, TURNS)
    other = pack_episode(tokenizer, TURNS[:1])  # a shorter row in the same batch: padding
    segments = SegmentTable()
    segments.add(packed)
    segments.add(other)

    width_prompt = max(len(packed.prompt_ids), len(other.prompt_ids))
    width_completion = max(len(packed.completion_ids), len(other.completion_ids)) + 3
    pad = tokenizer.pad_token_id

    def row(episode: object) -> tuple[list[int], list[int]]:
        prompt, completion = episode.prompt_ids, episode.completion_ids  # type: ignore[attr-defined]
        left = width_prompt - len(prompt)
        right = width_completion - len(completion)
        return [pad] * left + prompt + completion + [pad] * right, [0] * left + [1] * (
            len(prompt) + len(completion)
        ) + [0] * right

    ids, mask = zip(*(row(e) for e in (packed, other)), strict=True)
    handle = model.register_forward_pre_hook(packed_positions_hook(segments), with_kwargs=True)
    try:
        with torch.no_grad():
            logits = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask)).logits
    finally:
        handle.remove()
    packed_logps = torch.log_softmax(logits[0], -1)

    offset = width_prompt - len(packed.prompt_ids)  # where the episode starts in its row
    for turn in TURNS:
        prompt = tokenizer(turn.prompt)["input_ids"]
        completion = tokenizer(turn.completion, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            alone = torch.log_softmax(
                model(input_ids=torch.tensor([prompt + completion])).logits[0], -1
            )
        for i, token in enumerate(completion):
            at = len(prompt) + i - 1  # the logits that predict this token
            assert math.isclose(
                float(packed_logps[offset + at, token]), float(alone[at, token]), abs_tol=1e-4
            )
        offset += len(prompt) + len(completion)


def test_a_row_the_rollouts_did_not_produce_is_refused(tiny_tokenizer_folder: Path) -> None:
    import torch

    with pytest.raises(RuntimeError, match="did not produce"):
        SegmentTable().position_ids(torch.tensor([[5, 6, 7]]), torch.tensor([[1, 1, 1]]))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"episodes_per_question": 1}, "at least 2"),
        ({"beta": 0.0}, "above 0"),
        ({"min_actions": 9, "max_actions": 4}, "--min-actions"),
        ({"answer_only_share": 1.5}, "--answer-only-share"),
        ({"unquoted": "skip"}, "--unquoted"),
        ({"max_minutes": 0.0}, "--max-minutes"),
        ({"comparisons_out": Path("/")}, "--comparisons-out / is a folder"),
    ],
)
def test_bad_settings_are_refused_before_loading_anything(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):  # most when the config is made
        config = RLConfig(
            policy=tmp_path / "missing",
            reward_model=tmp_path / "missing-rm",
            questions=tmp_path / "missing.jsonl",
            out=tmp_path / "registry",
            **change,  # type: ignore[arg-type]
        )
        train_rl(config, log=lambda _: None)


def rollouts_for(
    config: RLConfig,
    tokenizer_folder: Path,
    reward_checkpoint: Path,
    questions: Sequence[Question] = (QUESTION,),
    quote_ranker: QuoteRanker | None = None,
) -> EpisodeRollouts:
    from transformers import AutoTokenizer

    from webgpt.reward.scorer import RewardScorer

    return EpisodeRollouts(
        config,
        questions,
        lambda: Web(WebOptions(offline_store=config.store, offline_only=True, js_mode="never")),
        RewardScorer(reward_checkpoint).score_texts,
        AutoTokenizer.from_pretrained(tokenizer_folder),
        SegmentTable(),
        quote_ranker=quote_ranker,
    )


class Concurrency:
    """A policy that counts how many of its calls were in flight at once."""

    def __init__(self, policy: OpenAIPolicy) -> None:
        self.policy, self.name = policy, policy.name
        self.in_flight = self.most_at_once = 0

    async def complete(self, prompt: str, sampling: Sampling) -> Completions:
        self.in_flight += 1
        self.most_at_once = max(self.most_at_once, self.in_flight)
        try:
            await asyncio.sleep(0.05)  # long enough for the others to ask too
            return await self.policy.complete(prompt, sampling)
        finally:
            self.in_flight -= 1

    def stream(self, prompt: str, sampling: Sampling) -> AsyncIterator[StreamChunk]:
        return self.policy.stream(prompt, sampling)

    async def aclose(self) -> None:
        await self.policy.aclose()


def test_rollouts_are_real_episodes_packed_with_the_policy_tokens_unmasked(
    learning_store: Path, reward_checkpoint: Path, tiny_tokenizer_folder: Path, tmp_path: Path
) -> None:
    from webgpt.reward.scorer import RewardScorer

    config = RLConfig(
        policy=tmp_path, reward_model=reward_checkpoint, questions=tmp_path, out=tmp_path,
        answer_only_share=0.0, min_actions=10, max_actions=10, store=learning_store,
    )  # fmt: skip
    rollouts = rollouts_for(config, tiny_tokenizer_folder, reward_checkpoint)
    script = Script(
        tokenizer=rollouts.tokenizer,  # the sampled token ids RL trains
        oracle_quote=MONA,  # search, open the first result, quote it, end
        answers=["Leonardo da Vinci painted it [1].", "Raphael painted it [1]."],
        default_command="Scrolled down 1",  # the third episode never quotes
    )
    with serve(fake_policy_app(script)) as base:
        policy = Concurrency(OpenAIPolicy(f"{base}/v1", "scripted", backoff_s=0.01))
        try:
            batch = rollouts.loop.run_until_complete(
                rollouts.sample([QUESTION.question] * 2, policy)
            )
            script.oracle_quote = None  # the next group browses without ever quoting
            batch += rollouts.loop.run_until_complete(rollouts.sample([QUESTION.question], policy))
        finally:
            rollouts.loop.run_until_complete(policy.aclose())
            rollouts.close()

    assert policy.most_at_once == 2  # the group's episodes ran together
    *browsed, unanswered = batch
    # the two episodes ran at once: which asked for an answer first is up to the scheduler
    right, wrong = sorted(browsed, key=lambda r: not r.turns[-1].completion.startswith("Leo"))
    commands = [t.completion for t in right.turns[:-1]]
    assert commands == [
        f"Search {QUESTION.question}\n", "Clicked on link 0\n", f"Quote: {MONA}\n", "End: Answer\n",
    ]  # fmt: skip
    assert right.turns[-1].completion == "Leonardo da Vinci painted it [1].■"
    assert wrong.turns[-1].completion == "Raphael painted it [1].■"
    assert (right.correct, wrong.correct, unanswered.answered) == (True, False, False)
    scores = RewardScorer(reward_checkpoint).score_texts(
        [r.turns[-1].prompt + r.turns[-1].completion[:-1] for r in (right, wrong)]
    )
    # Scored in another batch (other padding, another order): float32 noise, not a change.
    assert [right.reward, wrong.reward] == pytest.approx(scores, abs=1e-4)
    assert unanswered.reward == config.no_answer_reward
    assert len(unanswered.turns) == 10  # its action limit, every turn a command
    tokenizer = rollouts.tokenizer
    for rollout in batch:  # observation tokens are masked out, the policy's are not
        packed = rollout.packed
        mine = [t for t, m in zip(packed.completion_ids, packed.env_mask, strict=True) if m]
        seen = [t for t, m in zip(packed.completion_ids, packed.env_mask, strict=True) if not m]
        assert tokenizer.decode(mine) == "".join(t.completion for t in rollout.turns)
        assert tokenizer.decode(seen) == "".join(t.prompt for t in rollout.turns[1:])
        assert "♦Next action" in tokenizer.decode(packed.prompt_ids)


def test_answer_only_groups_answer_from_one_episode_s_quotes(
    learning_store: Path, reward_checkpoint: Path, tiny_tokenizer_folder: Path, tmp_path: Path
) -> None:
    config = RLConfig(
        policy=tmp_path, reward_model=reward_checkpoint, questions=tmp_path, out=tmp_path,
        answer_only_share=1.0, store=learning_store,
        comparisons_out=tmp_path / "data" / "rl-comparisons.jsonl",
    )  # fmt: skip
    rollouts = rollouts_for(config, tiny_tokenizer_folder, reward_checkpoint)
    answers = ["Browsing answer [1].", "Leonardo da Vinci [1].", "Raphael [1].", "Titian [1]."]
    script = Script(oracle_quote=MONA, answers=list(answers), tokenizer=rollouts.tokenizer)
    with serve(fake_policy_app(script)) as base:
        policy = Concurrency(OpenAIPolicy(f"{base}/v1", "scripted", backoff_s=0.01))
        try:
            batch = rollouts.loop.run_until_complete(
                rollouts.sample([QUESTION.question] * 3, policy)
            )
        finally:
            rollouts.loop.run_until_complete(policy.aclose())
            rollouts.close()

    assert [r.answer_only for r in batch] == [True] * 3
    assert policy.most_at_once == 3  # the three answers were written together
    written = {r.turns[0].completion: r.correct for r in batch}  # in the order they came
    assert written == {a + "■": a.startswith("Leonardo") for a in answers[1:]}
    assert len({r.turns[0].prompt for r in batch}) == 1  # one episode's quotes
    assert MONA in batch[0].turns[0].prompt
    assert all(all(r.packed.env_mask) for r in batch)  # the answer is all policy tokens
    assert rollouts.stats.answer_only == 3
    # the group's own answers, judged by the synthetic rule, for the reward model's refresh
    assert config.comparisons_out is not None
    rows = [json.loads(line) for line in config.comparisons_out.read_text().splitlines()]
    winner = {
        frozenset((r["a"]["answer"], r["b"]["answer"])): r[r["preference"]]["answer"]
        if r["preference"] != "tie" else "tie"
        for r in rows
    }  # fmt: skip
    good, *wrong = answers[1:]
    assert winner == {
        frozenset((good, wrong[0])): good,
        frozenset((good, wrong[1])): good,
        frozenset(wrong): "tie",
    }
    assert {(r["source"], r["policy"], r["split"]) for r in rows} == {
        ("synthetic", "rl-0001", "train")
    }
    assert rows[0]["a"]["quotes"][0]["extract"] == MONA
    assert load_comparisons([config.comparisons_out])[1].used == 3


def test_answer_only_groups_browse_again_when_an_episode_kept_no_quotes(
    learning_store: Path, reward_checkpoint: Path, tiny_tokenizer_folder: Path, tmp_path: Path
) -> None:
    config = RLConfig(
        policy=tmp_path, reward_model=reward_checkpoint, questions=tmp_path, out=tmp_path,
        answer_only_share=1.0, store=learning_store,
    )  # fmt: skip
    rollouts = rollouts_for(config, tiny_tokenizer_folder, reward_checkpoint)
    # the first browsing episode gives up at once; the second quotes and answers
    script = Script(
        commands=["End: Nonsense"],
        oracle_quote=MONA,
        answers=["Browsed [1]."],
        tokenizer=rollouts.tokenizer,
    )
    with serve(fake_policy_app(script)) as base:
        policy = OpenAIPolicy(f"{base}/v1", "scripted", backoff_s=0.01)
        try:
            batch = rollouts.loop.run_until_complete(
                rollouts.sample([QUESTION.question] * 3, policy)
            )
            script.oracle_quote = None  # no episode ever quotes: whole episodes after 3 tries
            script.default_command = "End: Nonsense"
            requests_before = len(script.requests)
            fallback = rollouts.loop.run_until_complete(
                rollouts.sample([QUESTION.question] * 4, policy)
            )
        finally:
            rollouts.loop.run_until_complete(policy.aclose())
            rollouts.close()

    assert [r.answer_only for r in batch] == [True] * 3
    assert len({r.turns[0].prompt for r in batch}) == 1
    assert MONA in batch[0].turns[0].prompt
    assert [r.answer_only for r in fallback] == [False] * 4
    assert not any(r.answered for r in fallback)
    # three browsing tries, then the group's four whole episodes: one command each
    assert len(script.requests) - requests_before == 3 + 4
    assert rollouts.stats.answer_only_fallbacks == 1


# a seed whose swaps for the crow question are the raven question, then the Mona Lisa's
SWAP_SEED = 3


def test_answer_only_groups_swap_a_question_never_quoted_for_another(
    learning_store: Path, reward_checkpoint: Path, tiny_tokenizer_folder: Path, tmp_path: Path
) -> None:
    config = RLConfig(
        policy=tmp_path, reward_model=reward_checkpoint, questions=tmp_path, out=tmp_path,
        answer_only_share=1.0, unquoted="swap", min_actions=3, max_actions=3,
        store=learning_store, seed=SWAP_SEED,
    )  # fmt: skip
    # the oracle quotes the Mona Lisa sentence, which no page about crows or ravens has
    crows = Question(question="What can crows recognise?", gold_answers=["faces"], split="train")
    ravens = Question(question="Can ravens plan ahead?", gold_answers=["yes"], split="train")
    questions = [crows, ravens, QUESTION]
    rollouts = rollouts_for(config, tiny_tokenizer_folder, reward_checkpoint, questions)
    answers = ["Leonardo da Vinci [1].", "Raphael [1].", "Titian [1]."]
    script = Script(
        oracle_quote=MONA, answers=["Browsed [1].", *answers], tokenizer=rollouts.tokenizer
    )
    with serve(fake_policy_app(script)) as base:
        policy = OpenAIPolicy(f"{base}/v1", "scripted", backoff_s=0.01)
        try:
            batch = rollouts.loop.run_until_complete(rollouts.sample([crows.question] * 3, policy))
        finally:
            rollouts.loop.run_until_complete(policy.aclose())
            rollouts.close()

    observed = [r["prompt"] for r in script.requests if "♦Question\n" in r["prompt"]]
    browsed = [p.split("♦Question\n", 1)[1].split("\n", 1)[0] for p in observed]
    # three tries at the crow question (three actions each), three at the first swap, the
    # raven question, then one at the second swap, the Mona Lisa's
    assert browsed[:18] == [crows.question] * 9 + [ravens.question] * 9
    assert set(browsed[18:]) == {QUESTION.question}
    assert [r.question for r in batch] == [QUESTION] * 3
    assert [r.answer_only for r in batch] == [True] * 3
    assert MONA in batch[0].turns[0].prompt
    assert sorted(r.turns[0].completion for r in batch) == sorted(a + "■" for a in answers)
    assert (rollouts.stats.answer_only_swaps, rollouts.stats.answer_only_fallbacks) == (1, 0)


@pytest.fixture(scope="module")
def tiny_bc(learning_store: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a tiny policy behavior-cloned on one scripted demonstration, its file): a policy
    that browses, quotes and answers often enough for rewards to differ within a group."""
    folder = tmp_path_factory.mktemp("tiny-bc")

    async def demonstrate() -> list[Demonstration]:
        web = Web(WebOptions(offline_store=learning_store, offline_only=True, js_mode="never"))
        try:
            return await scripted_demos(web)
        finally:
            await web.aclose()

    demos = [d.model_copy(update={"split": "train"}) for d in asyncio.run(demonstrate())]
    demos = [d for d in demos if not d.meta.get("detour")][:1]
    demo_file = folder / "demos.jsonl"
    write_demonstrations(demo_file, demos)
    texts = [e.prompt + e.completion for d in demos for e in examples_of(d)]
    checkpoint = train_bc(
        BCConfig(
            demonstrations=[demo_file],
            base=build_tiny_policy(folder / "base", texts),
            out=folder / "registry",
            version="bc-tiny",
            num_train_epochs=40,
            learning_rate=5e-3,
            per_device_train_batch_size=4,
            validation_fraction=0.0,
            lora_rank=0,
            validity_prompts=0,
        ),
        log=lambda _: None,
    ).checkpoint
    return checkpoint, demo_file


def rl_config(tiny_bc: tuple[Path, Path], reward: Path, store: Path, out: Path) -> RLConfig:
    policy, questions = tiny_bc
    return RLConfig(
        policy=policy,
        reward_model=reward,
        questions=questions,  # demonstration rows carry questions and gold answers
        out=out,
        version="rl-tiny",
        max_steps=4,
        questions_per_step=1,
        episodes_per_question=3,
        learning_rate=5e-3,
        beta=0.05,
        kl_budget=100.0,
        min_actions=4,
        max_actions=8,
        answer_only_share=0.5,
        store=store,
    )


@pytest.mark.slow  # a few minutes on 2 cores: a tiny BC policy, then RL on real episodes
def test_rl_on_real_episodes_logs_reward_and_kl_and_changes_the_policy(
    tiny_bc: tuple[Path, Path], learning_store: Path, reward_checkpoint: Path, tmp_path: Path
) -> None:
    lines: list[str] = []
    config = rl_config(tiny_bc, reward_checkpoint, learning_store, tmp_path / "registry")

    result = train_rl(config, log=lines.append)

    history = result.log_history
    assert [entry["step"] for entry in history] == [1, 2, 3, 4]
    assert all(math.isfinite(entry["reward"]) and math.isfinite(entry["kl"]) for entry in history)
    assert all("entropy" in entry and "episodes/correct" in entry for entry in history)
    assert history[0]["kl"] == 0.0  # the first batch is sampled from the BC policy itself
    # A group whose rewards are all equal (every episode unanswered, say) has no advantage,
    # and at the BC weights no KL gradient either: the policy moves from the first step
    # whose rewards differed, and every later batch comes from a policy away from BC.
    differed = [i for i, entry in enumerate(history) if entry["reward_std"] > 0]
    learned = differed[0] if differed else len(history)
    assert learned < len(history) - 1, "no rewards differed before the last step"
    assert all(entry["kl"] > 0.0 for entry in history[learned + 1 :])
    assert any(line.startswith("step 4/4: reward") for line in lines)
    assert result.parameters_changed
    manifest = load_manifest(result.checkpoint, verify=True)
    assert manifest.kind == "policy" and manifest.version == "rl-tiny"
    assert manifest.metrics["parent"] == "bc-tiny"
    assert (manifest.metrics["reward_model"], manifest.metrics["reward_source"]) == (
        "rm-bon", "model"
    )  # fmt: skip
    assert manifest.metrics["steps"] == 4 and manifest.metrics["episodes"] == 12
    logged = [
        json.loads(line)
        for line in (result.checkpoint / "train_log.jsonl").read_text().splitlines()
    ]
    assert logged == history


@pytest.mark.slow
def test_rl_stops_at_the_kl_budget(
    tiny_bc: tuple[Path, Path], learning_store: Path, reward_checkpoint: Path, tmp_path: Path
) -> None:
    lines: list[str] = []
    config = rl_config(tiny_bc, reward_checkpoint, learning_store, tmp_path / "registry")
    config.max_steps, config.answer_only_share, config.kl_budget = 6, 1.0, 1e-9

    result = train_rl(config, log=lines.append)

    assert result.manifest_metrics["steps"] < 6
    assert result.manifest_metrics["stop_reason"].startswith("KL")
    assert any(line.startswith("stopping: KL") for line in lines)


@pytest.mark.slow
def test_rl_on_the_outcome_reward_needs_no_reward_model(
    tiny_bc: tuple[Path, Path], learning_store: Path, reward_checkpoint: Path, tmp_path: Path
) -> None:
    config = rl_config(tiny_bc, reward_checkpoint, learning_store, tmp_path / "registry")
    # a reward model named beside the outcome is neither read (this folder is missing) nor
    # recorded: the outcome asks it for no score
    config.reward_source, config.reward_model = "outcome", tmp_path / "missing-rm"
    config.max_steps, config.answer_only_share = 2, 1.0

    result = train_rl(config, log=lambda _: None)

    assert [entry["step"] for entry in result.log_history] == [1, 2]
    for entry in result.log_history:
        # 1 for a right, cited answer, 0 for another, less for a decline or none: the mean
        # reward is at most the share right, which a reward model's scores need not be
        assert -2.0 <= entry["reward"] <= entry["episodes/correct"] + 1e-6  # float32 means
    manifest = load_manifest(result.checkpoint, verify=True)
    assert manifest.metrics["reward_model"] is None and manifest.metrics["steps"] == 2
    assert manifest.metrics["reward_source"] == "outcome"


@pytest.mark.slow
def test_rl_stops_at_its_time_budget_and_keeps_the_checkpoint(
    tiny_bc: tuple[Path, Path], learning_store: Path, reward_checkpoint: Path, tmp_path: Path
) -> None:
    lines: list[str] = []
    config = rl_config(tiny_bc, reward_checkpoint, learning_store, tmp_path / "registry")
    config.max_steps, config.answer_only_share, config.max_minutes = 6, 1.0, 1e-6

    result = train_rl(config, log=lines.append)

    assert result.manifest_metrics["steps"] == 1  # the budget is checked after each step
    assert result.manifest_metrics["stop_reason"] == "the time budget of 1e-06 minutes"
    assert "stopping: the time budget of 1e-06 minutes" in lines
    assert load_manifest(result.checkpoint, verify=True).version == "rl-tiny"


@pytest.mark.slow  # starts a process
def test_the_command_refuses_rl_without_a_kl_penalty(tmp_path: Path) -> None:
    result = webgpt(
        "train", "rl", "--policy", str(tmp_path), "--reward-model", str(tmp_path),
        "--questions", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "registry"),
        "--beta", "0", home=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1
    assert "--beta must be above 0" in result.stderr
    assert not (tmp_path / "registry").exists()


def rl_options(*options: str) -> RLConfig:
    """`webgpt train rl OPTIONS` as the command reads them."""
    args = build_parser().parse_args(["train", "rl", *options])
    return parse_config(RLConfig, args.options, "webgpt train rl")


def test_train_rl_reads_a_config_file_that_flags_override(tmp_path: Path) -> None:
    from trl.trainer.grpo_config import GRPOConfig

    run = tmp_path / "run.yaml"
    run.write_text(
        "policy: policy\nreward_model: rm\nquestions: questions.jsonl\nout: registry\n"
        "version: rl-9\nsteps: 50\nquestions-per-step: 4\nepisodes_per_question: 3\n"
        "learning_rate: 3e-4\nbeta: 0.1\ntemperature: 0.9\nmin_actions: 4\nmax_actions: 10\n"
        "answer_only_share: 1.0\nunquoted: swap\nseed: 3\nsave_steps: 5\n"
        "reward_source: outcome\naction_cost: 0.01\n"
    )
    config = rl_options("--config", str(run), "--beta", "0.2", "--max-tokens", "4096")
    # the one reward definition the rollouts apply (learning.rl.reward)
    assert config.reward_rule == RewardRule("outcome", -2.0, -1.0, 0.01)
    with pytest.raises(ConfigurationError, match="--reward-source must be one of"):
        rl_options("--config", str(run), "--reward-source", "vibes")

    assert isinstance(config, GRPOConfig)
    assert (config.max_steps, config.learning_rate, config.beta) == (50, 3e-4, 0.2)
    assert (config.num_generations, config.per_device_train_batch_size) == (3, 12)  # 4 groups
    # what the rollouts read, under the names they read
    assert (config.temperature, config.min_actions, config.max_actions) == (0.9, 4, 10)
    assert (config.answer_only_share, config.unquoted, config.seed) == (1.0, "swap", 3)
    assert (config.questions_per_step, config.episodes_per_question) == (4, 3)
    assert (config.max_tokens, config.no_answer_reward, config.version) == (4096, -2.0, "rl-9")
    assert config.comparisons_out is None and config.store is None
    assert (config.save_strategy, config.save_steps) == ("steps", 5)
    assert config.output_dir == str(Path("registry") / "rl-9.work")
    # GRPOConfig's own options are options too; the two the batch decides are not
    assert rl_options("--config", str(run), "--epsilon", "0.3", "--steps", "7").epsilon == 0.3
    with pytest.raises(OptionsError, match="--num_generations"):
        rl_options("--config", str(run), "--num_generations", "5")
    with pytest.raises(ConfigurationError, match="--beta must be above 0"):
        rl_options("--config", str(run), "--beta", "0")
    outcome = rl_options(
        "--policy", "p", "--questions", "q", "--out", "o", "--reward-source", "outcome"
    )
    assert outcome.reward_model is None and outcome.reward_rule.source == "outcome"
    with pytest.raises(ConfigurationError, match="give --reward-model"):
        rl_options("--policy", "p", "--questions", "q", "--out", "o")
    required = rl_options("--policy", "p", "--reward-model", "r", "--questions", "q", "--out", "o")
    assert (required.save_strategy, required.report_to, required.bf16) == ("no", [], False)
    assert (required.max_steps, required.learning_rate, required.lr_scheduler_type) == (
        20, 1e-5, "constant",
    )  # fmt: skip


def test_train_verl_reads_its_options_and_a_config_file(tmp_path: Path) -> None:
    from webgpt.learning.rl.verl import VerlRunConfig

    run = tmp_path / "verl.yaml"
    run.write_text("policy: p\nreward_model: r\nquestions: q\nout: verl-run\nkl_coef: 0.02\n")
    options = ["--config", str(run), "--reward-url", "http://rm:8000/v1", "--batch-size", "32"]
    args = build_parser().parse_args(["train", "verl", *options])
    config = parse_config(VerlRunConfig, args.options, "webgpt train verl")
    assert (config.policy, config.out, config.kl_coef) == (Path("p"), Path("verl-run"), 0.02)
    assert (config.reward_url, config.batch_size, config.gpus_per_node) == (
        "http://rm:8000/v1", 32, 8,
    )  # fmt: skip


def test_the_rollout_sampler_s_state_goes_into_a_checkpoint_and_back(
    learning_store: Path, reward_checkpoint: Path, tiny_tokenizer_folder: Path, tmp_path: Path
) -> None:
    """The Trainer restores its own RNGs on resume; the sampler's draws (answer-only
    groups, action limits) and counts are ours to save beside its checkpoint."""
    config = RLConfig(
        policy=tmp_path, reward_model=reward_checkpoint, questions=tmp_path, out=tmp_path,
        store=learning_store,
    )  # fmt: skip
    first = rollouts_for(config, tiny_tokenizer_folder, reward_checkpoint)
    first.rng.random()
    first.stats.episodes, first.stats.correct, first.stats.answer_only_swaps = 12, 5, 1
    save_rollout_state(first, tmp_path, process=0)
    ahead = [first.rng.random() for _ in range(3)]
    again = rollouts_for(config, tiny_tokenizer_folder, reward_checkpoint)
    restore_rollout_state(again, tmp_path, process=0)
    try:
        assert [again.rng.random() for _ in range(3)] == ahead
        assert again.stats == first.stats and again.stats is not first.stats
        with pytest.raises(ConfigurationError, match="cut short while saving"):
            restore_rollout_state(again, tmp_path, process=1)
    finally:
        first.close()
        again.close()


@pytest.mark.slow  # two RL steps and two dev episodes on 2 cores, a minute or two
def test_a_killed_rl_run_resumes_from_its_checkpoint_with_a_config_file(
    tiny_bc: tuple[Path, Path],
    learning_store: Path,
    reward_checkpoint: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    policy, demos = tiny_bc
    questions = tmp_path / "questions.jsonl"  # the demonstrations' to train on, one of dev
    dev = QUESTION.model_copy(update={"split": "dev"})
    questions.write_text(demos.read_text() + dev.model_dump_json() + "\n")
    out = tmp_path / "registry"
    run = tmp_path / "run.yaml"
    run.write_text(
        f"policy: {policy}\nreward_model: {reward_checkpoint}\nquestions: {questions}\n"
        f"out: {out}\nstore: {learning_store}\nversion: rl-resumed\nsteps: 2\n"
        "questions_per_step: 1\nepisodes_per_question: 3\nlearning_rate: 5e-3\n"
        "kl_budget: 100\nmin_actions: 4\nmax_actions: 8\nanswer_only_share: 0.5\n"
        "save_steps: 1\ndev_steps: 1\ndev_questions: 1\n"
    )

    with pytest.raises(Killed):  # the process ends in step 2, after checkpoint 1
        train_rl(rl_options("--config", str(run)), log=lambda _: None, callbacks=[KillAt(2)])
    work = out / "rl-resumed.work"
    saved = json.loads((work / "checkpoint-1" / "rollouts-0.json").read_text())
    assert saved["stats"]["episodes"] == 3
    assert main(["train", "rl", "--config", str(run), "--resume"]) == 0

    checkpoint = Path(capsys.readouterr().out.strip().splitlines()[-1])
    metrics = load_manifest(checkpoint, verify=True).metrics
    assert (metrics["resumed_from_step"], metrics["steps"]) == (1, 2)
    assert metrics["episodes"] == 6  # step 1's counts came back with its checkpoint
    logged = [
        json.loads(line) for line in (checkpoint / "train_log.jsonl").read_text().splitlines()
    ]
    assert [entry["step"] for entry in logged] == [1, 2]  # the whole run's log
    # the dev evaluation, beside the loss at every step: one greedy episode
    assert all({"reward", "dev/reward", "dev/answered", "dev/correct"} <= set(e) for e in logged)
    assert metrics["dev_last"]["dev/answered"] in (0.0, 1.0)
    assert not list(work.glob("checkpoint-*"))  # published: its checkpoints are gone


@pytest.mark.parametrize(
    ("split", "per_step", "message"),
    [
        ("dev", 1, "has no questions in split 'train'"),
        ("train", 2, "fewer than --questions-per-step 2"),
    ],
)
def test_too_few_questions_are_refused_before_training(
    reward_checkpoint: Path, tmp_path: Path, split: str, per_step: int, message: str
) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text(QUESTION.model_copy(update={"split": split}).model_dump_json() + "\n")
    config = RLConfig(
        policy=tmp_path / "policy", reward_model=reward_checkpoint, questions=questions,
        out=tmp_path / "registry", questions_per_step=per_step,
    )  # fmt: skip
    with pytest.raises(DataError, match=message):
        train_rl(config, log=lambda _: None)
    assert not (tmp_path / "registry").exists()


def test_rollouts_decode_as_the_service_does(
    learning_store: Path,
    reward_checkpoint: Path,
    tiny_tokenizer_folder: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Trained as served: the rollouts' episodes are guided, keep the answer rules of a
    service with its default settings, and decode with the quote ranker the service loads
    (the shipped one, unless WEBGPT_QUOTE_RANKER names another)."""
    from webgpt.agent.model import quote_ranker_path
    from webgpt.service.settings import ServiceSettings

    ranker = WordRanker("genus")
    config = RLConfig(
        policy=tmp_path, reward_model=reward_checkpoint, questions=tmp_path, out=tmp_path,
        store=learning_store, temperature=0.7,
    )  # fmt: skip
    rollouts = rollouts_for(config, tiny_tokenizer_folder, reward_checkpoint, quote_ranker=ranker)
    try:
        served = ServiceSettings(_env_file=None).episode_config(temperature=0.7)
        assert rollouts._episode_config() == served
        assert served.guided and rollouts._episode_config().quote_ranker is ranker
    finally:
        rollouts.close()
    for named in (None, "none", "folder"):
        if named is None:
            monkeypatch.delenv("WEBGPT_QUOTE_RANKER")
        else:
            monkeypatch.setenv("WEBGPT_QUOTE_RANKER", named)
        config = RLConfig(
            policy=tmp_path, questions=tmp_path, out=tmp_path, reward_source="outcome"
        )
        assert quote_ranker_path(config.quote_ranker) == ServiceSettings().quote_ranker
