"""Preparing the shipped weights in the registry (agent.model): two commands that make the
same version at once, as on a fresh machine, make it once and both go on."""

import threading
from pathlib import Path

from webgpt.agent.model import _making, _merge_and_publish
from webgpt.browser.observation import OBSERVATION_FORMAT_VERSION
from webgpt.infra.checkpoints import Manifest, load_manifest, publish


def test_a_version_another_command_is_making_is_waited_for_not_made_again(
    tmp_path: Path,
) -> None:
    target = tmp_path / "registry" / "policy-v1"
    adapter = Manifest("policy", "policy-v1", "base", OBSERVATION_FORMAT_VERSION, {})
    merges: list[Path] = []
    errors: list[BaseException] = []

    def second_command() -> None:
        try:
            _merge_and_publish("policy", merges.append, adapter, target, print)
        except BaseException as error:  # surfaced by the assertion below
            errors.append(error)

    with _making(target) as needed:  # the first command holds the version's lock
        assert needed
        second = threading.Thread(target=second_command)
        second.start()  # it waits for the lock, or comes after it and finds the version
        second.join(timeout=1)
        assert second.is_alive()  # held by the lock: without it, it would have merged
        staging = tmp_path / "registry" / ".policy-v1-first"
        staging.mkdir()
        (staging / "model.safetensors").write_bytes(b"merged by the first command")
        publish(
            staging,
            target,
            kind="policy",
            version="policy-v1",
            base_model="base",
            observation_format_version=OBSERVATION_FORMAT_VERSION,
        )
    second.join(timeout=60)
    assert not second.is_alive()

    assert errors == []
    assert merges == []  # the second command merged nothing
    assert (target / "model.safetensors").read_bytes() == b"merged by the first command"
    load_manifest(target, verify=True)
    with _making(target) as needed:
        assert not needed
