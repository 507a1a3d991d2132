"""Training a tiny reward model the test builds itself, on comparisons with a known
preference (an answer that says the sky is blue beats one that names another colour)."""

import json
import re
from pathlib import Path

import pytest
import torch

from tests.reward.tiny import answer, build_tiny_backbone, write_comparisons
from webgpt.browser.observation import OBSERVATION_FORMAT_VERSION
from webgpt.infra.checkpoints import load_manifest
from webgpt.reward.config import RewardTrainConfig
from webgpt.reward.model import RewardModel
from webgpt.reward.scorer import RewardScorer
from webgpt.reward.train import _Ema, train_reward_model

QUOTE = (
    "what color is the sky in story 150■"
    "[1] Sky notes (example.org)\n\nin story 150 the sky is blue■"
)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, object]:
    folder = tmp_path_factory.mktemp("rm")
    backbone = build_tiny_backbone(folder / "backbone")
    comparisons = folder / "comparisons.jsonl"
    write_comparisons(comparisons, stories=120)
    held_out = folder / "held-out.jsonl"  # stories 100-159: 100-119 were trained on
    write_comparisons(held_out, stories=60, seed=1, first=100)
    config = RewardTrainConfig(
        comparisons=[comparisons],
        backbone=backbone,
        out=folder / "registry",
        version="rm-test",
        epochs=4,
        learning_rate=3e-3,
        questions_per_batch=8,
        ema_decay=0.9,
        validation_fraction=0.2,
        patience=2,
        max_length=64,
        held_out=held_out,
    )
    return backbone, folder / "registry" / "rm-test", train_reward_model(config, log=lambda _: None)


def test_loss_falls_and_validation_accuracy_is_well_above_chance(trained) -> None:  # type: ignore[no-untyped-def]
    _, checkpoint, result = trained
    losses = result.step_losses
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    assert all(torch.isfinite(torch.tensor(losses)))
    assert last < first * 0.8, (first, last)
    assert result.epochs[-1]["accuracy"] > 0.8
    manifest = load_manifest(checkpoint, verify=True)
    assert manifest.kind == "reward" and manifest.version == "rm-test"
    assert manifest.metrics["validation_accuracy"] > 0.8
    assert manifest.metrics["comparisons"] == 120 * 4
    saved = json.loads((checkpoint / "train_config.json").read_text())
    assert saved["ema_decay"] == 0.9 and saved["version"] == "rm-test"


def test_accuracy_on_held_out_questions_never_trained_on(trained) -> None:  # type: ignore[no-untyped-def]
    _, checkpoint, _ = trained
    held_out = load_manifest(checkpoint).metrics["held_out"]
    # of stories 100-159, those in the training split are left out; validation ones stay
    assert 40 <= held_out["questions"] < 60
    assert held_out["questions"] + held_out["left_out_trained_questions"] == 60
    assert held_out["pairs"] == 3 * held_out["questions"]  # ties between non-blue excluded
    assert held_out["accuracy"] > 0.8


def test_parameters_changed(trained) -> None:  # type: ignore[no-untyped-def]
    backbone, checkpoint, _ = trained
    before = RewardModel.from_backbone(backbone).backbone.state_dict()
    after = RewardModel.load(checkpoint).backbone.state_dict()
    changed = [name for name in before if not torch.equal(before[name], after[name])]
    assert len(changed) > len(before) // 2


def test_scorer_prefers_the_known_preference_and_is_normalised(trained) -> None:  # type: ignore[no-untyped-def]
    _, checkpoint, _ = trained
    scorer = RewardScorer(checkpoint)
    assert scorer.name == "rm-test"
    colors = ["blue", "green", "red", "purple"]
    scores = scorer.score_texts([QUOTE + answer(150, c) for c in colors])
    assert scores[0] == max(scores), dict(zip(colors, scores, strict=True))
    # Normalised on the held-out answers: their mean is ~0 (most are not blue: below 0).
    assert scores[0] > 0 > min(scores)
    batched = scorer.score_texts([QUOTE + answer(150, "blue")] * 3)
    assert batched == pytest.approx([scores[0]] * 3, abs=1e-5)  # padding changes nothing


def test_ema_averages_weights() -> None:
    model = torch.nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(0.0)
    ema = _Ema(model, decay=0.5)
    with torch.no_grad():
        model.weight.fill_(1.0)
    ema.update(model)  # 0.5 * 0 + 0.5 * 1
    with torch.no_grad():
        model.weight.fill_(3.0)
    ema.update(model)  # 0.5 * 0.5 + 0.5 * 3
    ema.copy_to(model)
    assert float(model.weight.detach()) == pytest.approx(1.75)


@pytest.mark.slow  # trains
def test_lora_training_saves_a_plain_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It also says where an epoch is as it goes (every PROGRESS_STEPS steps)."""
    from webgpt.reward import train

    monkeypatch.setattr(train, "PROGRESS_STEPS", 2)
    backbone = build_tiny_backbone(tmp_path / "backbone")
    comparisons = tmp_path / "c.jsonl"
    write_comparisons(comparisons, stories=10)
    config = RewardTrainConfig(
        comparisons=[comparisons],
        backbone=backbone,
        out=tmp_path / "registry",
        version="lora",
        epochs=1,
        learning_rate=1e-2,
        lora_rank=2,
        max_length=64,
        questions_per_batch=2,
    )
    logged: list[str] = []
    result = train_reward_model(config, log=logged.append)
    assert all(torch.isfinite(torch.tensor(result.step_losses)))
    progress = [line for line in logged if ", step " in line]
    assert progress and all(
        re.fullmatch(r"epoch 1, step \d+/\d+: loss \d+\.\d{4}", line) for line in progress
    )
    assert progress[0].startswith("epoch 1, step 2/")
    files = {p.name for p in result.checkpoint.iterdir()}
    assert {"config.json", "model.safetensors", "manifest.json"} <= files
    config = json.loads((result.checkpoint / "config.json").read_text())
    assert config["architectures"] == ["LlamaForSequenceClassification"]
    assert config["num_labels"] == 1 if "num_labels" in config else len(config["id2label"]) == 1
    assert not any("adapter" in name for name in files)  # LoRA merged into the weights
    RewardModel.load(result.checkpoint)


def published_backbone(folder: Path, version: str) -> Path:
    """The tiny backbone as a registry version (with its manifest), as the default policy is."""
    from webgpt.infra.checkpoints import publish

    staging = build_tiny_backbone(folder / f".{version}")
    target = folder / version
    publish(staging, target, kind="policy", version=version, base_model="tiny",
            observation_format_version=OBSERVATION_FORMAT_VERSION, metrics={})  # fmt: skip
    return target


def train_with_adapter(folder: Path, backbone: Path, version: str) -> tuple[Path, Path]:
    """A LoRA reward model trained on backbone: (merged checkpoint, published adapter)."""
    comparisons = folder / "c.jsonl"
    write_comparisons(comparisons, stories=40)
    config = RewardTrainConfig(
        comparisons=[comparisons],
        backbone=backbone,
        out=folder / "registry",
        adapter_out=folder / "adapters",
        version=version,
        epochs=3,
        learning_rate=3e-2,
        questions_per_batch=4,
        lora_rank=4,
        max_length=64,
    )
    result = train_reward_model(config, log=lambda _: None)
    return result.checkpoint, folder / "adapters" / version


def rewards(model: RewardModel, tokenizer_folder: Path, texts: list[str]) -> list[float]:
    from transformers import AutoTokenizer

    from webgpt.reward.model import tokenize

    with torch.no_grad():
        return model.eval()(
            **tokenize(AutoTokenizer.from_pretrained(tokenizer_folder), texts, 64)
        ).tolist()


TEXTS = [QUOTE + answer(150, "blue"), QUOTE + answer(150, "green"), QUOTE + answer(150, "red")]


@pytest.mark.slow  # trains
def test_lora_training_publishes_the_adapter_alone_which_merges_back(tmp_path: Path) -> None:
    backbone = published_backbone(tmp_path, "tiny-policy")
    checkpoint, adapter = train_with_adapter(tmp_path, backbone, "rm-lora")
    manifest = load_manifest(adapter, verify=True)
    assert manifest.kind == "reward" and manifest.base_model == "tiny-policy"
    assert load_manifest(checkpoint).base_model == "tiny-policy"
    assert manifest.metrics["offset"] == load_manifest(checkpoint).metrics["offset"]
    assert set(manifest.files) == {
        "adapter_config.json",
        "adapter_model.safetensors",
        "score.safetensors",
        "train_config.json",
        "README.md",
    }  # fmt: skip: no backbone weights
    merged = rewards(RewardModel.load(checkpoint), checkpoint, TEXTS)
    again = rewards(RewardModel.from_adapter(backbone, adapter), checkpoint, TEXTS)
    untrained = RewardModel.from_backbone(backbone)
    untrained.head.load_state_dict(RewardModel.load(checkpoint).head.state_dict())
    head_only = rewards(untrained, checkpoint, TEXTS)
    # bf16 adapter weights move rewards a little; the adapter itself moves them far more
    assert again == pytest.approx(merged, abs=0.02)
    assert max(abs(a - b) for a, b in zip(head_only, merged, strict=True)) > 0.2


def continue_adapter(folder: Path, backbone: Path, adapter: Path, learning_rate: float) -> Path:
    """adapter trained further (`--init-adapter`) on comparisons of other stories."""
    comparisons = folder / "more.jsonl"
    write_comparisons(comparisons, stories=8, seed=2, first=200)
    config = RewardTrainConfig(
        comparisons=[comparisons],
        backbone=backbone,
        out=folder / "registry",
        adapter_out=folder / "adapters",
        version=f"rm-continued-{learning_rate}",
        epochs=1,
        learning_rate=learning_rate,
        questions_per_batch=4,
        ema_decay=0.0,
        lora_rank=4,
        max_length=64,
        init_adapter=adapter,
    )
    train_reward_model(config, log=lambda _: None)
    return folder / "adapters" / config.version


@pytest.mark.slow  # trains
def test_training_continues_an_adapter_and_publishes_one_adapter_on_the_same_backbone(
    tmp_path: Path,
) -> None:
    from safetensors.torch import load_file

    backbone = published_backbone(tmp_path, "tiny-policy")
    checkpoint, adapter = train_with_adapter(tmp_path, backbone, "rm-first")
    first = rewards(RewardModel.from_adapter(backbone, adapter), checkpoint, TEXTS)

    without_lora = RewardModel.from_backbone(backbone)
    without_lora.head.load_state_dict(RewardModel.load(checkpoint).head.state_dict())
    head_only = rewards(without_lora, checkpoint, TEXTS)

    # not a step taken: the continued model scores as the adapter it started from, where
    # a new LoRA (zero at the start) would score as the backbone alone
    unmoved = continue_adapter(tmp_path, backbone, adapter, learning_rate=0.0)
    again = rewards(RewardModel.from_adapter(backbone, unmoved), checkpoint, TEXTS)
    assert again == pytest.approx(first, abs=0.02)
    assert max(abs(a - b) for a, b in zip(head_only, first, strict=True)) > 0.2

    moved = continue_adapter(tmp_path, backbone, adapter, learning_rate=3e-2)
    manifest = load_manifest(moved, verify=True)
    assert manifest.base_model == "tiny-policy"  # shipped and merged as the first one
    before, after = (
        load_file(adapter / "adapter_model.safetensors"),
        load_file(moved / "adapter_model.safetensors"),
    )
    assert before.keys() == after.keys()
    assert any(not torch.equal(before[name], after[name]) for name in before)


@pytest.mark.slow  # trains the adapter it refuses to continue
def test_an_adapter_to_continue_must_match_the_rank_and_the_backbone(tmp_path: Path) -> None:
    from webgpt.infra.errors import CheckpointError, IncompatibleCheckpoint

    backbone = published_backbone(tmp_path, "tiny-policy")
    other = published_backbone(tmp_path, "other-policy")
    _, adapter = train_with_adapter(tmp_path, backbone, "rm-first")
    refusals = [
        (backbone, 8, "LoRA rank 4; --lora-rank is 8"),
        (other, 4, "trained on tiny-policy, not other-policy"),
    ]
    for start, rank, reason in refusals:
        config = RewardTrainConfig(
            comparisons=[tmp_path / "c.jsonl"],
            backbone=start,
            out=tmp_path / "r",
            lora_rank=rank,
            init_adapter=adapter,
        )
        with pytest.raises(IncompatibleCheckpoint, match=reason):
            train_reward_model(config, log=lambda _: None)
    not_an_adapter = tmp_path / "empty"
    not_an_adapter.mkdir()
    config.backbone, config.init_adapter = backbone, not_an_adapter
    with pytest.raises(CheckpointError, match="is not a LoRA adapter to continue"):
        train_reward_model(config, log=lambda _: None)
    assert not (tmp_path / "r").exists()  # refused before anything was written
    with pytest.raises(ValueError, match="--init-adapter needs --lora-rank"):
        RewardTrainConfig(comparisons=[], backbone=backbone, out=Path("o"), init_adapter=adapter)


def test_model_prepare_merges_the_shipped_reward_adapter_onto_the_default_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`webgpt model prepare`'s reward model: the shipped adapter on the default policy's
    weights, published once in the reward registry, scoring what training measured."""
    from webgpt.agent import model as default
    from webgpt.agent.errors import ModelError

    monkeypatch.setenv("WEBGPT_HOME", str(tmp_path / "home"))
    # the default policy as `webgpt model prepare` leaves it in the registry, tiny
    backbone = published_backbone(default.policy_registry_dir(), default.DEFAULT_VERSION)
    checkpoint, adapter = train_with_adapter(tmp_path, backbone, default.DEFAULT_REWARD_VERSION)
    monkeypatch.setattr(default, "SHIPPED_REWARD_ADAPTER", adapter)

    prepared = default.prepare_default_reward_model()
    assert prepared == tmp_path / "home" / "registry" / "reward" / default.DEFAULT_REWARD_VERSION
    manifest = load_manifest(prepared, verify=True)
    assert manifest.kind == "reward" and manifest.base_model == default.DEFAULT_VERSION
    assert manifest.metrics["offset"] == load_manifest(checkpoint).metrics["offset"]
    assert (prepared.parent / "current").resolve() == prepared
    scored = rewards(RewardModel.load(prepared), prepared, TEXTS)
    assert scored == pytest.approx(
        rewards(RewardModel.load(checkpoint), checkpoint, TEXTS), abs=0.02
    )
    assert RewardScorer(prepared).name == default.DEFAULT_REWARD_VERSION
    assert default.prepare_default_reward_model() == prepared  # made once
    (prepared.parent / "current").unlink()  # a run stopped between publish and alias
    assert default.prepare_default_reward_model() == prepared
    assert (prepared.parent / "current").resolve() == prepared

    other = published_backbone(tmp_path / "other", "another-policy")
    _, foreign = train_with_adapter(tmp_path / "other", other, "rm-foreign")
    monkeypatch.setattr(default, "SHIPPED_REWARD_ADAPTER", foreign)
    monkeypatch.setattr(default, "DEFAULT_REWARD_VERSION", "rm-foreign")
    with pytest.raises(ModelError, match="trained on 'another-policy': no policy"):
        default.prepare_default_reward_model()
    # a reward model outlives the default it was trained on: its backbone is its own
    older = published_backbone(default.policy_registry_dir(), "an-earlier-default")
    (tmp_path / "older").mkdir()
    _, kept = train_with_adapter(tmp_path / "older", older, "rm-older")
    monkeypatch.setattr(default, "SHIPPED_REWARD_ADAPTER", kept)
    monkeypatch.setattr(default, "DEFAULT_REWARD_VERSION", "rm-older")
    assert load_manifest(default.prepare_default_reward_model()).base_model == "an-earlier-default"
    (adapter / "score.safetensors").write_bytes(b"damaged")
    monkeypatch.setattr(default, "SHIPPED_REWARD_ADAPTER", adapter)
    monkeypatch.setattr(default, "DEFAULT_REWARD_VERSION", "rm-damaged")
    with pytest.raises(ModelError, match="damaged"):
        default.prepare_default_reward_model()


@pytest.mark.slow  # trains
def test_model_prepare_merges_the_shipped_quote_ranker_onto_its_backbone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--quote-ranker default` and WEBGPT_QUOTE_RANKER=default: the shipped ranker's adapter
    merged onto the policy it was trained on, once, beside the reward model but not named by
    its `current` alias; any other folder is taken as it is."""
    from webgpt.agent import model as default

    monkeypatch.setenv("WEBGPT_HOME", str(tmp_path / "home"))
    backbone = published_backbone(default.policy_registry_dir(), default.DEFAULT_VERSION)
    checkpoint, adapter = train_with_adapter(
        tmp_path, backbone, default.DEFAULT_QUOTE_RANKER_VERSION
    )
    monkeypatch.setattr(default, "SHIPPED_QUOTE_RANKER", adapter)
    steps: list[str] = []

    prepared = default.quote_ranker_folder(Path(default.DEFAULT_QUOTE_RANKER), steps.append)
    reward = tmp_path / "home" / "registry" / "reward"
    assert prepared == reward / default.DEFAULT_QUOTE_RANKER_VERSION
    manifest = load_manifest(prepared, verify=True)
    assert manifest.kind == "reward" and manifest.base_model == default.DEFAULT_VERSION
    assert any("merging" in step for step in steps)
    assert not (reward / "current").exists()
    scored = rewards(RewardModel.load(prepared), prepared, TEXTS)
    assert scored == pytest.approx(
        rewards(RewardModel.load(checkpoint), checkpoint, TEXTS), abs=0.02
    )
    steps.clear()
    assert default.quote_ranker_folder(Path("default"), steps.append) == prepared
    assert steps == []  # made once
    assert default.quote_ranker_folder(checkpoint, steps.append) == checkpoint
    assert default.quote_ranker_folder(None, steps.append) is None


def test_an_adapter_needs_lora() -> None:
    with pytest.raises(ValueError, match="--adapter-out needs --lora-rank"):
        RewardTrainConfig(comparisons=[], backbone=Path("b"), out=Path("o"), adapter_out=Path("a"))


def test_a_second_publish_of_a_version_is_refused(trained, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from webgpt.infra.errors import CheckpointError

    backbone, checkpoint, _ = trained
    comparisons = tmp_path / "c.jsonl"
    write_comparisons(comparisons, stories=4)
    config = RewardTrainConfig(
        comparisons=[comparisons],
        backbone=backbone,
        out=checkpoint.parent,
        version="rm-test",
        epochs=1,
        max_length=64,
    )
    with pytest.raises(CheckpointError, match="immutable"):
        train_reward_model(config, log=lambda _: None)
    assert load_manifest(checkpoint, verify=True).version == "rm-test"
    assert not [p for p in checkpoint.parent.iterdir() if p.name.startswith(".")]


def test_a_held_out_file_of_trained_questions_is_refused_before_training(
    tmp_path: Path,
) -> None:
    from webgpt.reward.errors import DataError

    comparisons = tmp_path / "c.jsonl"
    write_comparisons(comparisons, stories=6)
    config = RewardTrainConfig(
        comparisons=[comparisons],
        backbone=tmp_path / "no-backbone",  # never loaded: the refusal comes first
        out=tmp_path / "registry",
        version="rm-test",
        validation_fraction=0.0,
        held_out=comparisons,  # every question in it is trained on
    )
    with pytest.raises(DataError, match="every question in it is trained on"):
        train_reward_model(config, log=lambda _: None)
    assert not (tmp_path / "registry").exists()


def test_train_rm_reads_a_config_file_that_flags_override(tmp_path: Path) -> None:
    from webgpt.infra.trainer_options import parse_config
    from webgpt.service.cli import build_parser

    run = tmp_path / "run.yaml"
    run.write_text(
        "comparisons: [a.jsonl, b.jsonl]\nbackbone: bb\nout: reg\nepochs: 5\n"
        "lora-rank: 16\nlearning_rate: 2e-4\n"
    )
    options = ["--config", str(run), "--epochs", "2", "--held-out", "dev.jsonl"]
    args = build_parser().parse_args(["train", "rm", *options])
    config = parse_config(RewardTrainConfig, args.options, "webgpt train rm")
    assert config == RewardTrainConfig(
        comparisons=[Path("a.jsonl"), Path("b.jsonl")], backbone=Path("bb"), out=Path("reg"),
        epochs=2, lora_rank=16, learning_rate=2e-4, held_out=Path("dev.jsonl"),
    )  # fmt: skip
    again = ["--comparisons", "c.jsonl", "--comparisons", "d.jsonl", "--backbone", "b"]
    assert parse_config(RewardTrainConfig, [*again, "--out", "o"], "rm").comparisons == [
        Path("c.jsonl"), Path("d.jsonl"),
    ]  # fmt: skip
