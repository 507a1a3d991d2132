"""Behavior cloning: a tiny policy the test builds learns from a handful of demonstrations."""

import dataclasses
import io
import json
import math
import re
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from transformers import TrainerCallback

from tests.learning.test_demonstrations import scripted_demos
from webgpt.agent.errors import ConfigurationError, DataError
from webgpt.browser.web import Web
from webgpt.infra.checkpoints import load_manifest
from webgpt.infra.errors import CheckpointError, OptionsError
from webgpt.infra.trainer_options import parse_config
from webgpt.learning.bc import (
    BCConfig,
    BCResult,
    TimeBudget,
    collator,
    epochs_trained,
    examples_of,
    tokenize_example,
    train_bc,
    training_demonstrations,
)
from webgpt.learning.cli import browse
from webgpt.learning.demonstrations import write_demonstrations
from webgpt.service.cli import build_parser


def build_tiny_policy(folder: Path, texts: list[str]) -> Path:
    """A 2-layer Llama and a byte-level BPE tokenizer trained on the demonstrations' text."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    core = ByteLevelBPETokenizer()
    core.train_from_iterator(texts, vocab_size=600, special_tokens=["<eos>", "<pad>"])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core._tokenizer, eos_token="<eos>", pad_token="<pad>"
    )
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    # Seeded: the thresholds the training tests assert must not depend on which tests ran
    # first and drew from the global generator.
    with torch.random.fork_rng():
        torch.manual_seed(0)
        LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


async def demos_and_tiny_base(
    web: Web, tmp_path: Path, keep: int | None = None
) -> tuple[Path, Path]:
    """The scripted demonstrations (the first `keep`), all of split train, in a file, and a
    tiny base whose tokenizer was trained on their text."""
    demos = [d.model_copy(update={"split": "train"}) for d in await scripted_demos(web)]
    demos = demos[:keep]
    demo_file = tmp_path / "demos.jsonl"
    write_demonstrations(demo_file, demos)
    texts = [e.prompt + e.completion for d in demos for e in examples_of(d)]
    return demo_file, build_tiny_policy(tmp_path / "base", texts)


@pytest.mark.slow  # about a minute of training on 2 cores
async def test_a_tiny_policy_learns_to_write_commands(learning_web: Web, tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file

    demos = await scripted_demos(learning_web, detour_share=0.3)
    demos = [d.model_copy(update={"split": "train"}) for d in demos]  # all trainable
    demo_file = tmp_path / "demos.jsonl"
    write_demonstrations(demo_file, demos)
    texts = [e.prompt + e.completion for d in demos for e in examples_of(d)]
    base = build_tiny_policy(tmp_path / "base", texts)
    before = load_file(base / "model.safetensors")

    result = train_bc(
        BCConfig(
            demonstrations=[demo_file],
            base=base,
            out=tmp_path / "registry",
            version="bc-test",
            num_train_epochs=10,
            learning_rate=4e-3,
            per_device_train_batch_size=4,
            validation_fraction=0.25,
            patience=50,
            lora_rank=0,
            validity_prompts=8,
        ),
        log=lambda _: None,
    )

    losses = result.step_losses
    assert losses and all(math.isfinite(x) for x in losses)
    assert losses[-1] < 0.5 * losses[0]
    validity = result.manifest_metrics["valid_unguided_commands"]
    assert validity["after"] > validity["before"]
    assert validity["after"] >= 0.5
    manifest = load_manifest(result.checkpoint, verify=True)
    assert manifest.kind == "policy" and manifest.version == "bc-test"
    assert manifest.metrics["demonstrations_by_source"] == {"scripted": len(demos)}
    assert len(manifest.metrics["data_sha256"]) == 64
    assert manifest.metrics["config"]["num_train_epochs"] == 10
    assert json.loads((result.checkpoint / "train_config.json").read_text())["lora_rank"] == 0
    after = load_file(result.checkpoint / "model.safetensors")
    assert any(not torch.equal(before[name], after[name]) for name in before)


@pytest.mark.slow  # trains
async def test_lora_publishes_only_an_adapter(learning_web: Web, tmp_path: Path) -> None:
    demo_file, base = await demos_and_tiny_base(learning_web, tmp_path, keep=2)
    result = train_bc(
        BCConfig(
            demonstrations=[demo_file],
            base=base,
            out=tmp_path / "registry",
            num_train_epochs=1,
            lora_rank=4,
            lora_layers=1,
            validation_fraction=0.0,
            validity_prompts=0,
        ),
        log=lambda _: None,
    )
    files = set(load_manifest(result.checkpoint, verify=True).files)
    assert {"adapter_model.safetensors", "adapter_config.json"} <= files
    assert "model.safetensors" not in files
    adapter = json.loads((result.checkpoint / "adapter_config.json").read_text())
    assert adapter["layers_to_transform"] == [1]


@pytest.mark.slow  # trains
@pytest.mark.parametrize("strategy", ["epoch", "steps"])
async def test_a_time_budget_stops_training_and_keeps_the_weights_it_reached(
    learning_web: Web, tmp_path: Path, strategy: str
) -> None:
    demo_file, base = await demos_and_tiny_base(learning_web, tmp_path)
    lines: list[str] = []
    result = train_bc(
        BCConfig(
            demonstrations=[demo_file],
            base=base,
            out=tmp_path / "registry",
            num_train_epochs=3,
            per_device_train_batch_size=2,
            lora_rank=4,
            validation_fraction=0.25,
            validity_prompts=0,
            max_minutes=1e-9,  # spent before the first step ends: a stop that is not a race
            eval_strategy=strategy,
        ),
        log=lines.append,
    )
    metrics = load_manifest(result.checkpoint, verify=True).metrics
    assert metrics["steps"] == 1
    assert metrics["stop_reason"] == "the time budget of 1e-09 minutes"
    assert [e["step"] for e in metrics["evaluations"]] == [1]  # the stop is evaluated
    assert any(line.startswith("stopping at step 1/") for line in lines)


def test_a_run_that_ends_before_its_steps_within_its_budget_stopped_early() -> None:
    budget = TimeBudget(60, evaluate=True, log=lambda _: None)
    budget.on_train_end(None, SimpleNamespace(global_step=3, max_steps=10), None)
    assert budget.stop_reason == "early stopping on the validation loss"
    budget = TimeBudget(None, evaluate=True, log=lambda _: None)
    budget.on_train_end(None, SimpleNamespace(global_step=10, max_steps=10), None)
    assert budget.stop_reason == "epochs"


def test_a_time_budget_must_be_above_zero(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="--max-minutes must be above 0"):
        BCConfig(demonstrations=[tmp_path / "d.jsonl"], base=tmp_path, out=tmp_path, max_minutes=0)


@pytest.mark.slow  # trains
async def test_training_continues_an_adapter_from_its_weights(
    learning_web: Web, tmp_path: Path
) -> None:
    """--init-adapter starts from a published adapter (its rank, layers and weights), records
    it as the parent, and refuses an adapter made for another base."""
    from safetensors.torch import load_file

    demos = [d.model_copy(update={"split": "train"}) for d in await scripted_demos(learning_web)]
    demo_file = tmp_path / "demos.jsonl"
    write_demonstrations(demo_file, demos[:2])
    texts = [e.prompt + e.completion for d in demos for e in examples_of(d)]
    base = build_tiny_policy(tmp_path / "base", texts)

    def train(version: str, **options: object) -> BCResult:
        config = BCConfig(
            demonstrations=[demo_file],
            base=base,
            base_version="tiny",
            out=tmp_path / "registry",
            version=version,
            num_train_epochs=1,
            per_device_train_batch_size=1,
            learning_rate=1e-2,
            validation_fraction=0.0,
            validity_prompts=0,
            **options,  # type: ignore[arg-type]
        )
        return train_bc(config, log=lambda _: None)

    first = train("bc-1", lora_rank=4, lora_layers=1)
    second = train("bc-2", init_adapter=first.checkpoint)
    assert second.step_losses[0] < first.step_losses[0]  # it starts where bc-1 ended
    adapter = json.loads((second.checkpoint / "adapter_config.json").read_text())
    assert adapter["r"] == 4 and adapter["layers_to_transform"] == [1]
    assert load_manifest(second.checkpoint).metrics["parent"] == "bc-1"
    weights = {
        name: load_file(run.checkpoint / "adapter_model.safetensors")
        for name, run in [("first", first), ("second", second)]
    }
    assert set(weights["first"]) == set(weights["second"])
    assert any(not weights["first"][k].equal(weights["second"][k]) for k in weights["first"])
    # continued with --lora-layers, only the top layers' weights move
    whole = train("bc-whole", lora_rank=4)
    top = train("bc-top", init_adapter=whole.checkpoint, lora_layers=1)
    before, after = (load_file(r.checkpoint / "adapter_model.safetensors") for r in (whole, top))
    moved = {k for k in before if not before[k].equal(after[k])}
    assert moved and all(".layers.1." in k for k in moved)
    assert any(".layers.0." in k for k in before)
    for wrong in (3, -1):  # the tiny base has two layers
        with pytest.raises(ConfigurationError, match=f"--lora-layers {wrong}: the base has 2"):
            train(f"bc-wrong{wrong}", init_adapter=whole.checkpoint, lora_layers=wrong)
    assert not (tmp_path / "registry" / "bc-wrong3").exists()
    for base_version, adapter, refusal in [
        ("other", first.checkpoint, "trained on 'tiny', not on the base 'other'"),
        ("tiny", base, "has no readable manifest"),  # a model folder, not a checkpoint
    ]:
        bad = BCConfig(
            demonstrations=[demo_file],
            base=base,
            base_version=base_version,
            out=tmp_path / "registry",
            version="bc-3",
            init_adapter=adapter,
        )
        with pytest.raises((DataError, CheckpointError), match=refusal):
            train_bc(bad, log=lambda _: None)
    assert not (tmp_path / "registry" / "bc-3").exists()


async def test_demonstrations_without_a_split_are_trained_on_only_when_asked(
    learning_web: Web, tmp_path: Path
) -> None:
    """A question a person types has no split and may be a dev or test question: left out
    (and counted, so the person sees why) unless --include-untagged."""
    demos = (await scripted_demos(learning_web))[:4]
    splits = ["train", "dev", None, None]
    demo_file = tmp_path / "demos.jsonl"
    write_demonstrations(
        demo_file, [d.model_copy(update={"split": s}) for d, s in zip(demos, splits, strict=True)]
    )
    config = BCConfig(demonstrations=[demo_file], base=tmp_path / "base", out=tmp_path)

    logged: list[str] = []
    used, report = training_demonstrations(config, logged.append)
    assert [d.split for d in used] == ["train"]
    assert report.other_splits == {"dev": 1, "untagged": 2}
    summary = "1 demonstrations used (scripted 1), 3 of other splits left out (dev 1, untagged 2)"
    assert logged[0].startswith(summary)  # the loader's report, which the CLI prints
    assert "2 demonstrations without a split left out" in logged[1]
    assert "--include-untagged" in logged[1]

    logged.clear()
    included = dataclasses.replace(config, include_untagged=True)
    used, report = training_demonstrations(included, logged.append)
    assert sorted(str(d.split) for d in used) == ["None", "None", "train"]
    assert report.other_splits == {"dev": 1} and len(logged) == 1


async def test_nothing_to_train_on_says_to_tag_or_include_the_untagged(
    learning_web: Web, tmp_path: Path
) -> None:
    demos = (await scripted_demos(learning_web))[:2]
    demo_file = tmp_path / "demos.jsonl"
    write_demonstrations(
        demo_file,
        [demos[0].model_copy(update={"split": None}), demos[1].model_copy(update={"split": "dev"})],
    )
    config = BCConfig(demonstrations=[demo_file], base=tmp_path / "base", out=tmp_path)
    advice = 'no training demonstrations (split train); 1 have no split: tag them with "split"'
    with pytest.raises(DataError, match=re.escape(advice + ': "train" or pass --include-untagged')):
        train_bc(config, log=lambda _: None)
    only_dev = dataclasses.replace(config, include_untagged=True)
    write_demonstrations(demo_file, [demos[1].model_copy(update={"split": "dev"})])
    with pytest.raises(DataError, match=r"\(split train, or without a split\)$"):
        train_bc(only_dev, log=lambda _: None)
    assert not (tmp_path / "bc-0001").exists()


async def test_a_demonstration_recorded_with_a_split_is_trained_on(
    learning_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The advice works: `webgpt browse --record --split train` tags what a person records."""
    monkeypatch.setenv("WEBGPT_HOME", str(tmp_path))
    shutil.copy(learning_store, tmp_path / "offline-web.sqlite")
    records = tmp_path / "mine.jsonl"
    for split in ([], ["--split", "train"]):
        command = ["browse", "-q", "Who painted the Mona Lisa?", "--js", "never"]
        args = build_parser().parse_args([*command, "--record", str(records), *split])
        assert (
            await browse(args, io.StringIO("Search Mona Lisa\nEnd: Nonsense\n"), io.StringIO()) == 0
        )
    config = BCConfig(demonstrations=[records], base=tmp_path / "base", out=tmp_path)
    [demo], report = training_demonstrations(config, lambda _: None)
    assert demo.split == "train" and demo.source == "person"
    assert report.other_splits == {"untagged": 1}


def bc_config(*options: str) -> BCConfig:
    """`webgpt train bc OPTIONS` as the command reads them."""
    args = build_parser().parse_args(["train", "bc", *options])
    return parse_config(BCConfig, args.options, "webgpt train bc")


REQUIRED = ["--demonstrations", "d.jsonl", "--base", "b", "--out", "o"]


async def test_answers_alone_train_only_each_demonstration_s_answer(learning_web: Web) -> None:
    demo = (await scripted_demos(learning_web))[0]
    every = examples_of(demo)
    assert [e.kind for e in every] == ["command"] * len(demo.steps) + ["answer"]
    assert examples_of(demo, "answers") == every[-1:]
    with pytest.raises(ConfigurationError, match="give one of"):
        examples_of(demo, "commands")


def test_examples_is_an_option_of_train_bc() -> None:
    assert bc_config(*REQUIRED).examples == "all"
    assert bc_config(*REQUIRED, "--examples", "answers").examples == "answers"
    with pytest.raises((OptionsError, SystemExit)):
        bc_config(*REQUIRED, "--examples", "commands")


def test_include_untagged_is_an_option_of_train_bc() -> None:
    assert bc_config(*REQUIRED).include_untagged is False
    assert bc_config(*REQUIRED, "--include-untagged").include_untagged is True


def test_train_bc_keeps_its_option_names_and_reaches_every_trainer_option() -> None:
    config = bc_config(
        "--demonstrations", "a.jsonl", "b.jsonl", "--demonstrations", "c.jsonl",
        "--base", "b", "--out", "o", "--version", "bc-7", "--epochs", "2", "--batch-size", "8",
        "--learning-rate", "1e-3", "--gradient_accumulation_steps", "2", "--report-to",
        "tensorboard", "--save-steps", "50",
    )  # fmt: skip
    assert config.demonstrations == [Path("a.jsonl"), Path("b.jsonl"), Path("c.jsonl")]
    assert (config.num_train_epochs, config.per_device_train_batch_size) == (2, 8)
    assert config.per_device_eval_batch_size == 8  # follows --batch-size
    assert (config.learning_rate, config.gradient_accumulation_steps) == (1e-3, 2)
    assert config.report_to == ["tensorboard"]
    # checkpoints every 50 steps, and the evaluation that keeps the best weights with them
    assert (config.save_strategy, config.save_steps) == ("steps", 50)
    assert (config.eval_strategy, config.eval_steps) == ("steps", 50)
    assert config.output_dir == str(Path("o") / "bc-7.work")  # the documented work folder
    defaults = bc_config(*REQUIRED)
    assert (defaults.save_strategy, defaults.eval_strategy) == ("epoch", "epoch")
    assert defaults.report_to == [] and defaults.seed == 0 and not defaults.resume
    evaluated = bc_config(*REQUIRED, "--eval-steps", "20")
    assert (evaluated.eval_strategy, evaluated.save_strategy, evaluated.save_steps) == (
        "steps", "steps", 20,
    )  # fmt: skip


def test_train_bc_reads_a_config_file_that_flags_override(tmp_path: Path) -> None:
    run = tmp_path / "run.yaml"
    run.write_text(
        "demonstrations: [a.jsonl, b.jsonl]\n"
        "base: ~/models/base\n"
        "out: registry\n"
        "epochs: 2\n"  # the option's name
        "batch-size: 16\n"
        "learning_rate: 3e-4\n"  # YAML reads this as a string: the option's type parses it
        "lora_rank: 0\n"
        "output_dir: work\n"
    )
    config = bc_config("--config", str(run))
    assert config.demonstrations == [Path("a.jsonl"), Path("b.jsonl")]
    assert config.base == Path("~/models/base").expanduser()
    assert (config.num_train_epochs, config.per_device_train_batch_size) == (2, 16)
    assert (config.learning_rate, config.lora_rank, config.output_dir) == (3e-4, 0, "work")

    flagged = bc_config(
        f"--config={run}", "--epochs", "5", "--demonstrations", "c.jsonl", "--lora-rank", "4"
    )
    assert flagged.num_train_epochs == 5 and flagged.lora_rank == 4
    assert flagged.demonstrations == [Path("c.jsonl")]  # a flag replaces the file's list
    assert flagged.per_device_train_batch_size == 16  # the rest is still the file's

    run.write_text(run.read_text() + "lora_rnak: 3\n")
    with pytest.raises(OptionsError, match="lora_rnak"):
        bc_config("--config", str(run))
    with pytest.raises(OptionsError, match="No such file"):
        bc_config("--config", str(tmp_path / "missing.yaml"))


def test_the_collator_pads_ids_and_labels_on_the_right(tmp_path: Path) -> None:
    """transformers' DataCollatorForSeq2Seq pads as the collator it replaced did: ids with
    the pad token and labels with -100 after the row, the mask 1 on the real tokens; even
    when the base's tokenizer pads on the left (for generation)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(build_tiny_policy(tmp_path, ["a b c d e f"]))
    tokenizer.padding_side = "left"
    pad = tokenizer.pad_token_id
    rows = [
        {"input_ids": [5, 6, 7, 8], "labels": [-100, -100, 7, 8]},
        {"input_ids": [9, 10], "labels": [-100, 10]},
    ]
    batch = collator(tokenizer)(rows)
    assert batch["input_ids"].tolist() == [[5, 6, 7, 8], [9, 10, pad, pad]]
    assert batch["labels"].tolist() == [[-100, -100, 7, 8], [-100, 10, -100, -100]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 0, 0]]
    assert {str(batch[k].dtype) for k in ("input_ids", "labels", "attention_mask")} == {
        "torch.int64"
    }


class Killed(Exception):
    """Stands for the end of a process (a kill, a lost machine) in the middle of a run."""


class KillAt(TrainerCallback):
    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if state.global_step == self.step:
            raise Killed(f"killed at step {self.step}")


class FinalWeights(TrainerCallback):
    """The trained fp32 weights as training ends (the published checkpoint is bf16)."""

    def __init__(self) -> None:
        self.weights: dict[str, Any] = {}

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        parameters = kwargs["model"].named_parameters()
        self.weights = {name: p.detach().clone() for name, p in parameters}


@pytest.mark.slow  # trains
async def test_a_killed_run_resumed_ends_with_the_weights_of_an_uninterrupted_run(
    learning_web: Web, tmp_path: Path
) -> None:
    import torch

    demos = [d.model_copy(update={"split": "train"}) for d in await scripted_demos(learning_web)]
    demo_file = tmp_path / "demos.jsonl"
    write_demonstrations(demo_file, demos[:4])
    texts = [e.prompt + e.completion for d in demos for e in examples_of(d)]
    base = build_tiny_policy(tmp_path / "base", texts)
    registry = tmp_path / "registry"

    def config(version: str, *more: str) -> BCConfig:
        return bc_config(
            "--demonstrations", str(demo_file), "--base", str(base), "--out", str(registry),
            "--version", version, "--epochs", "2", "--batch-size", "2", "--learning-rate",
            "4e-3", "--lora-rank", "0", "--validation-fraction", "0.25", "--patience", "50",
            "--validity-prompts", "0", "--logging-steps", "1", "--save-steps", "4", *more,
        )  # fmt: skip

    straight = FinalWeights()
    whole = train_bc(config("bc-straight"), log=lambda _: None, callbacks=[straight])
    steps = whole.manifest_metrics["steps"]
    assert steps > 12  # the kill below falls in the second epoch, after checkpoint 12

    with pytest.raises(Killed):
        train_bc(config("bc-resumed"), log=lambda _: None, callbacks=[KillAt(14)])
    work = registry / "bc-resumed.work"
    assert (work / "checkpoint-12").is_dir() and not (registry / "bc-resumed").exists()
    with pytest.raises(ConfigurationError, match="checkpoints of an earlier run"):
        train_bc(config("bc-resumed"), log=lambda _: None)  # a new run would mix with it
    resumed = FinalWeights()
    lines: list[str] = []
    resuming = config("bc-resumed", "--resume", "--report-to", "tensorboard")
    result = train_bc(resuming, log=lines.append, callbacks=[resumed])

    assert any(line.endswith("checkpoint-12") for line in lines)
    assert result.manifest_metrics["resumed_from_step"] == 12
    assert result.manifest_metrics["steps"] == steps
    # The same batches in the same order from the same weights, optimizer moments, schedule
    # and RNG: on a CPU in float32 the resumed run repeats the uninterrupted one operation
    # for operation. Measured (torch 2.13, transformers 5.19): every step loss, validation
    # loss and weight bit-identical, the largest difference 0.0. The 1e-6 bound only leaves
    # room for float32 rounding in another kernel; an Adam step here moves a weight by up
    # to the learning rate (4e-3 at its peak).
    assert result.step_losses == pytest.approx(whole.step_losses, abs=1e-6)
    assert len(result.step_losses) == steps
    evaluations = result.manifest_metrics["evaluations"]  # every 4 steps, with the checkpoints
    assert [e["step"] for e in evaluations] == list(range(4, steps + 1, 4))
    for first, again in zip(whole.manifest_metrics["evaluations"], evaluations, strict=True):
        assert again["validation_loss"] == pytest.approx(first["validation_loss"], abs=1e-6)
    assert straight.weights.keys() == resumed.weights.keys()
    for name, weight in straight.weights.items():
        assert torch.allclose(resumed.weights[name], weight, rtol=0, atol=1e-6), name
    assert not list(work.glob("checkpoint-*"))  # published: the checkpoints are gone
    assert list(work.glob("runs/*/events.out.tfevents.*"))  # the logs stay


async def test_loss_is_on_the_completion_only(learning_web: Web, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    demo = (await scripted_demos(learning_web))[0]
    texts = [e.prompt + e.completion for e in examples_of(demo)]
    tokenizer = AutoTokenizer.from_pretrained(build_tiny_policy(tmp_path / "t", texts))
    example = examples_of(demo)[0]
    row = tokenize_example(tokenizer, example)
    prompt_length = len(tokenizer(example.prompt)["input_ids"])
    assert row["labels"][:prompt_length] == [-100] * prompt_length
    assert tokenizer.decode(row["labels"][prompt_length:]) == example.completion


async def test_an_adapter_is_merged_into_its_registry_base_for_serving(
    learning_web: Web, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`webgpt eval --policy ADAPTER` serves the adapter merged into its base: the merged
    weights compute what base + adapter compute, made once and then reused."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from webgpt.agent.errors import ModelError
    from webgpt.agent.model import merged_adapter, policy_dir
    from webgpt.agent.registry import PolicyRegistry

    monkeypatch.setenv("WEBGPT_HOME", str(tmp_path / "home"))
    demos = [d.model_copy(update={"split": "train"}) for d in await scripted_demos(learning_web)]
    demo_file = tmp_path / "demos.jsonl"
    write_demonstrations(demo_file, demos[:2])
    texts = [e.prompt + e.completion for d in demos for e in examples_of(d)]
    base = build_tiny_policy(tmp_path / "base", texts)
    config = BCConfig(
        demonstrations=[demo_file], base=base, base_version="tiny", out=tmp_path / "registry",
        version="bc-1", num_train_epochs=1, per_device_train_batch_size=1, learning_rate=1e-2,
        lora_rank=4, validation_fraction=0.0, validity_prompts=0,
    )  # fmt: skip
    adapter = train_bc(config, log=lambda _: None).checkpoint
    with pytest.raises(ModelError, match="not in the registry"):
        merged_adapter(adapter)
    PolicyRegistry(policy_dir("tiny").parent).publish(base, "tiny", base_model="tiny")

    merged = merged_adapter(adapter)
    assert load_manifest(merged, verify=True).version == "bc-1"
    assert merged_adapter(adapter) == merged  # made once
    tokens = AutoTokenizer.from_pretrained(merged)(texts[0][:200], return_tensors="pt")

    def logits(folder: Path, adapter: Path | None = None) -> torch.Tensor:
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16)
        if adapter is not None:
            model = PeftModel.from_pretrained(model, adapter)
        with torch.no_grad():
            return model(**tokens).logits.float()

    served, expected = logits(merged), logits(policy_dir("tiny"), adapter)
    # bf16 weights, rounded once when merged: close, not bit-equal
    assert torch.allclose(served, expected, atol=0.1)
    assert not torch.allclose(served, logits(base), atol=0.1)  # the adapter is in


def test_the_epochs_a_run_trained_count_a_max_steps_stop_and_a_resume() -> None:
    assert epochs_trained(2.0, 100, 0) == 2.0
    assert epochs_trained(0.43, 120, 0) == 0.43  # --max-steps 120 stopped it mid-epoch
    assert epochs_trained(1.0, 100, 50) == 0.5  # resumed at step 50: this process's half
    assert epochs_trained(None, 0, 0) == 0.0
