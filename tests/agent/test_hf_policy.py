"""The in-process policy on a tiny model the test builds itself (no hub, no download)."""

import asyncio
import re
from pathlib import Path

from tests.learning.test_bc import build_tiny_policy
from tests.reward.tiny import build_tiny_backbone
from webgpt.agent.hf_policy import TransformersPolicy, truncate_at_stop
from webgpt.agent.policy import Sampling


def tiny_policy(folder: Path) -> TransformersPolicy:
    """A tiny random Llama the test builds itself, loaded the way rollouts load policies."""
    return TransformersPolicy.from_pretrained(str(build_tiny_backbone(folder)), name="tiny")


def test_truncate_at_the_earliest_stop_string() -> None:
    assert truncate_at_stop("Search crows\nTop", ("\n",)) == ("Search crows", True)
    assert truncate_at_stop("a■b\nc", ("\n", "■")) == ("a", True)
    assert truncate_at_stop("no stop", ("\n", "")) == ("no stop", False)


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


class CountingGenerate:
    """Wraps a model's generate: how many calls, and how many prompts each one took."""

    def __init__(self, policy: TransformersPolicy) -> None:
        self.generate, self.batches = policy.model.generate, []  # type: ignore[var-annotated]
        policy.model.generate = self

    def __call__(self, **kwargs: object) -> object:
        self.batches.append(len(kwargs["input_ids"]))  # type: ignore[arg-type]
        return self.generate(**kwargs)


async def test_concurrent_calls_are_generated_together_as_each_alone(tmp_path: Path) -> None:
    policy = tiny_policy(tmp_path)
    greedy = Sampling(max_tokens=6, temperature=0)
    prompts = ["Search crows", "Clicked on link 0 of the crows page", "Quote: the crows"]
    alone = [await policy.complete(p, greedy) for p in prompts]
    counting = CountingGenerate(policy)

    together = await asyncio.gather(*(policy.complete(p, greedy) for p in prompts))

    assert counting.batches == [3]  # one left-padded generate for the three
    assert [r.choices for r in together] == [r.choices for r in alone]
    assert [r.usage for r in together] == [r.usage for r in alone]  # no padding counted


async def test_batches_hold_one_sampling_and_at_most_max_batch_prompts(tmp_path: Path) -> None:
    policy = tiny_policy(tmp_path)
    policy.max_batch = 2
    counting = CountingGenerate(policy)
    short, longer = Sampling(max_tokens=2, temperature=0), Sampling(max_tokens=5, temperature=0)

    results = await asyncio.gather(
        *(policy.complete("Search crows", short) for _ in range(3)),
        policy.complete("Search crows", longer),
    )

    assert sorted(counting.batches) == [1, 1, 2]  # 2 + 1 short, 1 longer
    assert all(r.usage.completion_tokens <= 2 for r in results[:3])
    assert results[0].choices == results[1].choices == results[2].choices


async def test_a_failed_generate_reaches_every_caller_of_its_batch(tmp_path: Path) -> None:
    policy = tiny_policy(tmp_path)
    generate = policy.model.generate

    def broken(**_: object) -> object:
        raise RuntimeError("CUDA out of memory")

    policy.model.generate = broken
    greedy = Sampling(max_tokens=3, temperature=0)
    results = await asyncio.gather(
        *(policy.complete(p, greedy) for p in ("Search a", "Search b")), return_exceptions=True
    )
    assert [str(r) for r in results] == ["CUDA out of memory"] * 2

    policy.model.generate = generate  # the policy goes on with the next calls
    assert len((await policy.complete("Search a", greedy)).choices) == 1


async def test_a_regex_holds_every_sample_and_guided_false_lets_it_go(tmp_path: Path) -> None:
    """As vLLM's structured outputs do: each of n samples of an untrained model matches the
    Sampling's regex (the trainer's rollouts decode under the service's grammar)."""
    texts = ["Search crows and ravens\n", "Quote: the crows are black\n", "End: Answer\n"] * 30
    policy = TransformersPolicy.from_pretrained(str(build_tiny_policy(tmp_path, texts)))
    regex = r"(Search (crows|ravens)|Quote: the crows are black|End: Answer)(\n)?"
    guided = Sampling(n=8, max_tokens=40, temperature=1.0, stop=("\n",), regex=regex)

    result = await policy.complete("♦Next action\n", guided)

    assert len(result.choices) == 8
    for choice in result.choices:
        assert re.fullmatch(regex, choice.text), choice.text
        assert choice.finish_reason == "stop"
    policy.guided = False
    free = await policy.complete("♦Next action\n", guided)
    assert not all(re.fullmatch(regex, c.text) for c in free.choices)  # random weights
