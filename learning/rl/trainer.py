"""The trainer: TRL's GRPOTrainer on packed episodes, and `train_rl`, the run."""

import asyncio
import copy
import hashlib
import json
import math
import random
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from webgpt.agent.errors import ConfigurationError, DataError
from webgpt.agent.hf_policy import TransformersPolicy
from webgpt.agent.model import load_quote_ranker, quote_ranker_path
from webgpt.evals.questions import load_questions
from webgpt.infra.known_warnings import trainer_import_warnings_silenced
from webgpt.learning.bc import LORA_TARGETS
from webgpt.learning.rl.config import RLConfig, RLResult
from webgpt.learning.rl.packing import SegmentTable, packed_positions_hook
from webgpt.learning.rl.publish import parent_of, publish_policy
from webgpt.learning.rl.rollouts import EpisodeRollouts
from webgpt.learning.runs import (
    CHECKPOINT_PREFIX,
    checkpoint_to_resume,
    discard_checkpoints,
)
from webgpt.reward.manifest import load_reward_manifest


def _episode_trainer_class() -> type:
    """GRPOTrainer whose log-probabilities are computed on packed episodes (see the package
    docstring); built lazily so that importing this module does not import TRL."""
    with trainer_import_warnings_silenced():
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


def train_rl(
    config: RLConfig,
    log: Callable[[str], None] = print,
    callbacks: Sequence[Any] = (),
) -> RLResult:
    """Train, then publish OUT/VERSION. `callbacks` are more TrainerCallbacks. An exception
    on the way leaves the work folder as it was, so the run continues from its last
    checkpoint (`--save-steps`) with `resume`."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from webgpt.browser.web import offline_web
    from webgpt.reward.scorer import RewardScorer

    if config.comparisons_out is not None and config.comparisons_out.is_dir():
        raise ConfigurationError(f"--comparisons-out {config.comparisons_out} is a folder")
    work = Path(str(config.output_dir))
    resume_from = checkpoint_to_resume(work, config.resume, config.resume_from_checkpoint)
    trainer_class = _episode_trainer_class()
    parent, base_model = parent_of(config.policy)
    # the outcome reward asks no reward model: one given is neither loaded nor recorded
    reward_model = config.reward_model if config.reward_source == "model" else None
    reward_version = (
        load_reward_manifest(reward_model, verify=True).version if reward_model else None
    )
    questions = load_questions(config.questions, config.split)  # none: a DataError
    order = sorted(questions, key=lambda q: q.question)
    random.Random(config.seed).shuffle(order)
    unique = list({q.question: q for q in order}.values())
    if len(unique) < config.questions_per_step:
        raise DataError(
            f"{len(unique)} questions of split {config.split!r}: fewer than "
            f"--questions-per-step {config.questions_per_step}"
        )
    dev_questions = []  # --dev-steps: a DataError when --questions has none of split dev
    if config.dev_steps:
        dev_questions = load_questions(config.questions, "dev")[: config.dev_questions]

    torch.manual_seed(config.seed)
    tokenizer = AutoTokenizer.from_pretrained(config.policy)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(config.policy, dtype=torch.float32)
    score = RewardScorer(reward_model).score_texts if reward_model else _no_reward_model
    ranker = load_quote_ranker(quote_ranker_path(config.quote_ranker), log)
    segments = SegmentTable()
    rollouts = EpisodeRollouts(
        config,
        unique,
        lambda: offline_web(config.store),
        score,
        tokenizer,
        segments,
        quote_ranker=ranker,
    )
    dev = None
    try:
        if dev_questions:
            dev = EpisodeRollouts(
                _dev_config(config),
                dev_questions,
                lambda: offline_web(config.store),
                score,
                tokenizer,
                SegmentTable(),
                quote_ranker=ranker,
            )
        if resume_from is not None:
            restore_rollout_state(rollouts, resume_from, config.process_index)
            log(f"resuming from {resume_from}")
        evaluation = (
            DevEvaluation(dev, [q.question for q in dev_questions], config.dev_steps, tokenizer)
            if dev is not None
            else None
        )
        steps = StepLog(config, log)
        with warnings.catch_warnings():
            # rollout_func is experimental in TRL: the version is pinned (pyproject) and tested
            warnings.filterwarnings("ignore", message="You are using 'rollout_func'")
            trainer = trainer_class(
                model=model,
                reward_funcs=[_episode_reward],
                args=copy.copy(config),
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
                callbacks=[
                    steps,
                    RolloutStateCallback(rollouts),
                    *([evaluation] if evaluation is not None else []),
                    *callbacks,
                ],
            )
        trainer.segments = segments
        if evaluation is not None:
            evaluation.trainer = trainer
        before = _trainable_snapshot(trainer.model)
        trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    finally:
        rollouts.close()
        if dev is not None:
            dev.close()
        if ranker is not None:
            asyncio.run(ranker.aclose())
    changed = any(
        not torch.equal(before[name], value.detach().cpu())
        for name, value in trainer.model.named_parameters()
        if name in before
    )
    # the whole run's, a resumed one's included (the Trainer keeps it in its checkpoints)
    history = [
        {k: float(v) for k, v in entry.items() if isinstance(v, int | float)}
        | {"step": int(entry["step"])}
        for entry in trainer.state.log_history
        if "reward" in entry or "dev/reward" in entry
    ]
    training = [entry for entry in history if "reward" in entry]
    evaluated = [entry for entry in history if "dev/reward" in entry]
    stats = rollouts.stats
    metrics: dict[str, Any] = {
        "trained": True,
        "method": "rl-grpo-lora",
        "parent": parent,
        "reward_source": config.reward_source,
        "reward_model": reward_version,
        "quote_ranker": ranker.name if ranker else None,
        "questions_sha256": hashlib.sha256(config.questions.read_bytes()).hexdigest(),
        "questions": len(unique),
        "steps": trainer.state.global_step,
        "resumed_from_step": _step_of(resume_from) if resume_from else None,
        "stop_reason": steps.stop_reason,
        "episodes": stats.episodes,
        "answer_only_episodes": stats.answer_only,
        "answer_only_fallbacks": stats.answer_only_fallbacks,
        "answer_only_swaps": stats.answer_only_swaps,
        "answered": stats.answered / max(stats.episodes, 1),
        "correct": stats.correct / max(stats.episodes, 1),
        "truncated_episodes": stats.truncated,
        "tokens": stats.tokens,
        "policy_tokens": stats.policy_tokens,
        "first": _summary(training[:1]),
        "last": _summary(training[-1:]),
        "dev_last": {k: v for k, v in evaluated[-1].items() if k.startswith("dev/")}
        if evaluated
        else None,
        "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
        "config": config.to_dict(),
    }
    checkpoint = publish_policy(config, trainer.model, tokenizer, base_model, metrics, history)
    discard_checkpoints(work)
    log(f"published {checkpoint}")
    return RLResult(checkpoint, metrics, history, changed)


class StepLog(TrainerCallback):
    """Prints each step's figures (and a dev evaluation's), and stops training once the
    mean KL passes `kl_budget` or `max_minutes` of this process have passed."""

    def __init__(self, config: RLConfig, log: Callable[[str], None]) -> None:
        self.config, self.log = config, log
        self.started = time.monotonic()
        self.stop_reason = "steps"

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
        if logs and "dev/reward" in logs:
            self.log(
                f"step {state.global_step}: dev reward {logs['dev/reward']:.3f}, "
                f"correct {logs['dev/correct']:.2f}, answered {logs['dev/answered']:.2f}"
            )
        if not logs or "reward" not in logs:
            return
        self.log(
            f"step {state.global_step}/{state.max_steps}: reward {logs['reward']:.3f} "
            f"(std {logs.get('reward_std', math.nan):.3f}), KL {logs.get('kl', math.nan):.4f}, "
            f"entropy {logs.get('entropy', math.nan):.3f}, "
            f"correct {logs.get('episodes/correct', math.nan):.2f}, "
            f"answered {logs.get('episodes/answered', math.nan):.2f}"
        )
        budget, minutes = self.config.kl_budget, self.config.max_minutes
        if logs.get("kl", 0.0) > budget:
            self.stop_reason = f"KL {logs['kl']:.4f} passed the budget {budget}"
        elif minutes is not None and time.monotonic() - self.started > minutes * 60:
            self.stop_reason = f"the time budget of {minutes:g} minutes"
        else:
            return
        self.log(f"stopping: {self.stop_reason}")
        control.should_training_stop = True


def _dev_config(config: RLConfig) -> RLConfig:
    """The dev evaluation's episodes: whole episodes, greedy, at the most actions, written
    nowhere (as `webgpt eval` measures a policy)."""
    dev = copy.copy(config)
    dev.answer_only_share, dev.comparisons_out = 0.0, None
    dev.temperature, dev.min_actions = 0.0, config.max_actions
    return dev


ROLLOUT_STATE = "rollouts-{process}.json"


def save_rollout_state(rollouts: EpisodeRollouts, folder: Path, process: int) -> None:
    """The rollout sampler's state into a checkpoint folder: its random draws (answer-only
    groups, action limits, swaps) and its counts, which the Trainer does not save."""
    version, internal, gauss = rollouts.rng.getstate()
    state = {"rng": [version, list(internal), gauss], "stats": asdict(rollouts.stats)}
    (folder / ROLLOUT_STATE.format(process=process)).write_text(json.dumps(state))


def restore_rollout_state(rollouts: EpisodeRollouts, folder: Path, process: int) -> None:
    """What save_rollout_state saved, back into a new sampler."""
    path = folder / ROLLOUT_STATE.format(process=process)
    if not path.is_file():
        raise ConfigurationError(
            f"{folder} has no {path.name}: it was cut short while saving (or is not a "
            "checkpoint of `webgpt train rl`); delete it to resume from the one before"
        )
    state = json.loads(path.read_text())
    version, internal, gauss = state["rng"]
    rollouts.rng.setstate((version, tuple(internal), gauss))
    rollouts.stats = type(rollouts.stats)(**state["stats"])


class RolloutStateCallback(TrainerCallback):
    """Saves the rollout sampler's state beside each checkpoint the Trainer writes (its
    optimizer, schedule and torch/Python/NumPy RNGs are the Trainer's own to restore)."""

    def __init__(self, rollouts: EpisodeRollouts) -> None:
        self.rollouts = rollouts

    def on_save(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        folder = Path(args.output_dir) / f"{CHECKPOINT_PREFIX}{state.global_step}"
        save_rollout_state(self.rollouts, folder, args.process_index)


class DevEvaluation(TrainerCallback):
    """Every `every` steps, one greedy episode on each dev question: the mean reward and
    the shares answered and right join that step's log (dev/reward, dev/answered,
    dev/correct), as the rollouts' own episode figures do. It samples under a forked
    torch RNG, so training draws what it would have drawn without it."""

    def __init__(
        self, rollouts: EpisodeRollouts, prompts: list[str], every: int, tokenizer: Any
    ) -> None:
        self.rollouts, self.prompts, self.every, self.tokenizer = (
            rollouts,
            prompts,
            every,
            tokenizer,
        )
        self.trainer: Any = None

    def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if state.global_step % self.every:
            return
        import torch

        model = self.trainer.accelerator.unwrap_model(self.trainer.model)
        policy = TransformersPolicy(model, self.tokenizer, name="rl-dev")
        was_training = model.training
        model.eval()
        devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
        try:
            with torch.random.fork_rng(devices=devices):
                batch = self.rollouts.loop.run_until_complete(
                    self.rollouts.sample(self.prompts, policy)
                )
        finally:
            model.train(was_training)
        figures = {
            "dev/reward": sum(r.reward for r in batch) / len(batch),
            "dev/answered": sum(r.answered for r in batch) / len(batch),
            "dev/correct": sum(r.correct for r in batch) / len(batch),
        }
        for name, value in figures.items():  # merged into this step's log by GRPOTrainer
            self.trainer._metrics["train"][name].append(value)


def _no_reward_model(texts: list[str]) -> list[float]:
    """The score of a run without a reward model: `--reward-source outcome` asks for none."""
    raise ConfigurationError("--reward-source model needs --reward-model")


def _episode_reward(completions: list[Any], episode_reward: list[float], **_: Any) -> list[float]:
    """The reward model's score of the episode's answer, computed during the rollout
    (WebGPT rewards only the final answer)."""
    return list(episode_reward)


def _trainable_snapshot(model: Any) -> dict[str, Any]:
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}


def _summary(entries: list[dict[str, float]]) -> dict[str, float]:
    keys = ("reward", "reward_std", "kl", "entropy", "episodes/correct", "episodes/answered")
    return {k: entries[0][k] for k in keys if entries and k in entries[0]}


def _step_of(checkpoint: Path) -> int:
    return int(checkpoint.name.rsplit("-", 1)[1])
