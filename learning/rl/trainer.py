"""The trainer: TRL's GRPOTrainer on packed episodes, and `train_rl`, the run."""

import hashlib
import math
import random
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

from webgpt.agent.errors import ConfigurationError, DataError
from webgpt.evals.questions import load_questions
from webgpt.learning.bc import LORA_TARGETS
from webgpt.learning.rl.config import RLResult, RLTrainConfig
from webgpt.learning.rl.packing import SegmentTable, packed_positions_hook
from webgpt.learning.rl.publish import jsonable, parent_of, publish_policy
from webgpt.learning.rl.rollouts import EpisodeRollouts
from webgpt.reward.manifest import load_reward_manifest


def _episode_trainer_class() -> type:
    """GRPOTrainer whose log-probabilities are computed on packed episodes (see the package
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

    from webgpt.browser.web import offline_web
    from webgpt.reward.scorer import RewardScorer

    _check(config)
    trainer_class = _episode_trainer_class()
    parent, base_model = parent_of(config.policy)
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
        "config": {f.name: jsonable(getattr(config, f.name)) for f in fields(config)},
    }
    checkpoint = publish_policy(
        config, trainer.model, tokenizer, base_model, metrics, history, work
    )
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


def _trainable_snapshot(model: Any) -> dict[str, Any]:
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}


def _summary(entries: list[dict[str, float]]) -> dict[str, float]:
    keys = ("reward", "reward_std", "kl", "entropy", "episodes/correct", "episodes/answered")
    return {k: entries[0][k] for k in keys if entries and k in entries[0]}
