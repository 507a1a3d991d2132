"""Reinforcement learning in the browsing environment (`webgpt train rl`).

WebGPT's RL (paper 000 §3, Appendix E): the policy browses and answers in real episodes;
the reward is the reward model's score of the final answer only, with a KL penalty that
keeps the policy near the behavior-cloned one. Built on TRL's `GRPOTrainer`, not a loop of
our own: its `rollout_func` runs our episodes (agent.episode.run_episode on the offline
web, the policy sampling in this process through agent.hf_policy) and returns each
episode as token ids, and the trainer does the rest (group-relative advantages, the
clipped objective, `beta` × the per-token KL to the reference, logging).

How an episode becomes one training sequence. Our prompts are rebuilt at every step (the
current page, the quotes, the past actions: agent.prompts), so an episode is not one
growing transcript. It is packed: the first browsing prompt is the "prompt"; the
"completion" is command 1, prompt 2, command 2, …, the answer prompt, the answer. The
environment mask (`env_mask`) is 1 on the policy's tokens and 0 on every prompt token,
so the loss, the KL and the entropy cover the policy's tokens only. The log-probabilities
are computed with position ids that restart at every prompt and no attention mask, which
transformers turns into a block-diagonal causal mask (packed sequences): each command is
scored given exactly the prompt it was sampled from, never the earlier steps' text. A test
checks that the packed log-probabilities equal those of each step scored alone.

WebGPT's details: the action limit is drawn per episode from a range; a share of groups
are answer-only (one episode browses, its quotes are kept, and the group is that many
answers written from them; an episode without quotes browses again, a few times at
most, then the group trains whole episodes or answers another question); one
optimisation epoch per batch of rollouts; training
stops once the mean KL passes a budget. The result, the LoRA weights merged into the
starting policy, is published into the policy registry with the parent policy, the reward
model and the questions it was trained on.
"""

import asyncio
import hashlib
import itertools
import json
import math
import random
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TextIO

from agent.bc import LORA_TARGETS
from agent.comparisons import ANSWER_ONLY_BROWSE_TRIES, comparison_rows, judge
from agent.episode import EpisodeConfig, EpisodeResult, run_episode
from agent.errors import ConfigurationError, DataError
from agent.hf_policy import TransformersPolicy
from agent.policy import Completion, Completions, Policy, Sampling, StreamChunk
from agent.questions import Question, contains_gold, load_questions
from agent.registry import is_adapter, load_policy_manifest
from agent.trace import Reference
from browser.observation import OBSERVATION_FORMAT_VERSION
from browser.session import SessionConfig
from browser.web import Web
from infra.checkpoints import discard, publish, staging_folder
from infra.errors import CheckpointError
from reward.factory import load_reward_manifest

# other questions an answer-only group tries (`--unquoted swap`) before it falls back to whole
# episodes: one unquoted question in a few dozen would otherwise cost a whole-episode group
ANSWER_ONLY_SWAPS = 3


@dataclass
class RLTrainConfig:
    """Fields become `webgpt train rl` options (help from metadata)."""

    policy: Path = field(metadata={"help": "Hugging Face folder of the policy to start from"})
    reward_model: Path = field(metadata={"help": "reward model checkpoint folder"})
    questions: Path = field(metadata={"help": "questions JSONL (with gold answers)"})
    out: Path = field(metadata={"help": "registry folder; the checkpoint goes to OUT/VERSION"})
    version: str = field(default="rl-0001", metadata={"help": "checkpoint version name"})
    split: str = field(default="train", metadata={"help": "train on questions of this split"})
    steps: int = field(default=20, metadata={"help": "optimizer steps (one per rollout batch)"})
    questions_per_step: int = field(default=2, metadata={"help": "questions in a rollout batch"})
    episodes_per_question: int = field(
        default=4, metadata={"help": "episodes a question (a group; at least 2)"}
    )
    learning_rate: float = field(default=1e-5, metadata={"help": "AdamW learning rate"})
    beta: float = field(default=0.05, metadata={"help": "KL penalty coefficient (> 0)"})
    kl_budget: float = field(
        default=0.5, metadata={"help": "stop once the mean per-token KL passes this"}
    )
    max_minutes: float | None = field(
        default=None,
        metadata={"help": "stop after this many minutes of training (the checkpoint is kept)"},
    )
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature"})
    min_actions: int = field(default=6, metadata={"help": "action limit drawn from min..max"})
    max_actions: int = field(default=12, metadata={"help": "action limit drawn from min..max"})
    answer_only_share: float = field(
        default=0.25, metadata={"help": "share of groups that only answer from kept quotes"}
    )
    unquoted: str = field(
        default="episodes",
        metadata={
            "help": "an answer-only group whose question was never quoted: 'episodes' trains "
            "whole episodes of it (~20x the tokens), 'swap' answers another question (up to "
            f"{ANSWER_ONLY_SWAPS} tried)"
        },
    )
    no_answer_reward: float = field(
        default=-2.0, metadata={"help": "reward of an episode that ends without an answer"}
    )
    lora_rank: int = field(default=16, metadata={"help": "LoRA rank of the trained weights"})
    max_tokens: int = field(
        default=8192, metadata={"help": "tokens of a packed episode; later turns left out"}
    )
    comparisons_out: Path | None = field(
        default=None,
        metadata={
            "help": "also append every group's answers as synthetic comparisons (JSONL, as "
            "`webgpt comparisons generate`): data to refresh the reward model where RL goes"
        },
    )
    store: Path | None = field(default=None, metadata={"help": "offline web file"})
    seed: int = field(default=0, metadata={"help": "sampling and question-order seed"})


@dataclass
class RLResult:
    checkpoint: Path
    manifest_metrics: dict[str, Any]
    log_history: list[dict[str, float]]
    parameters_changed: bool


# -- one episode as one packed training sequence --------------------------------------


@dataclass(frozen=True)
class Turn:
    """One policy call of an episode: the prompt it saw and the text it wrote, with the
    stop string when it stopped there (the text the BC examples train on)."""

    prompt: str
    completion: str


@dataclass
class PackedEpisode:
    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]  # 1: the policy wrote the token; 0: a prompt (observation) token
    segment_lengths: list[int]  # prompt_ids, then each (completion, next prompt + …) run


def pack_episode(tokenizer: Any, turns: Sequence[Turn]) -> PackedEpisode:
    """Prompts are encoded as the serving engine encodes them (special tokens included),
    completions as plain continuation tokens: exactly agent.bc.tokenize_example."""
    if not turns:
        raise ValueError("an episode with no policy call has nothing to train on")
    prompt_ids: list[int] = tokenizer(turns[0].prompt)["input_ids"]
    completion_ids: list[int] = []
    env_mask: list[int] = []
    segments = [len(prompt_ids)]
    for index, turn in enumerate(turns):
        if index > 0:
            ids = tokenizer(turn.prompt)["input_ids"]
            completion_ids += ids
            env_mask += [0] * len(ids)
            segments.append(len(ids))
        ids = tokenizer(turn.completion, add_special_tokens=False)["input_ids"]
        completion_ids += ids
        env_mask += [1] * len(ids)
        segments[-1] += len(ids)  # a completion continues its prompt's positions
    return PackedEpisode(prompt_ids, completion_ids, env_mask, segments)


def pack_within(
    tokenizer: Any, turns: Sequence[Turn], fits: Callable[[PackedEpisode], bool]
) -> tuple[PackedEpisode, int]:
    """The episode packed, less its last turns while it does not fit (the first turn is
    always kept), and how many turns were kept. A long episode's first turns still carry
    its reward: the group needs every episode, and the last turns go untrained."""
    kept = len(turns)
    packed = pack_episode(tokenizer, turns)
    while kept > 1 and not fits(packed):
        kept -= 1
        packed = pack_episode(tokenizer, turns[:kept])
    return packed, kept


class SegmentTable:
    """Where each packed episode's prompts start, found again from its token ids.

    TRL hands the model padded rows (prompt left-padded, completion right-padded); the
    trainer's forward hook asks this table for position ids that restart at every prompt.
    Pads get positions of their own segments, so no real token attends to them."""

    def __init__(self) -> None:
        self._segments: dict[bytes, list[int]] = {}

    def clear(self) -> None:
        self._segments.clear()

    def add(self, episode: PackedEpisode) -> None:
        self._segments[self._key(episode.prompt_ids + episode.completion_ids)] = (
            episode.segment_lengths
        )

    def position_ids(self, input_ids: Any, attention_mask: Any) -> Any:
        import torch

        rows = []
        for ids, mask in zip(input_ids.tolist(), attention_mask.tolist(), strict=True):
            real = [i for i, m in enumerate(mask) if m]
            first, last = (real[0], real[-1] + 1) if real else (len(ids), len(ids))
            segments = self._segments.get(self._key(ids[first:last]))
            if segments is None:
                raise RuntimeError("a row the rollouts did not produce reached the model")
            positions = list(range(first))  # left pads: a segment of their own
            for length in segments:
                positions += range(length)
            positions += range(len(ids) - last)  # right pads: another
            rows.append(positions)
        return torch.tensor(rows, device=input_ids.device)

    @staticmethod
    def _key(ids: Sequence[int]) -> bytes:
        return hashlib.sha256(json.dumps(list(ids)).encode()).digest()


def packed_positions_hook(segments: SegmentTable) -> Callable[..., Any]:
    """A forward pre-hook (with kwargs) that scores packed episodes: position ids that
    restart at every prompt, and no attention mask, from which transformers builds the
    block-diagonal causal mask of packed sequences."""

    def hook(_module: Any, args: tuple[Any, ...], inputs: dict[str, Any]) -> Any:
        inputs["position_ids"] = segments.position_ids(
            inputs["input_ids"], inputs["attention_mask"]
        )
        inputs["attention_mask"] = None
        inputs["use_cache"] = False  # with a cache, transformers does not look for packing
        return args, inputs

    return hook


# -- rollouts ------------------------------------------------------------------------------


class RecordingPolicy:
    """Passes calls to a policy and records each (prompt, completion) turn."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.turns: list[Turn] = []

    @property
    def name(self) -> str:
        return self.policy.name

    async def complete(self, prompt: str, sampling: Sampling) -> Completions:
        result = await self.policy.complete(prompt, sampling)
        self._record(prompt, result.choices[0], sampling)
        return result

    async def stream(self, prompt: str, sampling: Sampling) -> AsyncIterator[StreamChunk]:
        # one chunk: in-process sampling has nothing to stream, and the turn needs the
        # finish reason that only a whole completion carries
        result = await self.complete(prompt, sampling)
        yield StreamChunk(result.choices[0].text, result.usage)

    def _record(self, prompt: str, choice: Completion, sampling: Sampling) -> None:
        ended = choice.finish_reason == "stop" and sampling.stop
        self.turns.append(Turn(prompt, choice.text + (sampling.stop[0] if ended else "")))


async def recorded_episode(
    web: Web,
    policy: Policy,
    question: Question,
    session_config: SessionConfig,
    episode_config: EpisodeConfig,
) -> tuple[EpisodeResult, list[Turn]]:
    """One real episode of the agent on `web`, with every policy call recorded."""
    recorder = RecordingPolicy(policy)
    cache = web.new_cache()
    try:
        session = web.session(cache=cache, config=session_config)
        result = await run_episode(0, session, recorder, question.question, episode_config)
    finally:
        await cache.aclose()
    return result, recorder.turns


@dataclass
class Rollout:
    """One episode (or one answer of an answer-only group) as the trainer sees it."""

    question: Question
    turns: list[Turn]
    packed: PackedEpisode
    reward: float
    answered: bool
    correct: bool
    answer_only: bool


@dataclass
class RolloutStats:
    episodes: int = 0
    answered: int = 0
    correct: int = 0
    answer_only: int = 0
    answer_only_fallbacks: int = 0  # answer-only groups that found no quotes to answer from
    answer_only_swaps: int = 0  # answer-only groups that answered another question instead
    truncated: int = 0  # episodes longer than max_tokens: their last turns left out
    tokens: int = 0
    policy_tokens: int = 0


class EpisodeRollouts:
    """TRL's `rollout_func`: real episodes for a batch of prompts (questions)."""

    def __init__(
        self,
        config: RLTrainConfig,
        questions: Sequence[Question],
        open_web: Callable[[], Web],
        score: Callable[[list[str]], list[float]],
        tokenizer: Any,
        segments: SegmentTable,
    ) -> None:
        self.config = config
        self.by_text = {q.question: q for q in questions}
        self.open_web = open_web
        self.score = score
        self.tokenizer = tokenizer
        self.segments = segments
        self.rng = random.Random(config.seed)
        self.loop = asyncio.new_event_loop()  # the web's clients live on one loop
        self.web: Web | None = None
        self.last_batch: list[Rollout] = []
        self.stats = RolloutStats()
        # appended to as groups finish (line-buffered): a run stopped early keeps its rows
        self.comparisons: TextIO | None = None
        if config.comparisons_out is not None:
            config.comparisons_out.parent.mkdir(parents=True, exist_ok=True)
            self.comparisons = config.comparisons_out.open("a", encoding="utf-8", buffering=1)

    def close(self) -> None:
        if self.web is not None:
            self.loop.run_until_complete(self.web.aclose())
        self.loop.close()
        if self.comparisons is not None:
            self.comparisons.close()

    def __call__(self, prompts: list[str], trainer: Any) -> dict[str, Any]:
        model = trainer.accelerator.unwrap_model(trainer.model)
        policy = TransformersPolicy(model, self.tokenizer, name="rl")
        was_training = model.training
        model.eval()
        try:
            rollouts = self.loop.run_until_complete(self.sample(prompts, policy))
        finally:
            model.train(was_training)
        self.segments.clear()
        for rollout in rollouts:
            self.segments.add(rollout.packed)
        self.last_batch = rollouts
        metrics = trainer._metrics["train"]
        metrics["episodes/answered"].append(sum(r.answered for r in rollouts) / len(rollouts))
        metrics["episodes/correct"].append(sum(r.correct for r in rollouts) / len(rollouts))
        metrics["episodes/policy_tokens"].append(
            sum(sum(r.packed.env_mask) for r in rollouts) / len(rollouts)
        )
        return {
            "prompt_ids": [r.packed.prompt_ids for r in rollouts],
            "completion_ids": [r.packed.completion_ids for r in rollouts],
            # sampling log-probs are for vLLM's importance-sampling correction; rollouts
            # here sample from the trained weights themselves (on-policy)
            "logprobs": None,
            "env_mask": [r.packed.env_mask for r in rollouts],
            "episode_reward": [r.reward for r in rollouts],
        }

    async def sample(self, prompts: list[str], policy: Policy) -> list[Rollout]:
        """The episodes of a batch of prompts, packed and scored. Every episode of the batch
        runs at once, so that an in-process policy generates their calls together; what is
        drawn at random (answer-only groups, action limits) is drawn first, in order, so a
        seed gives the same batch whatever order the episodes finish in."""
        if self.web is None:
            self.web = self.open_web()
        groups = []
        # consecutive copies of a question form its group (TRL repeats each prompt
        # num_generations times in a row)
        for text, copies in itertools.groupby(prompts):
            size = len(list(copies))
            question = self.by_text.get(text)
            if question is None:
                raise DataError(f"a prompt that is not one of the questions: {text!r}")
            answer_only = self.rng.random() < self.config.answer_only_share
            limits = [
                self.rng.randint(self.config.min_actions, self.config.max_actions)
                for _ in range(size)
            ]
            if answer_only:
                swaps: list[Question] = []
                if self.config.unquoted == "swap":
                    others = [q for q in self.by_text.values() if q != question]
                    swaps = self.rng.sample(others, min(ANSWER_ONLY_SWAPS, len(others)))
                groups.append(self._answer_only_group(question, swaps, policy, limits))
            else:
                groups.append(self._episode_group(question, policy, limits))
        return [rollout for group in await asyncio.gather(*groups) for rollout in group]

    def _episode_config(self) -> EpisodeConfig:
        # no guided decoding in process: commands go through the browser's parser, and an
        # invalid one costs an action, as in WebGPT
        return EpisodeConfig(temperature=self.config.temperature, guided=False)

    async def _browse(
        self, question: Question, policy: Policy, max_actions: int
    ) -> tuple[EpisodeResult, list[Turn]]:
        assert self.web is not None
        session_config = SessionConfig(max_actions=max_actions)
        return await recorded_episode(
            self.web, policy, question, session_config, self._episode_config()
        )

    async def _episode_group(
        self, question: Question, policy: Policy, limits: list[int]
    ) -> list[Rollout]:
        episodes = await asyncio.gather(*(self._browse(question, policy, n) for n in limits))
        with_answer = [r for r, _ in episodes if r.answer and r.answer_prompt]
        texts = [(r.answer_prompt or "") + (r.answer or "") for r in with_answer]
        scores = iter(self.score(texts) if texts else [])
        await self._write_comparisons(
            question, [(r.answer or "", r.references) for r in with_answer]
        )
        group = []
        for result, turns in episodes:
            answered = bool(result.answer and result.answer_prompt)
            reward = next(scores) if answered else self.config.no_answer_reward
            answer = result.answer if answered else None
            group.append(self._rollout(question, turns, answer, reward, answer_only=False))
        return group

    async def _answer_only_group(
        self, question: Question, swaps: list[Question], policy: Policy, limits: list[int]
    ) -> list[Rollout]:
        """One episode collects quotes (not trained on); the group is `len(limits)` answers
        written from them (WebGPT's answer-only episodes: less variance in the answer's
        reward, since the quotes are the same).

        An episode that kept no quotes has nothing to answer from, so the group browses
        again, up to `ANSWER_ONLY_BROWSE_TRIES` episodes (one at a time, each with the next
        drawn action limit). A question still unquoted then either falls back to a group
        of whole episodes (`unquoted="episodes"`: it trains `len(limits)` full episodes,
        ~20x the tokens of an answer-only group) or is swapped for the first of `swaps`
        (drawn up front, up to `ANSWER_ONLY_SWAPS`) that gets quoted (`unquoted="swap"`:
        the group answers that question's quotes; it only falls back when none is quoted,
        since one fallback group costs a CPU run more than all its other steps together)."""
        asked = question
        browse = await self._quoting_episode(question, policy, limits)
        for swap in swaps:
            if browse is not None:
                break
            question = swap
            browse = await self._quoting_episode(question, policy, limits)
        if browse is None or browse.answer_prompt is None:
            self.stats.answer_only_fallbacks += 1
            return await self._episode_group(asked, policy, limits)
        if question != asked:
            self.stats.answer_only_swaps += 1
        prompt = browse.answer_prompt
        sampling = Sampling(
            temperature=self.config.temperature,
            max_tokens=self._episode_config().answer_max_tokens,
            stop=("■",),
        )
        recorders = [RecordingPolicy(policy) for _ in limits]
        completions = await asyncio.gather(*(r.complete(prompt, sampling) for r in recorders))
        answers = [c.choices[0].text.strip() for c in completions]
        scores = self.score([prompt + text for text in answers])
        await self._write_comparisons(question, [(text, browse.references) for text in answers])
        return [
            self._rollout(question, recorder.turns, text, score, answer_only=True)
            for recorder, text, score in zip(recorders, answers, scores, strict=True)
        ]

    async def _quoting_episode(
        self, question: Question, policy: Policy, limits: list[int]
    ) -> EpisodeResult | None:
        """The first of up to `ANSWER_ONLY_BROWSE_TRIES` browsing episodes that kept quotes
        (it has an answer prompt); None when none did."""
        for max_actions in limits[:ANSWER_ONLY_BROWSE_TRIES]:
            result, _ = await self._browse(question, policy, max_actions)
            if result.answer_prompt is not None:
                return result
        return None

    async def _write_comparisons(
        self, question: Question, answers: Sequence[tuple[str, Sequence[Reference]]]
    ) -> None:
        """A group's answers, judged by the synthetic rule, as comparison rows: the
        policy's own answers, for the reward model to be retrained where RL takes it."""
        if self.comparisons is None:
            return
        assert self.web is not None
        judged = [await judge(question, text, refs, self.web) for text, refs in answers if text]
        for row in comparison_rows(question, judged):
            self.comparisons.write(json.dumps(row | {"policy": self.config.version}) + "\n")

    def _rollout(
        self,
        question: Question,
        turns: list[Turn],
        answer: str | None,
        reward: float,
        *,
        answer_only: bool,
    ) -> Rollout:
        packed, kept = pack_within(
            self.tokenizer,
            turns,
            lambda p: len(p.prompt_ids) + len(p.completion_ids) <= self.config.max_tokens,
        )
        self.stats.episodes += 1
        self.stats.answer_only += answer_only
        self.stats.truncated += kept < len(turns)
        self.stats.tokens += len(packed.prompt_ids) + len(packed.completion_ids)
        self.stats.policy_tokens += sum(packed.env_mask)
        answered = answer is not None
        correct = answered and contains_gold(answer or "", question.gold_answers)
        self.stats.answered += answered
        self.stats.correct += correct
        return Rollout(question, turns, packed, reward, answered, correct, answer_only)


# -- the trainer ---------------------------------------------------------------------------


def _episode_trainer_class() -> type:
    """GRPOTrainer whose log-probabilities are computed on packed episodes (see the module
    docstring); built lazily so that importing this module does not import TRL."""
    with warnings.catch_warnings():
        # TRL imports vLLM where it is installed, and both warn on import (a vLLM newer
        # than TRL was tested with, torch deprecations): TRL's vLLM modes are not used here
        warnings.simplefilter("ignore")
        from trl.trainer.grpo_trainer import GRPOTrainer

    class EpisodeGRPOTrainer(GRPOTrainer):
        segments: SegmentTable

        def _get_per_token_logps_and_entropies(  # type: ignore[no-untyped-def]
            self, model, input_ids, attention_mask, logits_to_keep, *args, **kwargs
        ):
            handle = model.register_forward_pre_hook(
                packed_positions_hook(self.segments), with_kwargs=True
            )
            try:
                return super()._get_per_token_logps_and_entropies(
                    model, input_ids, attention_mask, logits_to_keep, *args, **kwargs
                )
            finally:
                handle.remove()

    return EpisodeGRPOTrainer


def train_rl(config: RLTrainConfig, log: Callable[[str], None] = print) -> RLResult:
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl.trainer.grpo_config import GRPOConfig

    from agent.learning_cli import offline_web
    from reward.scorer import RewardScorer

    _check(config)
    trainer_class = _episode_trainer_class()
    parent, base_model = _parent_of(config.policy)
    reward_version = load_reward_manifest(config.reward_model, verify=True).version
    questions = load_questions(config.questions, config.split)  # none: a DataError
    order = sorted(questions, key=lambda q: q.question)
    random.Random(config.seed).shuffle(order)
    unique = list({q.question: q for q in order}.values())
    if len(unique) < config.questions_per_step:
        raise DataError(
            f"{len(unique)} questions of split {config.split!r}: fewer than "
            f"--questions-per-step {config.questions_per_step}"
        )

    torch.manual_seed(config.seed)
    tokenizer = AutoTokenizer.from_pretrained(config.policy)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(config.policy, dtype=torch.float32)
    scorer = RewardScorer(config.reward_model)
    segments = SegmentTable()
    rollouts = EpisodeRollouts(
        config,
        unique,
        lambda: offline_web(config.store),
        scorer.score_texts,
        tokenizer,
        segments,
    )
    history: list[dict[str, float]] = []
    stop_reason = {"reason": "steps"}
    started = time.monotonic()

    class _Log(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            if not logs or "reward" not in logs:
                return
            entry = {k: float(v) for k, v in logs.items() if isinstance(v, int | float)}
            entry["step"] = state.global_step
            history.append(entry)
            log(
                f"step {state.global_step}/{state.max_steps}: reward {logs['reward']:.3f} "
                f"(std {logs.get('reward_std', math.nan):.3f}), KL {logs.get('kl', math.nan):.4f}, "
                f"entropy {logs.get('entropy', math.nan):.3f}, "
                f"correct {logs.get('episodes/correct', math.nan):.2f}, "
                f"answered {logs.get('episodes/answered', math.nan):.2f}"
            )
            if logs.get("kl", 0.0) > config.kl_budget:
                stop_reason["reason"] = f"KL {logs['kl']:.4f} passed the budget {config.kl_budget}"
                log(f"stopping: {stop_reason['reason']}")
                control.should_training_stop = True
            elif config.max_minutes is not None and (
                time.monotonic() - started > config.max_minutes * 60
            ):
                stop_reason["reason"] = f"the time budget of {config.max_minutes:g} minutes"
                log(f"stopping: {stop_reason['reason']}")
                control.should_training_stop = True

    group = config.episodes_per_question
    work = Path(tempfile.mkdtemp(prefix="webgpt-rl-"))
    arguments = GRPOConfig(
        output_dir=str(work),
        max_steps=config.steps,
        per_device_train_batch_size=config.questions_per_step * group,
        gradient_accumulation_steps=1,
        num_generations=group,
        num_iterations=1,  # one epoch per batch of rollouts, as WebGPT
        beta=config.beta,
        temperature=config.temperature,  # log-probs of what was sampled at this temperature
        learning_rate=config.learning_rate,
        lr_scheduler_type="constant",
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=config.seed,
        disable_tqdm=True,
        use_vllm=False,
        bf16=torch.cuda.is_available() and torch.cuda.is_bf16_supported(),
        dataloader_num_workers=0,
        dataloader_pin_memory=False,
    )
    try:
        with warnings.catch_warnings():
            # rollout_func is experimental in TRL: the version is pinned (pyproject) and tested
            warnings.filterwarnings("ignore", message="You are using 'rollout_func'")
            trainer = trainer_class(
                model=model,
                reward_funcs=[_episode_reward],
                args=arguments,
                train_dataset=Dataset.from_list([{"prompt": q.question} for q in unique]),
                processing_class=tokenizer,
                peft_config=LoraConfig(
                    r=config.lora_rank,
                    lora_alpha=2 * config.lora_rank,
                    lora_dropout=0.0,
                    target_modules=LORA_TARGETS,
                    task_type="CAUSAL_LM",
                ),
                rollout_func=rollouts,
                callbacks=[_Log()],
            )
        trainer.segments = segments
        before = _trainable_snapshot(trainer.model)
        trainer.train()
    finally:
        rollouts.close()
    changed = any(
        not torch.equal(before[name], value.detach().cpu())
        for name, value in trainer.model.named_parameters()
        if name in before
    )
    stats = rollouts.stats
    metrics: dict[str, Any] = {
        "trained": True,
        "method": "rl-grpo-lora",
        "parent": parent,
        "reward_model": reward_version,
        "questions_sha256": hashlib.sha256(config.questions.read_bytes()).hexdigest(),
        "questions": len(unique),
        "steps": trainer.state.global_step,
        "stop_reason": stop_reason["reason"],
        "episodes": stats.episodes,
        "answer_only_episodes": stats.answer_only,
        "answer_only_fallbacks": stats.answer_only_fallbacks,
        "answer_only_swaps": stats.answer_only_swaps,
        "answered": stats.answered / max(stats.episodes, 1),
        "correct": stats.correct / max(stats.episodes, 1),
        "truncated_episodes": stats.truncated,
        "tokens": stats.tokens,
        "policy_tokens": stats.policy_tokens,
        "first": _summary(history[:1]),
        "last": _summary(history[-1:]),
        "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
        "config": {f.name: _jsonable(getattr(config, f.name)) for f in fields(config)},
    }
    checkpoint = _publish(config, trainer.model, tokenizer, base_model, metrics, history, work)
    log(f"published {checkpoint}")
    return RLResult(checkpoint, metrics, history, changed)


def _episode_reward(completions: list[Any], episode_reward: list[float], **_: Any) -> list[float]:
    """The reward model's score of the episode's answer, computed during the rollout
    (WebGPT rewards only the final answer)."""
    return list(episode_reward)


def _check(config: RLTrainConfig) -> None:
    if config.episodes_per_question < 2:
        raise ConfigurationError("--episodes-per-question must be at least 2 (a group)")
    if config.beta <= 0:
        raise ConfigurationError("--beta must be above 0: the KL penalty keeps the policy near BC")
    if not 1 <= config.min_actions <= config.max_actions:
        raise ConfigurationError("--min-actions must be between 1 and --max-actions")
    if not 0 <= config.answer_only_share <= 1:
        raise ConfigurationError("--answer-only-share must be between 0 and 1")
    if config.unquoted not in ("episodes", "swap"):
        raise ConfigurationError("--unquoted must be 'episodes' or 'swap'")
    if config.steps < 1 or config.questions_per_step < 1:
        raise ConfigurationError("--steps and --questions-per-step must be at least 1")
    if config.max_minutes is not None and config.max_minutes <= 0:
        raise ConfigurationError("--max-minutes must be above 0")
    if config.comparisons_out is not None and config.comparisons_out.is_dir():
        raise ConfigurationError(f"--comparisons-out {config.comparisons_out} is a folder")


def _parent_of(folder: Path) -> tuple[str, str]:
    """(parent version, base model) of the starting policy: its manifest's when it is a
    registry checkpoint, else the folder's name."""
    if is_adapter(folder):
        raise ConfigurationError(
            f"{folder} is a LoRA adapter: start from full weights (`webgpt model prepare` "
            "publishes the default merged)"
        )
    try:
        manifest = load_policy_manifest(folder, verify=False)
    except CheckpointError:
        return folder.name, folder.name
    return manifest.version, manifest.base_model


def _trainable_snapshot(model: Any) -> dict[str, Any]:
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}


def _summary(entries: list[dict[str, float]]) -> dict[str, float]:
    keys = ("reward", "reward_std", "kl", "entropy", "episodes/correct", "episodes/answered")
    return {k: entries[0][k] for k in keys if entries and k in entries[0]}


def _publish(
    config: RLTrainConfig,
    model: Any,
    tokenizer: Any,
    base_model: str,
    metrics: dict[str, Any],
    history: list[dict[str, float]],
    work: Path,
) -> Path:
    import torch

    checkpoint = config.out / config.version
    try:
        with staging_folder(config.out, config.version) as staging:
            # full weights (LoRA merged into the starting policy): the parent is itself a
            # merged checkpoint, so an adapter of it would not load on the registry's base
            merged = model.merge_and_unload()
            merged.to(torch.bfloat16).save_pretrained(staging)
            tokenizer.save_pretrained(staging)
            (staging / "train_config.json").write_text(json.dumps(metrics["config"], indent=2))
            (staging / "train_log.jsonl").write_text(
                "".join(json.dumps(entry) + "\n" for entry in history)
            )
            publish(
                staging,
                checkpoint,
                kind="policy",
                version=config.version,
                base_model=base_model,
                observation_format_version=OBSERVATION_FORMAT_VERSION,
                metrics=metrics,
            )
    finally:
        discard(work)
    return checkpoint


def _jsonable(value: Any) -> Any:
    return str(value) if isinstance(value, Path) else value
