"""Behavior cloning (`webgpt train bc`): fine-tune a policy on demonstrations.

Each demonstration gives one example per browsing step (browsing prompt → command, ended by
the stop string the agent samples with) and one per answer (answer-phase prompt → answer,
ended by "■"). Prompts are built by agent.prompts, the code the agent serves with, so a
trained checkpoint reads exactly what it will be shown; the loss covers the completion
tokens only (labels -100 on the prompt). Examples longer than `max_length` are left out
(and counted) rather than truncated, so no training prompt differs from a serving prompt.

Built on transformers' `Trainer` with pre-tokenised labels, padded by its
`DataCollatorForSeq2Seq` (SmolLM2's chat template has no generation markers for TRL's
completion-only collator): the options are a `TrainingArguments` (`BCConfig`), so every
option of the Trainer is one of `webgpt train bc`; evaluation each epoch or every N steps,
early stopping on the validation loss, the best evaluation kept; checkpoints in the run's
work folder, from which a stopped run resumes (learning.runs); LoRA through peft
(optionally only on the top layers, which halves the backward pass on a CPU) or full
fine-tuning. `accelerate launch -m webgpt.service.cli train bc ...` runs the same command on many
GPUs.

The checkpoint is published atomically into the registry (infra.checkpoints.publish) as a
policy: the LoRA adapter (or full weights) with a manifest naming the base model, the data's
sha256 and counts by source, the observation format version, the config and the figures.
"""

import copy
import hashlib
import json
import math
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import TrainerCallback, TrainingArguments
from transformers.trainer_utils import IntervalStrategy, SaveStrategy, SchedulerType

from webgpt.agent.errors import ConfigurationError, DataError
from webgpt.agent.prompts import ANSWER_STOP, COMMAND_STOP, browsing_prompt
from webgpt.agent.registry import load_policy_manifest
from webgpt.browser.commands import parse_command
from webgpt.browser.errors import InvalidCommand
from webgpt.browser.observation import OBSERVATION_FORMAT_VERSION
from webgpt.infra.checkpoints import publish, staging_folder
from webgpt.infra.trainer_options import Repeatable
from webgpt.learning.demonstrations import (
    UNTAGGED,
    Demonstration,
    LoadReport,
    load_demonstrations,
)
from webgpt.learning.runs import (
    checkpoint_to_resume,
    default_work_folder,
    discard_checkpoints,
    jsonable,
    work_folder_field,
)

# What `--examples` trains on: every pair of a demonstration, or its answer alone.
EXAMPLE_KINDS = ["all", "answers"]
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


@dataclass(kw_only=True)
class BCConfig(TrainingArguments):
    """`webgpt train bc`: our options, then every option of transformers' Trainer (a
    TrainingArguments, as TRL's SFTConfig is). Fields become options, help from metadata;
    fields of TrainingArguments redefined here carry our defaults, and `--epochs` and
    `--batch-size` name `num_train_epochs` and `per_device_train_batch_size`."""

    demonstrations: list[Path] = field(
        metadata={"help": "demonstration files (JSONL), repeatable", "action": Repeatable}
    )
    base: Path = field(metadata={"help": "Hugging Face folder of the policy to start from"})
    out: Path = field(metadata={"help": "registry folder; the checkpoint goes to OUT/VERSION"})
    version: str = field(default="bc-0001", metadata={"help": "checkpoint version name"})
    base_version: str = field(default="", metadata={"help": "the base's registry version"})
    max_length: int = field(default=1536, metadata={"help": "tokens per example; longer: left out"})
    max_examples: int = field(default=0, metadata={"help": "use at most this many (0 = all)"})
    examples: str = field(
        default="all",
        metadata={
            "help": "the pairs of each demonstration trained on: all (every command and the "
            "answer) or answers (the answer alone: no command is a training example, but "
            "the weights are shared, so browsing can change too)",
            "choices": EXAMPLE_KINDS,
        },
    )
    include_untagged: bool = field(
        default=False,
        metadata={
            "help": "also train on demonstrations without a split (questions a person typed "
            "in Demonstrate mode; one may be a dev or test question); else split train only"
        },
    )
    validation_fraction: float = field(default=0.05, metadata={"help": "episodes held out"})
    patience: int = field(
        default=1, metadata={"help": "evaluations without progress before early stopping"}
    )
    lora_rank: int = field(default=16, metadata={"help": "LoRA rank; 0 = full fine-tuning"})
    lora_layers: int = field(
        default=0,
        metadata={
            "help": "LoRA on the top N layers (0 = all); with --init-adapter, train those only"
        },
    )
    init_adapter: Path | None = field(
        default=None,
        metadata={"help": "continue training this LoRA checkpoint of the same base (its rank)"},
    )
    validity_prompts: int = field(default=24, metadata={"help": "held-out prompts to sample"})
    max_minutes: float | None = field(
        default=None,
        metadata={
            "help": "stop after this many minutes of training, evaluate and keep the best "
            "weights so far (a run sized to a GPU lease)"
        },
    )
    resume: bool = field(
        default=False,
        metadata={
            "help": "continue the run from the last checkpoint in its work folder "
            "(--output-dir): weights, optimizer, schedule, RNG and data position restored"
        },
    )

    # TrainingArguments' fields, with our defaults
    output_dir: str | None = work_folder_field()
    num_train_epochs: float = field(
        default=3.0,
        metadata={"help": "passes over the training examples", "aliases": ["--epochs"]},
    )
    per_device_train_batch_size: int = field(
        default=4, metadata={"help": "examples per optimizer step", "aliases": ["--batch-size"]}
    )
    per_device_eval_batch_size: int = field(
        default=0, metadata={"help": "examples per evaluation batch (0: --batch-size)"}
    )
    learning_rate: float = field(default=2e-4, metadata={"help": "AdamW peak learning rate"})
    lr_scheduler_type: SchedulerType | str = field(
        default="cosine", metadata={"help": "learning-rate schedule"}
    )
    warmup_steps: float = field(
        default=-1,
        metadata={"help": "warmup steps, or a share of all steps if < 1 (-1: 5%% of an epoch)"},
    )
    logging_steps: float = field(default=5, metadata={"help": "log the loss every N steps"})
    eval_strategy: IntervalStrategy | str = field(
        default="epoch",
        metadata={"help": "when the validation loss is computed: epoch, steps (--eval-steps), no"},
    )
    eval_steps: float | None = field(
        default=None,
        metadata={"help": "compute the validation loss every N steps (--eval-strategy steps)"},
    )
    save_strategy: SaveStrategy | str = field(
        default="epoch",
        metadata={"help": "when a checkpoint is written: epoch, steps (--save-steps), no"},
    )
    save_steps: float = field(
        default=0,
        metadata={"help": "write a checkpoint every N steps, to --resume from (0: each epoch)"},
    )
    save_total_limit: int | None = field(
        default=2, metadata={"help": "checkpoints kept (the best and the last)"}
    )
    load_best_model_at_end: bool = field(
        default=True, metadata={"help": "publish the weights of the best validation loss"}
    )
    metric_for_best_model: str | None = field(default="eval_loss")
    greater_is_better: bool | None = field(default=False)
    restore_callback_states_from_checkpoint: bool = field(
        default=True, metadata={"help": "a resumed run keeps early stopping's count"}
    )
    seed: int = field(default=0, metadata={"help": "shuffling, split and initialisation seed"})
    disable_tqdm: bool | None = field(default=True)
    dataloader_pin_memory: bool = field(default=False)
    remove_unused_columns: bool = field(default=False)
    bf16: bool | None = field(  # type: ignore[assignment]
        default=None,
        metadata={
            "help": "bf16 autocast over fp32 weights (default: where a GPU has bf16; a CPU "
            "trains in fp32, faster there than emulated bf16)"
        },
    )

    def __post_init__(self) -> None:
        # a --config file gives strings (and a lone string for a list)
        given = self.demonstrations
        files = [given] if isinstance(given, str | Path) else given
        self.demonstrations = [Path(p).expanduser() for p in files]
        self.base, self.out = Path(self.base).expanduser(), Path(self.out).expanduser()
        if self.init_adapter is not None:
            self.init_adapter = Path(self.init_adapter).expanduser()
        if self.output_dir is None:
            self.output_dir = default_work_folder(self.out, self.version)
        if self.per_device_eval_batch_size <= 0:
            self.per_device_eval_batch_size = self.per_device_train_batch_size
        if self.warmup_steps < 0:  # 5% of an epoch, as a share of all steps
            self.warmup_steps = min(0.05 / max(self.num_train_epochs, 1.0), 0.5)
        if self.max_minutes is not None and self.max_minutes <= 0:
            raise ConfigurationError("--max-minutes must be above 0")
        if self.examples not in EXAMPLE_KINDS:
            raise ConfigurationError(f"--examples {self.examples}: give one of {EXAMPLE_KINDS}")
        if self.bf16 is None:
            import torch

            self.bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        every_n_steps(self)
        super().__post_init__()  # type: ignore[no-untyped-call]

    def to_dict(self) -> dict[str, Any]:
        """Every field as a JSON value (paths as strings)."""
        return jsonable(super().to_dict())  # type: ignore[no-untyped-call]


def every_n_steps(config: Any) -> None:
    """`--save-steps N` alone means checkpoints every N steps, `--eval-steps N` alone an
    evaluation every N steps. Keeping the best weights needs a checkpoint at each
    evaluation (the Trainer's rule), so with it the other follows."""
    if config.eval_strategy == "no":  # nothing to pick the best weights from
        config.load_best_model_at_end = False
    if config.save_steps and config.save_strategy == "epoch":
        config.save_strategy = "steps"
    if config.eval_steps and config.eval_strategy == "epoch":
        config.eval_strategy = "steps"
    if config.save_strategy == "steps" and not config.save_steps:
        raise ConfigurationError("--save-strategy steps wants --save-steps N")
    if config.load_best_model_at_end and config.eval_strategy != "no":
        if config.save_strategy == "steps" and config.eval_strategy == "epoch":
            config.eval_strategy, config.eval_steps = "steps", config.save_steps
        elif config.eval_strategy == "steps" and config.save_strategy == "epoch":
            config.save_strategy = "steps"
            config.save_steps = config.eval_steps or config.logging_steps


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


def examples_of(demo: Demonstration, examples: str = "all") -> list[Example]:
    """The training pairs of one demonstration, with the agent's own prompt builders: each
    command and the answer, or ("answers") the answer alone (EXAMPLE_KINDS)."""
    if examples not in EXAMPLE_KINDS:
        raise ConfigurationError(f"examples {examples!r}: give one of {EXAMPLE_KINDS}")
    steps = demo.steps if examples == "all" else []
    pairs = [
        Example(
            browsing_prompt(step.observation), step.command + COMMAND_STOP[0], "command", demo.id
        )
        for step in steps
    ]
    if demo.answer is not None and demo.answer_prompt is not None:
        pairs.append(Example(demo.answer_prompt, demo.answer + ANSWER_STOP[0], "answer", demo.id))
    return pairs


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


def epochs_trained(epoch: float | None, global_step: int, resumed_step: int) -> float:
    """The epochs this process trained: a resumed run's part of the run's `epoch` (a
    fraction where --max-steps stopped it before an epoch's end). The tokens it read are
    the data's tokens times that."""
    done = global_step - resumed_step
    return float(epoch or 0.0) * done / max(global_step, 1)


def data_digest(paths: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def training_demonstrations(
    config: BCConfig, log: Callable[[str], None]
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


def collator(tokenizer: Any) -> Any:
    """transformers' DataCollatorForSeq2Seq on our rows: input_ids padded with the pad
    token and labels with -100, both on the right, and an attention mask of 1 on the real
    tokens. It pads on the tokenizer's side, so that is set to the right here (a base
    tokenizer may say left: generation pads there, agent.hf_policy says so per call)."""
    from transformers import DataCollatorForSeq2Seq

    tokenizer.padding_side = "right"
    return DataCollatorForSeq2Seq(tokenizer, padding=True, label_pad_token_id=-100)


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


def train_bc(
    config: BCConfig,
    log: Callable[[str], None] = print,
    callbacks: Sequence[Any] = (),
) -> BCResult:
    """Train, then publish OUT/VERSION. `callbacks` are more TrainerCallbacks (progress,
    a stop of one's own). An exception on the way leaves the work folder as it was, so
    the run continues from its last checkpoint with `resume`."""
    import torch
    from transformers import (
        AutoModelForCausalLM,
        AutoTokenizer,
        EarlyStoppingCallback,
        Trainer,
    )

    # checked before any data or weights are loaded, so a wrong adapter or a work folder
    # of another run fails at once
    work = Path(str(config.output_dir))
    resume_from = checkpoint_to_resume(work, config.resume, config.resume_from_checkpoint)
    parent = config.base_version or str(config.base)
    if config.init_adapter is not None:
        parent = _adapter_to_continue(config)
    as_adapter = config.lora_rank > 0 or config.init_adapter is not None
    demos, report = training_demonstrations(config, log)
    train_demos, val_demos = split_episodes(demos, config.validation_fraction, config.seed)
    train_examples = [e for d in train_demos for e in examples_of(d, config.examples)]
    val_examples = [e for d in val_demos for e in examples_of(d, config.examples)]
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
    # commands are sampled before and after even where only answers train: browsing kept
    held_prompts = [e.prompt for d in val_demos for e in examples_of(d) if e.kind == "command"][
        : config.validity_prompts
    ]
    layers = model.config.num_hidden_layers
    if not 0 <= config.lora_layers <= layers:
        raise ConfigurationError(
            f"--lora-layers {config.lora_layers}: the base has {layers} layers"
        )
    if config.init_adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, config.init_adapter, is_trainable=True)
        if config.lora_layers:
            freeze_below_top_layers(model, config.lora_layers)
    elif config.lora_rank > 0:
        from peft import LoraConfig, get_peft_model

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

    class _LossLog(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            if logs and "loss" in logs:
                log(f"step {state.global_step}/{state.max_steps}: loss {logs['loss']:.4f}")
            if logs and "eval_loss" in logs:
                log(f"step {state.global_step}: validation loss {logs['eval_loss']:.4f}")

    has_validation = bool(val_rows)
    budget = TimeBudget(config.max_minutes, evaluate=has_validation, log=log)
    arguments = copy.copy(config)
    if not has_validation:  # nothing to evaluate: no evaluation, no best weights to keep
        arguments.eval_strategy = IntervalStrategy.NO
        arguments.load_best_model_at_end = False
    trainer = Trainer(
        model=model,
        args=arguments,
        train_dataset=train_rows,
        eval_dataset=val_rows or None,
        data_collator=collator(tokenizer),
        callbacks=[_LossLog(), budget]
        + (
            [EarlyStoppingCallback(early_stopping_patience=config.patience)]
            if arguments.load_best_model_at_end
            else []
        )
        + list(callbacks),
    )
    if resume_from is not None:
        log(f"resuming from {resume_from}")
    train_output = trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    history = trainer.state.log_history  # a resumed run's holds the steps before it too
    step_losses = [float(entry["loss"]) for entry in history if "loss" in entry]
    evaluations = [
        {
            "epoch": float(entry["epoch"]),
            "step": int(entry["step"]),
            "validation_loss": float(entry["eval_loss"]),
        }
        for entry in history
        if "eval_loss" in entry
    ]
    trained: Any = trainer.model
    validity_after = command_validity(trained, tokenizer, held_prompts)
    log(f"valid unguided commands on held-out prompts after training: {validity_after:.2f}")
    runtime = float(train_output.metrics.get("train_runtime", 0.0))
    state = trainer.state
    epochs_here = epochs_trained(state.epoch, state.global_step, _step_of(resume_from))
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
        "steps": trainer.state.global_step,
        "stop_reason": budget.stop_reason,
        "resumed_from_step": _step_of(resume_from) if resume_from else None,
        "evaluations": evaluations,
        "train_runtime_s": round(runtime, 1),
        "train_tokens_per_s": round(tokens * epochs_here / max(runtime, 1e-9), 1),
        "valid_unguided_commands": {"before": validity_before, "after": validity_after},
        "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
        "peak_accelerator_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)
        if torch.cuda.is_available()
        else None,
        "config": config.to_dict(),
    }
    checkpoint = config.out / config.version
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
    discard_checkpoints(work)
    log(f"published {checkpoint}")
    return BCResult(checkpoint, metrics, step_losses)


class TimeBudget(TrainerCallback):
    """Ends training once `minutes` of it have passed (a run sized to a lease): the step it
    stops at is evaluated and saved, so the best weights so far are the ones published.
    Without minutes it stops nothing. `stop_reason` says how training ended."""

    def __init__(self, minutes: float | None, evaluate: bool, log: Callable[[str], None]):
        self.minutes, self.evaluate, self.log = minutes, evaluate, log
        self.deadline = math.inf
        self.stop_reason = "epochs"

    def on_train_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if self.minutes is not None:
            self.deadline = time.monotonic() + self.minutes * 60

    def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if time.monotonic() < self.deadline or state.global_step >= state.max_steps:
            return
        self.stop_reason = f"the time budget of {self.minutes:g} minutes"
        self.log(f"stopping at step {state.global_step}/{state.max_steps}: {self.stop_reason}")
        control.should_training_stop = True
        # by a "steps" strategy only: the epoch's end follows a stop and does it by "epoch"
        control.should_save = args.save_strategy == SaveStrategy.STEPS
        control.should_evaluate = self.evaluate and args.eval_strategy == IntervalStrategy.STEPS

    def on_train_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if self.stop_reason == "epochs" and state.global_step < state.max_steps:
            self.stop_reason = "early stopping on the validation loss"


_LAYER_INDEX = re.compile(r"\.layers\.(\d+)\.")


def freeze_below_top_layers(model: Any, top: int) -> None:
    """Train only the continued adapter's weights in the top `top` layers. The frozen ones
    still apply, and the backward pass stops at the lowest trainable layer, which is what
    makes a continuation on the CPU cheaper (as `--lora-layers` does for a fresh adapter)."""
    layers = model.config.num_hidden_layers
    for name, parameter in model.named_parameters():
        index = _LAYER_INDEX.search(name)
        if parameter.requires_grad and index is not None and int(index[1]) < layers - top:
            parameter.requires_grad_(False)


def _step_of(checkpoint: Path | None) -> int:
    return int(checkpoint.name.rsplit("-", 1)[1]) if checkpoint is not None else 0


def _adapter_to_continue(config: BCConfig) -> str:
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
