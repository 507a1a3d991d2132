"""`webgpt answer` as a user runs it, against the scripted policy server."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent.fake_policy import Script
from tests.servers import COMMAND_ENV, free_port


def answer(store: Path, *args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **COMMAND_ENV,
        "WEBGPT_HOME": str(home or store.parent),
        "WEBGPT_OFFLINE_STORE": str(store),
    }
    return subprocess.run(
        [sys.executable, "-m", "webgpt.service.cli", "answer", *args, "--js", "never"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def crow_answer(
    store: Path, policy_url: str, script: Script, *args: str
) -> subprocess.CompletedProcess[str]:
    """`webgpt answer` on a crow question, the scripted policy quoting and citing the Crow page."""
    script.oracle_quote = "Crows are birds of the genus Corvus."
    script.answers = ["Crows are corvids [1]."]
    return answer(
        store, "crow corvus", "--policy-url", policy_url, "--policy-model", "scripted", *args
    )


@pytest.mark.slow  # starts a process
def test_answer_prints_the_answer_and_references(
    offline_store: Path, policy_url: str, script: Script
) -> None:
    result = crow_answer(offline_store, policy_url, script)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "Crows are corvids [1].\n\n[1] Crow — https://en.wikipedia.org/wiki/Crow\n"
    )


@pytest.mark.slow  # starts a process
def test_answer_traces_each_command_to_stderr(
    offline_store: Path, policy_url: str, script: Script
) -> None:
    result = crow_answer(offline_store, policy_url, script, "--trace")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Crows are corvids [1].\n")  # the answer, as without
    trace = [line for line in result.stderr.splitlines() if line.startswith("[0] ")]
    assert [line.split("  -> ")[0] for line in trace] == [
        "[0] Search crow corvus",
        "[0] Clicked on link 0",
        "[0] Quote: Crows are birds of the genus Corvus.",
        "[0] End: Answer",
    ]
    assert "-> https://en.wikipedia.org/wiki/Crow (" in trace[1]
    assert "-> quoted 'Crows are birds of the genus Corvus.'" in trace[2]
    assert trace[3].endswith("-> ended (answer)")


@pytest.mark.slow  # starts a process
def test_answer_json(offline_store: Path, policy_url: str, script: Script) -> None:
    result = crow_answer(offline_store, policy_url, script, "--json")
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["answer"] == "Crows are corvids [1]."
    assert body["references"][0]["url"] == "https://en.wikipedia.org/wiki/Crow"
    assert body["usage"]["actions"] == 4 and body["usage"]["pages_fetched"] == 1
    assert body["versions"] == {
        "policy": "scripted",
        "reward": None,
        "quote_ranker": None,
        "format": 1,
    }
    assert set(body["timings"]) >= {"total_s", "policy_s", "fetch_s", "render_s"}


@pytest.mark.slow  # starts a process
def test_best_of_n_without_a_reward_model_uses_the_shipped_one(
    offline_store: Path, policy_url: str, script: Script, tmp_path: Path
) -> None:
    """`--n 2` alone: the shipped reward model (prepared once, here already in the
    registry, as `webgpt model prepare` leaves it) picks one of two answers."""
    from tests.reward.tiny import build_tiny_backbone, write_comparisons
    from webgpt.agent.model import DEFAULT_REWARD_VERSION
    from webgpt.reward.config import RewardTrainConfig
    from webgpt.reward.train import train_reward_model

    comparisons = tmp_path / "c.jsonl"
    write_comparisons(comparisons, stories=4)
    config = RewardTrainConfig(
        comparisons=[comparisons],
        backbone=build_tiny_backbone(tmp_path / "backbone"),
        out=tmp_path / "home" / "registry" / "reward",
        version=DEFAULT_REWARD_VERSION,
        epochs=1,
        max_length=64,
    )
    train_reward_model(config, log=lambda _: None)
    script.oracle_quote = "Crows are birds of the genus Corvus."
    script.answers = ["Crows are corvids [1].", "Crows are birds [1]."]
    result = answer(
        offline_store, "crow corvus", "--n", "2", "--policy-url", policy_url,
        "--policy-model", "scripted", "--json", home=tmp_path / "home",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["versions"]["reward"] == DEFAULT_REWARD_VERSION
    assert len(body["candidates"]) == 2 and body["best"] in (0, 1)
    assert all(c["reward"] is not None for c in body["candidates"])
    named = answer(
        offline_store, "crow corvus", "--reward-model", "default", "--policy-url", policy_url,
        "--policy-model", "scripted", "--json", home=tmp_path / "home",
    )  # fmt: skip
    assert named.returncode == 0, named.stderr
    assert json.loads(named.stdout)["versions"]["reward"] == DEFAULT_REWARD_VERSION


@pytest.mark.slow  # starts a process
def test_answer_errors_are_one_clear_line(offline_store: Path, policy_url: str) -> None:
    none = answer(offline_store, "q", "--n", "0", "--policy-url", policy_url, "--policy-model", "m")
    assert none.returncode == 1 and "one episode or more" in none.stderr
    half = answer(offline_store, "q", "--policy-url", policy_url)
    assert half.returncode == 1 and "together" in half.stderr
    down = answer(
        offline_store,
        "q",
        "--policy-url",
        f"http://127.0.0.1:{free_port()}/v1",
        "--policy-model",
        "m",
    )
    assert down.returncode == 1
    assert down.stderr.startswith("error: cannot connect") and len(down.stderr.splitlines()) == 1
    rules = answer(offline_store, "q", "--explanation-quotes", "4", "--policy-url", policy_url)
    assert rules.returncode == 2 and "--explanation-quotes: invalid choice: 4" in rules.stderr
    quotes = answer(offline_store, "q", "--relevant-quotes", "-1", "--policy-url", policy_url)
    assert quotes.returncode == 2 and "give a whole number of quotes" in quotes.stderr


def test_model_serve_names_a_checkpoint_after_its_folder_and_keeps_it_apart_from_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`webgpt model serve --model-dir X` once served X as the default's version and recorded
    it, so a later `webgpt answer` answered with X while saying it was the default. The
    checkpoints here are registry versions (config files only: nothing is loaded)."""
    from webgpt.agent.cli import served_model
    from webgpt.agent.errors import ConfigurationError
    from webgpt.agent.model import DEFAULT_VERSION, policy_registry_dir
    from webgpt.agent.registry import PolicyRegistry

    home = tmp_path / "home"
    monkeypatch.setenv("WEBGPT_HOME", str(home))
    full = tmp_path / "rl-cpu-v8"
    full.mkdir()
    (full / "config.json").write_text("{}")
    registry = PolicyRegistry(policy_registry_dir())
    registry.publish(full, DEFAULT_VERSION, base_model="tiny")  # as `model prepare` leaves it
    config, record = served_model(None, port=8401)
    assert (config.model_dir, config.served_name, config.port, record) == (
        registry.root / DEFAULT_VERSION, DEFAULT_VERSION, 8401, True
    )  # fmt: skip

    config, record = served_model(full, port=8401)
    assert (config.model_dir, config.served_name, record) == (full, "rl-cpu-v8", False)

    # an adapter is served merged into its base (merged once before, so found, not made)
    registry.publish(full, "tiny", base_model="tiny")
    lora = tmp_path / "lora"
    lora.mkdir()
    (lora / "adapter_config.json").write_text('{"r": 16}')
    (lora / "adapter_model.safetensors").write_bytes(b"weights")
    adapter = registry.root / "webgpt-bc-135m-v13"
    digest = registry.publish(lora, adapter.name, base_model="tiny").files[
        "adapter_model.safetensors"
    ][:16]
    merged = PolicyRegistry(home / "merged").publish(full, f"{adapter.name}-{digest}", "tiny")
    config, record = served_model(adapter, port=8401)
    assert (config.model_dir, config.served_name, record) == (
        home / "merged" / merged.version, "webgpt-bc-135m-v13", False
    )  # fmt: skip

    with pytest.raises(ConfigurationError, match="no checkpoint folder"):
        served_model(tmp_path / "missing", port=8401)


@pytest.mark.slow  # starts a process
def test_answer_with_a_chat_model(offline_store: Path) -> None:
    """`--policy-format chat`: the commands as tool calls of a llama.cpp-style server."""
    from tests.agent.test_chat_policy import ANSWER, chat_server
    from tests.servers import serve

    requests: list[dict[str, object]] = []
    with serve(chat_server("llama.cpp", requests)) as base:
        result = answer(
            offline_store,
            "What genus are crows?",
            "--policy-url",
            f"{base}/v1",
            "--policy-model",
            "chat-model",
            "--policy-format",
            "chat",
        )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{ANSWER}\n\n[1] Crow — https://en.wikipedia.org/wiki/Crow\n"
    assert len(requests) == 5 and all(r["tool_choice"] == "required" for r in requests)


def test_every_trace_event_that_says_what_happened_is_one_line() -> None:
    from webgpt.agent.cli import _printable, _trace_line
    from webgpt.agent.trace import (
        ActionEvent,
        AnswerDeltaEvent,
        EpisodeErrorEvent,
        FollowUpEvent,
        ShapedEvent,
    )
    from webgpt.browser.events import (
        BrowserEvent,
        FindEvent,
        InvalidActionEvent,
        ScrollEvent,
        SearchEvent,
    )

    def action(command: str, event: BrowserEvent, narrowed: list[str] | None = None) -> str | None:
        return _trace_line(
            ActionEvent(
                episode=1, command=command, event=event, actions_left=3, narrowed=narrowed or []
            )
        )

    failed = SearchEvent(query="q", results=[], error="rate limited")
    assert action("Search q", failed) == "[1] Search q  -> rate limited"
    missing = FindEvent(text="x", found=False)
    assert action("Find in page: x", missing, ["force_finish"]) == (
        "[1] Find in page: x  -> not found  (narrowed: force_finish)"
    )
    scrolled = ScrollEvent(first_line=20, last_line=39)
    assert action("Scrolled down 1", scrolled) == "[1] Scrolled down 1  -> lines 20-39"
    refused = InvalidActionEvent(text="Back", reason="there is no page to go back to")
    assert action("Back", refused) == "[1] Back  -> invalid: there is no page to go back to"
    shaped = ShapedEvent(episode=1, part="grounded_decline", detail="2038")
    assert _trace_line(shaped) == "[1] shaped by grounded_decline: 2038"
    follow_up = FollowUpEvent(
        question="when did he die", question_asked="when did Bach die", replaced=[]
    )
    assert _trace_line(follow_up) == "follow-up asked as: when did Bach die"
    assert _trace_line(EpisodeErrorEvent(episode=2, message="policy down")) == (
        "[2] failed: policy down"
    )
    assert _trace_line(AnswerDeltaEvent(episode=1, text="Crows")) is None  # the answer shows it
    # a page's text travels in commands and quotes: a terminal's escapes are written out
    hostile = _trace_line(ShapedEvent(episode=1, part="p", detail="\x1b[2J\rgone\nnext"))
    assert hostile is not None
    assert _printable(hostile) == "[1] shaped by p: \\x1b[2J\\rgone\\nnext"
    assert _printable("Crows — corvids, ½") == "Crows — corvids, ½"  # text stays as it is
