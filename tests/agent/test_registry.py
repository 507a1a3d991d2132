"""The policy registry (agent.registry): publish, promote, rollback, through `webgpt model`."""

import json
from pathlib import Path

import pytest

from webgpt.agent.errors import ConfigurationError
from webgpt.agent.registry import PolicyRegistry, adapter_rank
from webgpt.browser.observation import OBSERVATION_FORMAT_VERSION
from webgpt.infra.checkpoints import load_manifest
from webgpt.infra.errors import CorruptCheckpoint, IncompatibleCheckpoint
from webgpt.service.cli import main


def make_adapter(folder: Path, weights: bytes = b"lora weights") -> Path:
    """A LoRA adapter folder as `webgpt train bc` leaves it, minus the manifest."""
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(json.dumps({"r": 16, "peft_type": "LORA"}))
    (folder / "adapter_model.safetensors").write_bytes(weights)
    return folder


def test_publish_copies_a_checkpoint_in_as_an_immutable_version(tmp_path: Path) -> None:
    registry = PolicyRegistry(tmp_path / "policy")
    source = make_adapter(tmp_path / "out")
    manifest = registry.publish(source, "bc-1", base_model="base-1")
    assert manifest.kind == "policy" and manifest.base_model == "base-1"
    assert manifest.observation_format_version == OBSERVATION_FORMAT_VERSION
    assert set(manifest.files) == {"adapter_config.json", "adapter_model.safetensors"}
    assert load_manifest(registry.root / "bc-1", verify=True) == manifest
    # A published version carries its manifest: publishing it again keeps base and metrics.
    again = registry.publish(registry.root / "bc-1", "bc-1-copy")
    assert again.base_model == "base-1" and again.metrics["published_from"] == "bc-1"
    with pytest.raises(ConfigurationError, match="immutable"):
        registry.publish(source, "bc-1", base_model="base-1")
    with pytest.raises(ConfigurationError, match="--base-model"):
        registry.publish(source, "bc-2")
    with pytest.raises(ConfigurationError, match="letters, digits"):
        registry.publish(source, "../escape", base_model="base-1")
    with pytest.raises(ConfigurationError, match="letters, digits"):
        registry.publish(source, "current", base_model="base-1")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigurationError, match="neither a LoRA adapter"):
        registry.publish(tmp_path / "empty", "bc-3", base_model="base-1")
    assert [m.version for m in registry.versions()] == ["bc-1", "bc-1-copy"]
    assert not any(p.name.startswith(".") for p in registry.root.iterdir())  # no staging left


def test_promote_and_rollback_move_the_aliases(tmp_path: Path) -> None:
    registry = PolicyRegistry(tmp_path / "policy")
    for version in ("v1", "v2"):
        registry.publish(make_adapter(tmp_path / version), version, base_model="base")
    assert registry.aliases().current is None
    assert registry.promote("v1").current == "v1"
    aliases = registry.promote("v2")
    assert (aliases.current, aliases.previous) == ("v2", "v1")
    assert registry.current.resolve() == (registry.root / "v2").resolve()
    aliases = registry.rollback()
    assert (aliases.current, aliases.previous) == ("v1", "v2")
    assert registry.rollback().current == "v2"  # rolling back twice returns


def test_promote_refuses_a_version_that_is_damaged_or_foreign(tmp_path: Path) -> None:
    registry = PolicyRegistry(tmp_path / "policy")
    for version in ("good", "corrupt", "other-format"):
        registry.publish(make_adapter(tmp_path / version), version, base_model="base")
    registry.promote("good")
    (registry.root / "corrupt" / "adapter_model.safetensors").write_bytes(b"flipped")
    with pytest.raises(CorruptCheckpoint):
        registry.promote("corrupt")
    manifest_path = registry.root / "other-format" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["observation_format_version"] = OBSERVATION_FORMAT_VERSION + 1
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(IncompatibleCheckpoint):
        registry.promote("other-format")
    # A manifest naming files outside its folder is refused, whatever their digests.
    (tmp_path / "secret").write_text("not part of any checkpoint")
    for escaping in ("../../secret", str(tmp_path / "secret")):
        manifest["observation_format_version"] = OBSERVATION_FORMAT_VERSION
        manifest["files"] = {escaping: "0" * 64}
        manifest_path.write_text(json.dumps(manifest))
        with pytest.raises(CorruptCheckpoint, match="outside the folder"):
            registry.promote("other-format")
    with pytest.raises(ConfigurationError, match="no previous"):
        registry.rollback()
    assert registry.aliases().current == "good"


def test_the_model_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = str(tmp_path / "policy")
    source = make_adapter(tmp_path / "out")
    for version in ("a", "c"):
        publish = ["model", "publish", str(source), "--version", version, "--base-model", "b"]
        assert main([*publish, "--registry", root]) == 0
    assert main(["model", "promote", "a", "--registry", root]) == 0  # nothing to compare with
    # (The quality gate that a promotion over a serving version runs: test_promotion_gate.py.)
    assert main(["model", "promote", "c", "--registry", root, "--force"]) == 0
    assert "current -> c (previous -> a)" in capsys.readouterr().out
    assert main(["model", "rollback", "--registry", root]) == 0
    assert "current -> a (previous -> c)" in capsys.readouterr().out
    assert main(["model", "list", "--registry", root]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[:4] for line in listed] == [
        ["a", "adapter", "base=b", "current"],
        ["c", "adapter", "base=b", "previous"],
    ]
    assert listed[0].endswith("gate: ungated " + registry_records(root)[0]["at"])
    assert "gate: forced" in listed[1] and listed[1].endswith("not evaluated")
    assert main(["model", "promote", "missing", "--registry", root]) == 1
    assert "missing" in capsys.readouterr().err


def registry_records(root: str) -> list[dict[str, object]]:
    lines = (Path(root) / "promotions.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize(
    "config",
    ["{not json", '{"peft_type": "LORA"}', '{"r": "16"}', '{"r": 0}', "[16]"],
)
def test_an_adapter_without_a_usable_rank_is_incompatible(tmp_path: Path, config: str) -> None:
    adapter = make_adapter(tmp_path / "out")
    (adapter / "adapter_config.json").write_text(config)
    with pytest.raises(IncompatibleCheckpoint, match="LoRA rank"):
        adapter_rank(adapter)
    assert adapter_rank(make_adapter(tmp_path / "r16")) == 16
