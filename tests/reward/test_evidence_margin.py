"""A quote ranker's evidence margin: chosen on dev after training, recorded in its
checkpoint's manifest (reward.manifest.record_evidence_margin), and carried by `webgpt model
prepare` into the checkpoint it merges from a shipped adapter."""

from pathlib import Path

import pytest

from webgpt.agent.model import _merge_and_publish
from webgpt.browser.observation import OBSERVATION_FORMAT_VERSION
from webgpt.infra.checkpoints import load_manifest, publish
from webgpt.infra.errors import CheckpointError
from webgpt.reward.manifest import EVIDENCE_MARGIN, record_evidence_margin


def reward_adapter(root: Path, version: str) -> Path:
    """A published reward adapter folder (its files stand in for weights)."""
    staging = root / f".{version}"
    staging.mkdir(parents=True)
    (staging / "adapter_model.safetensors").write_bytes(b"lora weights")
    (staging / "score.safetensors").write_bytes(b"head")
    target = root / version
    publish(
        staging,
        target,
        kind="reward",
        version=version,
        base_model="policy-1",
        observation_format_version=OBSERVATION_FORMAT_VERSION,
        metrics={"offset": -2.5, "validation_accuracy": 0.9},
    )
    return target


def test_a_recorded_margin_keeps_the_manifest_and_reaches_the_prepared_checkpoint(
    tmp_path: Path,
) -> None:
    adapter = reward_adapter(tmp_path, "quotes-x")
    before = load_manifest(adapter)
    record_evidence_margin([adapter], -4.5)
    after = load_manifest(adapter, verify=True)
    assert after.metrics == {**before.metrics, EVIDENCE_MARGIN: -4.5}
    assert (after.files, after.created_at, after.version) == (
        before.files,
        before.created_at,
        before.version,
    )
    assert sorted(p.name for p in adapter.iterdir()) == [
        "adapter_model.safetensors",
        "manifest.json",
        "score.safetensors",
    ]  # no temporary file left
    record_evidence_margin([adapter], -4.5)  # the same margin again changes nothing

    target = tmp_path / "registry" / "quotes-x"
    target.parent.mkdir()
    _merge_and_publish(
        "reward",
        lambda out: (out / "model.safetensors").write_bytes(b"merged"),
        after,
        target,
        print,
    )
    assert load_manifest(target, verify=True).metrics[EVIDENCE_MARGIN] == -4.5


def test_a_margin_is_part_of_its_version_and_recorded_everywhere_or_nowhere(
    tmp_path: Path,
) -> None:
    first, second = reward_adapter(tmp_path, "a"), reward_adapter(tmp_path, "b")
    record_evidence_margin([second], -3.0)
    with pytest.raises(CheckpointError, match="publish a new version"):
        record_evidence_margin([first, second], -4.5)
    assert EVIDENCE_MARGIN not in load_manifest(first).metrics  # nothing written
    assert load_manifest(second).metrics[EVIDENCE_MARGIN] == -3.0
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite"):
            record_evidence_margin([first], bad)
    with pytest.raises(CheckpointError, match="manifest"):
        record_evidence_margin([tmp_path / "missing"], -4.5)
