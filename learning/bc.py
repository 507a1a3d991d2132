"""Behavior cloning (`webgpt train bc`): fine-tune a policy on demonstrations.

Each demonstration gives one example per browsing step (browsing prompt → command, ended by
the stop string the agent samples with) and one per answer (answer-phase prompt → answer,
ended by "■"). Prompts are built by agent.prompts, the code the agent serves with, so a
trained checkpoint reads exactly what it will be shown; the loss covers the completion
tokens only (labels -100 on the prompt). Examples longer than `max_length` are left out
(and counted) rather than truncated, so no training prompt differs from a serving prompt.

Built on transformers' `Trainer` with pre-tokenised labels (SmolLM2's chat template has
no generation markers for TRL's completion-only collator): evaluation each epoch, early
stopping on the validation loss, the best epoch kept; LoRA through peft (optionally only on
the top layers, which halves the backward pass on a CPU) or full fine-tuning.
`accelerate launch -m service.cli train bc ...` runs the same command on many GPUs.

The checkpoint is published atomically into the registry (infra.checkpoints.publish) as a
policy: the LoRA adapter (or full weights) with a manifest naming the base model, the data's
sha256 and counts by source, the observation format version, the config and the figures.
"""

import hashlib
import json
import math
import random
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from webgpt.agent.errors import DataError
from webgpt.agent.prompts import ANSWER_STOP, COMMAND_STOP, browsing_prompt
from webgpt.agent.registry import load_policy_manifest
from webgpt.browser.commands import parse_command
from webgpt.browser.errors import InvalidCommand
from webgpt.browser.observation import OBSERVATION_FORMAT_VERSION
from webgpt.infra.checkpoints import discard, publish, staging_folder
from webgpt.learning.demonstrations import (
    UNTAGGED,
    Demonstration,
    LoadReport,
    load_demonstrations,
)

LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


@dataclass
class BCTrainConfig:
    """Fields become `webgpt train bc` options (help from metadata)."""

    demonstrations: list[Path] = field(metadata={"help": "demonstration files (JSONL), repeatable"})
    base: Path = field(metadata={"help": "Hugging Face folder of the policy to start from"})
    out: Path = field(metadata={"help": "registry folder; the checkpoint goes to OUT/VERSION"})
    version: str = field(default="bc-0001", metadata={"help": "checkpoint version name"})
    base_version: str = field(default="", metadata={"help": "the base's registry version"})
    epochs: int = field(default=3, metadata={"help": "passes over the training examples"})
    learning_rate: float = field(default=2e-4, metadata={"help": "AdamW peak learning rate"})
    batch_size: int = field(default=4, metadata={"help": "examples per optimizer step"})
    max_length: int = field(default=1536, metadata={"help": "tokens per example; longer: left out"})
    max_examples: int = field(default=0, metadata={"help": "use at most this many (0 = all)"})
    include_untagged: bool = field(
        default=False,
        metadata={
            "help": "also train on demonstrations without a split (questions a person typed "
            "in Demonstrate mode; one may be a dev or test question); else split train only"
        },
    )
    validation_fraction: float = field(default=0.05, metadata={"help": "episodes held out"})
    patience: int = field(default=1, metadata={"help": "epochs without progress before stop"})
    lora_rank: int = field(default=16, metadata={"help": "LoRA rank; 0 = full fine-tuning"})
    lora_layers: int = field(default=0, metadata={"help": "LoRA on the top N layers (0 = all)"})
    init_adapter: Path | None = field(
        default=None,
        metadata={"help": "continue training this LoRA checkpoint of the same base (its rank)"},
    )
    validity_prompts: int = field(default=24, metadata={"help": "held-out prompts to sample"})
    seed: int = field(default=0, metadata={"help": "shuffling and split seed"})


@dataclass(frozen=True)
class Example:
    """One prompt → completion pair; `kind` is "command" or "answer"."""

    prompt: str
    completion: str
    kind: str
    episode: str


@dataclass
class BCResult:
    checkpoint: Path
    manifest_metrics: dict[str, Any]
    step_losses: list[float]


def examples_of(demo: Demonstration) -> list[Example]:
    """The training pairs of one demonstration, with the agent's own prompt builders."""
    examples = [
        Example(
            browsing_prompt(step.observation), step.command + COMMAND_STOP[0], "command", demo.id
        )
        for step in demo.steps
    ]
    if demo.answer is not None and demo.answer_prompt is not None:
        examples.append(
            Example(demo.answer_prompt, demo.answer + ANSWER_STOP[0], "answer", demo.id)
        )
    return examples


def tokenize_example(tokenizer: Any, example: Example) -> dict[str, list[int]]:
    """input_ids = prompt + completion; labels = -100 on the prompt (completion-only loss).

    The prompt is encoded as the serving engine encodes a completions prompt (with the
    tokenizer's special tokens), the completion as plain continuation tokens."""
    prompt_ids: list[int] = tokenizer(example.prompt)["input_ids"]
    completion_ids: list[int] = tokenizer(example.completion, add_special_tokens=False)["input_ids"]
    return {
        "input_ids": prompt_ids + completion_ids,
        "labels": [-100] * len(prompt_ids) + completion_ids,
    }


def data_digest(paths: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def training_demonstrations(
    config: BCTrainConfig, log: Callable[[str], None]
) -> tuple[list[Demonstration], LoadReport]:
    """The demonstrations of split train, and those without a split only when asked: a
    question a person typed may be a dev or test question, whose pages must not leak into
    training. A DataError when none is left."""
    splits: list[str | None] = ["train", None] if config.include_untagged else ["train"]
    demos, report = load_demonstrations(config.demonstrations, splits=splits)
    log(report.summary())
    untagged = report.other_splits.get(UNTAGGED, 0)
    advice = 'tag them with "split": "train" or pass --include-untagged'
    if untagged:
        log(f"{untagged} demonstrations without a split left out: to train on them, {advice}")
    if not demos:
        wanted = "split train, or without a split" if config.include_untagged else "split train"
        found = f"; {untagged} have no split: {advice}" if untagged else ""
        raise DataError(f"no training demonstrations ({wanted}){found}")
    return demos, report


def split_episodes(
    demos: list[Demonstration], fraction: float, seed: int
) -> tuple[list[Demonstration], list[Demonstration]]:
    """Hold out whole episodes (never single steps of a trained episode)."""
    ordered = sorted(demos, key=lambda d: d.id)
    random.Random(seed).shuffle(ordered)
    held = max(1, round(len(ordered) * fraction)) if fraction > 0 and len(ordered) > 1 else 0
    return ordered[held:], ordered[:held]


class _Collator:
    """Pads input_ids with the pad token and labels with -100 (right padding)."""

    def __init__(self, pad_id: int) -> None:
        self.pad_id = pad_id

    def __call__(self, rows: list[dict[str, list[int]]]) -> dict[str, Any]:
        import torch

        width = max(len(r["input_ids"]) for r in rows)
        ids = [r["input_ids"] + [self.pad_id] * (width - len(r["input_ids"])) for r in rows]
        labels = [r["labels"] + [-100] * (width - len(r["labels"])) for r in rows]
        mask = [[1] * len(r["input_ids"]) + [0] * (width - len(r["input_ids"])) for r in rows]
        return {
            "input_ids": torch.tensor(ids),
            "labels": torch.tensor(labels),
            "attention_mask": torch.tensor(mask),
        }


def command_validity(model: Any, tokenizer: Any, prompts: Sequence[str]) -> float:
    """Share of greedy, unguided commands that parse as browsing commands."""
    import torch

    if not prompts:
        return math.nan
    valid = 0
    model.eval()
    for prompt in prompts:
        inputs = tokenizer(prompt, return_tensors="pt").to(model.device)
        with torch.no_grad():
            output = model.generate(
                **inputs,
                do_sample=False,
                max_new_tokens=48,
                pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
            )
        text = tokenizer.decode(output[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
        try:
            parse_command(text.split(COMMAND_STOP[0], 1)[0])
            valid += 1
        except InvalidCommand:
            pass
    return valid / len(prompts)


def _ordered_rows(
    tokenizer: Any, examples: list[Example], max_length: int
) -> tuple[list[dict[str, list[int]]], int]:
    rows, too_long = [], 0
    for example in examples:
        row = tokenize_example(tokenizer, example)
        if len(row["input_ids"]) > max_length:
            too_long += 1
            continue
        rows.append(row)
    return rows, too_long


def train_bc(config: BCTrainConfig, log: Callable[[str], None] = print) -> BCResult:
    import torch
    from transformers import (
        AutoModelForCausalLM,
        AutoTokenizer,
        EarlyStoppingCallback,
        Trainer,
        TrainerCallback,
        TrainingArguments,
    )

    # checked before any data or weights are loaded, so a wrong adapter fails at once
    parent = config.base_version or str(config.base)
    if config.init_adapter is not None:
        parent = _adapter_to_continue(config)
    as_adapter = config.lora_rank > 0 or config.init_adapter is not None
    demos, report = training_demonstrations(config, log)
    train_demos, val_demos = split_episodes(demos, config.validation_fraction, config.seed)
    train_examples = [e for d in train_demos for e in examples_of(d)]
    val_examples = [e for d in val_demos for e in examples_of(d)]
    random.Random(config.seed).shuffle(train_examples)
    if config.max_examples:
        train_examples = train_examples[: config.max_examples]

    torch.manual_seed(config.seed)
    tokenizer = AutoTokenizer.from_pretrained(config.base)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    train_rows, long_train = _ordered_rows(tokenizer, train_examples, config.max_length)
    val_rows, long_val = _ordered_rows(tokenizer, val_examples, config.max_length)
    if not train_rows:
        raise DataError(f"every training example is longer than {config.max_length} tokens")
    tokens = sum(len(r["input_ids"]) for r in train_rows)
    log(
        f"{len(train_rows)} training examples ({tokens} tokens) from {len(train_demos)} episodes, "
        f"{len(val_rows)} validation examples from {len(val_demos)} episodes; "
        f"{long_train + long_val} longer than {config.max_length} tokens left out"
    )
    model: Any = AutoModelForCausalLM.from_pretrained(config.base, dtype=torch.float32)
    held_prompts = [e.prompt for e in val_examples if e.kind == "command"][
        : config.validity_prompts
    ]
    if config.init_adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, config.init_adapter, is_trainable=True)
    elif config.lora_rank > 0:
        from peft import LoraConfig, get_peft_model

        layers = model.config.num_hidden_layers
        top = list(range(layers - config.lora_layers, layers)) if config.lora_layers else None
        model = get_peft_model(
            model,
            LoraConfig(
                r=config.lora_rank,
                lora_alpha=2 * config.lora_rank,
                lora_dropout=0.0,
                target_modules=LORA_TARGETS,
                layers_to_transform=top,
                task_type="CAUSAL_LM",
            ),
        )
    # a fresh adapter starts as the base (LoRA's B is zero); a continued one as it ended
    validity_before = command_validity(model, tokenizer, held_prompts)
    log(f"valid unguided commands on held-out prompts before training: {validity_before:.2f}")
    step_losses: list[float] = []

    class _LossLog(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            if logs and "loss" in logs:
                step_losses.append(float(logs["loss"]))
                log(f"step {state.global_step}/{state.max_steps}: loss {logs['loss']:.4f}")

    work = Path(tempfile.mkdtemp(prefix="webgpt-bc-"))
    has_validation = bool(val_rows)
    arguments = TrainingArguments(
        output_dir=str(work),
        num_train_epochs=config.epochs,
        per_device_train_batch_size=config.batch_size,
        per_device_eval_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=max(1, len(train_rows) // config.batch_size // 20),
        logging_steps=5,
        eval_strategy="epoch" if has_validation else "no",
        save_strategy="epoch" if has_validation else "no",
        save_total_limit=2,
        load_best_model_at_end=has_validation,
        metric_for_best_model="eval_loss",
        greater_is_better=False,
        report_to=[],
        seed=config.seed,
        disable_tqdm=True,
        dataloader_num_workers=0,
        dataloader_pin_memory=False,
        remove_unused_columns=False,
        # fp32 weights with bf16 autocast where the accelerator has it (a GPU); CPUs train
        # in fp32, which is faster there than emulated bf16 matrix products.
        bf16=torch.cuda.is_available() and torch.cuda.is_bf16_supported(),
    )
    trainer = Trainer(
        model=model,
        args=arguments,
        train_dataset=train_rows,
        eval_dataset=val_rows or None,
        data_collator=_Collator(tokenizer.pad_token_id),
        callbacks=[_LossLog()]
        + (
            [EarlyStoppingCallback(early_stopping_patience=config.patience)]
            if has_validation
            else []
        ),
    )
    train_output = trainer.train()
    epochs = [
        {"epoch": float(entry["epoch"]), "validation_loss": float(entry["eval_loss"])}
        for entry in trainer.state.log_history
        if "eval_loss" in entry
    ]
    trained: Any = trainer.model
    validity_after = command_validity(trained, tokenizer, held_prompts)
    log(f"valid unguided commands on held-out prompts after training: {validity_after:.2f}")
    metrics: dict[str, Any] = {
        "trained": True,
        "method": "bc-lora" if as_adapter else "bc-full",
        "parent": parent,
        "data_sha256": data_digest(config.demonstrations),
        "demonstrations_by_source": report.by_source,
        "left_out_by_split": report.other_splits,
        "train_examples": len(train_rows),
        "train_tokens": tokens,
        "validation_examples": len(val_rows),
        "left_out_too_long": long_train + long_val,
        "epochs": epochs,
        "train_runtime_s": round(float(train_output.metrics.get("train_runtime", 0.0)), 1),
        "train_tokens_per_s": round(
            tokens
            * float(train_output.metrics.get("epoch", 1.0))
            / max(float(train_output.metrics.get("train_runtime", 1.0)), 1e-9),
            1,
        ),
        "valid_unguided_commands": {"before": validity_before, "after": validity_after},
        "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
        "peak_accelerator_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)
        if torch.cuda.is_available()
        else None,
        "config": {f.name: _jsonable(getattr(config, f.name)) for f in fields(config)},
    }
    checkpoint = config.out / config.version
    try:
        with staging_folder(config.out, config.version) as staging:
            # bf16, the dtype the base ships in and vLLM serves: half the size of fp32
            trained.to(torch.bfloat16).save_pretrained(staging)
            if not as_adapter:  # full weights are a whole model: the tokenizer goes with them
                tokenizer.save_pretrained(staging)
            (staging / "train_config.json").write_text(json.dumps(metrics["config"], indent=2))
            publish(
                staging,
                checkpoint,
                kind="policy",
                version=config.version,
                base_model=config.base_version or str(config.base),
                observation_format_version=OBSERVATION_FORMAT_VERSION,
                metrics=metrics,
            )
    finally:
        discard(work)
    log(f"published {checkpoint}")
    return BCResult(checkpoint, metrics, step_losses)


def _adapter_to_continue(config: BCTrainConfig) -> str:
    """The version of config.init_adapter, once it is checked to be an intact LoRA adapter
    of this base; a DataError (or CheckpointError) says what is wrong otherwise."""
    assert config.init_adapter is not None
    manifest = load_policy_manifest(config.init_adapter, verify=True)
    if config.base_version and manifest.base_model != config.base_version:
        raise DataError(
            f"{config.init_adapter} was trained on {manifest.base_model!r}, "
            f"not on the base {config.base_version!r}"
        )
    if not (config.init_adapter / "adapter_config.json").is_file():
        raise DataError(f"{config.init_adapter} holds full weights, not a LoRA adapter")
    return manifest.version


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value
