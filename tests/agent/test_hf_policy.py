"""The in-process policy on a tiny model the test builds itself (no hub, no download)."""

from pathlib import Path

import pytest

from agent.hf_policy import TransformersPolicy, truncate_at_stop
from agent.policy import Sampling
from tests.reward.tiny import build_tiny_backbone


def tiny_policy(folder: Path) -> TransformersPolicy:
    """A tiny random Llama the test builds itself, loaded the way rollouts load policies."""
    return TransformersPolicy.from_pretrained(str(build_tiny_backbone(folder)), name="tiny")


def test_truncate_at_the_earliest_stop_string() -> None:
    assert truncate_at_stop("Search crows\nTop", ("\n",)) == ("Search crows", True)
    assert truncate_at_stop("a■b\nc", ("\n", "■")) == ("a", True)
    assert truncate_at_stop("no stop", ("\n", "")) == ("no stop", False)


@pytest.mark.filterwarnings("ignore::UserWarning")
async def test_samples_n_completions_within_the_token_budget(tmp_path: Path) -> None:
    policy = tiny_policy(tmp_path)
    result = await policy.complete("Search crows", Sampling(n=3, max_tokens=5, temperature=1.0))
    assert len(result.choices) == 3
    assert result.usage.prompt_tokens == 2  # "Search crows"
    assert 0 < result.usage.completion_tokens <= 15
    for choice in result.choices:
        assert choice.finish_reason in ("stop", "length")
        assert len(choice.text.split()) <= 5
    greedy = await policy.complete("Search crows", Sampling(n=1, max_tokens=4, temperature=0))
    again = await policy.complete("Search crows", Sampling(n=1, max_tokens=4, temperature=0))
    assert greedy.choices == again.choices  # temperature 0 is deterministic
    chunks = [c async for c in policy.stream("Search crows", Sampling(max_tokens=3))]
    assert len(chunks) == 1 and chunks[0].usage is not None
