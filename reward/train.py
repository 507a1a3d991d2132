"""Reward-model training on pairwise comparisons (`webgpt train rm`).

Recipe: WebGPT §3.2 and Appendix E, InstructGPT §3.5, Stiennon et al. §3.4 —
- loss -[y log σ(r_a - r_b) + (1 - y) log σ(r_b - r_a)], ties as y = 0.5;
- all comparisons of one question in one batch element, each answer scored once;
- an exponential moving average (EMA) of the weights is the final checkpoint;
- validation accuracy each epoch (on questions held out whole), early stopping on it;
- rewards shifted so the validation answers score 0 on average (offset in the manifest).

Built on accelerate: `accelerate launch -m webgpt.service.cli train rm ...` runs it on many GPUs.
LoRA (peft) with `--lora-rank R`, full fine-tuning with 0.
"""

import copy
import json
import math
import random
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch

from webgpt.browser.observation import OBSERVATION_FORMAT_VERSION
from webgpt.infra.checkpoints import load_manifest, publish, staging_folder
from webgpt.infra.errors import CheckpointError, IncompatibleCheckpoint
from webgpt.reward.config import RewardTrainConfig
from webgpt.reward.data import QuestionGroup, group_by_question, iter_batches, load_comparisons
from webgpt.reward.errors import DataError
from webgpt.reward.model import RewardModel, pairwise_loss, tokenize

PROGRESS_STEPS = 100  # a line of progress every this many steps


@dataclass
class TrainResult:
    checkpoint: Path
    step_losses: list[float]
    epochs: list[dict[str, float]]
    offset: float
    report: str


class _Ema:
    """Exponential moving average of the trainable parameters (Polyak–Ruppert)."""

    def __init__(self, model: torch.nn.Module, decay: float) -> None:
        self.decay = decay
        self.shadow = {
            n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad
        }

    @torch.no_grad()
    def update(self, model: torch.nn.Module) -> None:
        for name, param in model.named_parameters():
            if name in self.shadow:
                self.shadow[name].mul_(self.decay).add_(param.detach(), alpha=1 - self.decay)

    def copy_to(self, model: torch.nn.Module) -> None:
        with torch.no_grad():
            for name, param in model.named_parameters():
                if name in self.shadow:
                    param.copy_(self.shadow[name])


def split(
    groups: list[QuestionGroup], fraction: float, seed: int
) -> tuple[list[QuestionGroup], list[QuestionGroup]]:
    ordered = sorted(groups, key=lambda g: g.question)
    random.Random(seed).shuffle(ordered)
    held_out = max(1, round(len(ordered) * fraction)) if fraction > 0 and len(ordered) > 1 else 0
    return ordered[held_out:], ordered[:held_out]


def _batch_loss(
    model: RewardModel,
    tokenizer: Any,
    batch: list[QuestionGroup],
    max_length: int,
    device: torch.device,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    texts: list[str] = []
    pairs: list[tuple[int, int]] = []
    labels: list[float] = []
    for group in batch:
        base = len(texts)
        texts.extend(group.texts)
        for i, j, label in group.pairs:
            pairs.append((base + i, base + j))
            labels.append(label)
    encoded = {k: v.to(device) for k, v in tokenize(tokenizer, texts, max_length).items()}
    rewards = model(**encoded)  # (texts,)
    pair_tensor = torch.tensor(pairs, device=device)
    label_tensor = torch.tensor(labels, dtype=rewards.dtype, device=device)
    return pairwise_loss(rewards, pair_tensor, label_tensor), rewards, pair_tensor, label_tensor


@torch.no_grad()
def evaluate(
    model: RewardModel,
    tokenizer: Any,
    groups: list[QuestionGroup],
    config: RewardTrainConfig,
    device: torch.device,
) -> dict[str, float]:
    """Validation loss, accuracy on non-tied pairs, and the mean reward (for the offset)."""
    model.eval()
    losses, correct, decided, reward_sum, reward_count = [], 0, 0, 0.0, 0
    for batch in iter_batches(groups, config.questions_per_batch):
        loss, rewards, pairs, labels = _batch_loss(
            model, tokenizer, batch, config.max_length, device
        )
        losses.append(float(loss))
        margin = rewards[pairs[:, 0]] - rewards[pairs[:, 1]]
        sure = labels != 0.5
        correct += int(((margin > 0) == (labels > 0.5))[sure].sum())
        decided += int(sure.sum())
        reward_sum += float(rewards.sum())
        reward_count += rewards.numel()
    model.train()
    return {
        "loss": sum(losses) / max(len(losses), 1),
        "accuracy": correct / decided if decided else math.nan,
        "mean_reward": reward_sum / max(reward_count, 1),
        "pairs": decided,
    }


def train_reward_model(config: RewardTrainConfig, log: Any = print) -> TrainResult:
    from accelerate import Accelerator
    from transformers import AutoTokenizer

    comparisons, report = load_comparisons(config.comparisons)
    log(report.summary())
    groups = group_by_question(comparisons)
    train_groups, val_groups = split(groups, config.validation_fraction, config.seed)
    if not train_groups:
        raise DataError("no training questions left after the validation split")
    log(f"{len(train_groups)} training questions, {len(val_groups)} validation questions")
    held_out_groups = _held_out_groups(config, train_groups)  # refused before training

    torch.manual_seed(config.seed)
    accelerator = Accelerator()
    tokenizer = AutoTokenizer.from_pretrained(config.backbone)
    if config.init_adapter is not None:
        _check_adapter(config.init_adapter, config.lora_rank, backbone_name(config.backbone))
        model = RewardModel.from_adapter(config.backbone, config.init_adapter, trainable=True)
    else:
        model = RewardModel.from_backbone(config.backbone)
    if config.lora_rank > 0 and config.init_adapter is None:
        from peft import LoraConfig, get_peft_model

        model.backbone = get_peft_model(
            model.backbone,
            LoraConfig(
                r=config.lora_rank,
                lora_alpha=2 * config.lora_rank,
                target_modules="all-linear",
                lora_dropout=0.0,
            ),
        )
    optimizer = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad],
        lr=config.learning_rate,
        weight_decay=config.weight_decay,
    )
    model, optimizer = accelerator.prepare(model, optimizer)
    ema = _Ema(accelerator.unwrap_model(model), config.ema_decay)
    rng = random.Random(config.seed)

    step_losses: list[float] = []
    history: list[dict[str, float]] = []
    best_accuracy, best_shadow, stale = -1.0, copy.deepcopy(ema.shadow), 0
    steps = math.ceil(len(train_groups) / config.questions_per_batch)
    for epoch in range(config.epochs):
        rng.shuffle(train_groups)
        epoch_losses: list[float] = []
        for step, batch in enumerate(iter_batches(train_groups, config.questions_per_batch), 1):
            loss, *_ = _batch_loss(model, tokenizer, batch, config.max_length, accelerator.device)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            ema.update(accelerator.unwrap_model(model))
            step_losses.append(loss.detach().item())
            epoch_losses.append(loss.detach().item())
            if step % PROGRESS_STEPS == 0 and step < steps:  # an hour-long epoch says where it is
                recent = epoch_losses[-PROGRESS_STEPS:]
                log(f"epoch {epoch + 1}, step {step}/{steps}: loss {sum(recent) / len(recent):.4f}")
        # Evaluate the EMA weights: they are what the checkpoint will hold.
        live = copy.deepcopy(accelerator.unwrap_model(model).state_dict())
        ema.copy_to(accelerator.unwrap_model(model))
        metrics = evaluate(model, tokenizer, val_groups or train_groups, config, accelerator.device)
        accelerator.unwrap_model(model).load_state_dict(live)
        metrics["epoch"] = epoch + 1
        metrics["train_loss"] = sum(epoch_losses) / len(epoch_losses)
        history.append(metrics)
        log(
            f"epoch {epoch + 1}: train loss {metrics['train_loss']:.4f}, validation loss "
            f"{metrics['loss']:.4f}, accuracy {metrics['accuracy']:.3f}"
        )
        accuracy = metrics["accuracy"] if not math.isnan(metrics["accuracy"]) else -metrics["loss"]
        if accuracy > best_accuracy:
            best_accuracy, best_shadow, stale = accuracy, copy.deepcopy(ema.shadow), 0
        else:
            stale += 1
            if stale >= config.patience:
                log(f"early stop: no progress for {stale} epochs")
                break

    final = accelerator.unwrap_model(model)
    ema.shadow = best_shadow
    ema.copy_to(final)
    reference = evaluate(final, tokenizer, val_groups or train_groups, config, accelerator.device)
    offset = reference["mean_reward"]
    held_out = None
    if held_out_groups is not None:
        held_out = _held_out(final, tokenizer, held_out_groups, config, accelerator.device, log)
    checkpoint = config.out / config.version
    figures: dict[str, Any] = {
        "offset": offset,
        "validation_accuracy": reference["accuracy"],
        "validation_loss": reference["loss"],
        "epochs": history,
        "comparisons": report.used,
        "skipped_rows": len(report.skipped),
        "held_out": held_out,
    }
    if accelerator.is_main_process:
        if config.adapter_out is not None:  # before `save`, which merges the adapter away
            with staging_folder(config.adapter_out, config.version) as staging:
                final.save_adapter(staging)
                _publish(staging, config.adapter_out / config.version, config, figures)
            log(f"published the adapter {config.adapter_out / config.version}")
        with staging_folder(config.out, config.version) as staging:
            final.save(staging)
            tokenizer.save_pretrained(staging)
            _publish(staging, checkpoint, config, figures)
    log(f"published {checkpoint} (offset {offset:.4f})")
    return TrainResult(checkpoint, step_losses, history, offset, report.summary())


def _publish(
    staging: Path, target: Path, config: RewardTrainConfig, metrics: dict[str, Any]
) -> None:
    (staging / "train_config.json").write_text(
        json.dumps({f.name: _jsonable(getattr(config, f.name)) for f in fields(config)}, indent=2)
    )
    publish(
        staging,
        target,
        kind="reward",
        version=config.version,
        base_model=backbone_name(config.backbone),
        observation_format_version=OBSERVATION_FORMAT_VERSION,
        metrics=metrics,
    )


def _check_adapter(adapter: Path, rank: int, backbone: str) -> None:
    """Refuses an adapter to continue that is not one, whose LoRA rank is not --lora-rank
    (the manifest would record a rank it does not have), or whose manifest names another
    backbone than --backbone (its deltas were learned on other weights)."""
    try:
        adapter_config = json.loads((adapter / "adapter_config.json").read_text())
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{adapter} is not a LoRA adapter to continue: {error}") from error
    if adapter_config.get("r") != rank:
        raise IncompatibleCheckpoint(
            f"{adapter} has LoRA rank {adapter_config.get('r')}; --lora-rank is {rank}"
        )
    try:
        trained_on = load_manifest(adapter).base_model
    except CheckpointError:
        return  # an adapter published by hand: nothing says what it was trained on
    if trained_on != backbone:
        raise IncompatibleCheckpoint(f"{adapter} was trained on {trained_on}, not {backbone}")


def backbone_name(backbone: Path) -> str:
    """A registry checkpoint's version (what `webgpt model prepare` matches a shipped adapter
    on), else the folder's path."""
    try:
        return load_manifest(backbone).version
    except CheckpointError:
        return str(backbone)


@dataclass
class HeldOut:
    groups: list[QuestionGroup]  # questions that were not trained on
    left_out: int  # questions of the file that were trained on
    skipped_rows: int


def _held_out_groups(
    config: RewardTrainConfig, train_groups: list[QuestionGroup]
) -> HeldOut | None:
    """The questions of config.held_out that are not trained on; none left: a DataError."""
    if config.held_out is None:
        return None
    comparisons, report = load_comparisons([config.held_out])
    trained = {group.question for group in train_groups}
    every = group_by_question(comparisons)
    groups = [g for g in every if g.question not in trained]
    if not groups:
        raise DataError(
            f"{config.held_out}: every question in it is trained on, so it measures nothing "
            "held out: use comparisons of other questions (another split)"
        )
    return HeldOut(groups, len(every) - len(groups), len(report.skipped))


def _held_out(
    model: RewardModel,
    tokenizer: Any,
    held_out: HeldOut,
    config: RewardTrainConfig,
    device: torch.device,
    log: Any,
) -> dict[str, Any]:
    """Accuracy on the held-out questions."""
    metrics = evaluate(model, tokenizer, held_out.groups, config, device)
    overlap = held_out.left_out
    log(
        f"held out ({config.held_out}): accuracy {metrics['accuracy']:.3f} on "
        f"{metrics['pairs']} decided pairs of {len(held_out.groups)} questions"
        + (f"; {overlap} questions left out: they were trained on" if overlap else "")
    )
    return {
        "file": str(config.held_out),
        "accuracy": metrics["accuracy"],
        "loss": metrics["loss"],
        "pairs": metrics["pairs"],
        "questions": len(held_out.groups),
        "left_out_trained_questions": overlap,
        "skipped_rows": held_out.skipped_rows,
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value
