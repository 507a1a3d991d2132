"""The in-process policy on a tiny model the test builds itself (no hub, no download)."""

import pytest

from agent.hf_policy import TransformersPolicy, truncate_at_stop
from agent.policy import Sampling


def tiny_policy() -> TransformersPolicy:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = ["<pad>", "<eos>", "<unk>", "Search", "crows", "Top", "Back", "\n", "■", "[1]"]
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )
    config = LlamaConfig(
        vocab_size=len(words),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=1,
    )
    return TransformersPolicy(LlamaForCausalLM(config).eval(), tokenizer, "tiny")


def test_truncate_at_the_earliest_stop_string() -> None:
    assert truncate_at_stop("Search crows\nTop", ("\n",)) == ("Search crows", True)
    assert truncate_at_stop("a■b\nc", ("\n", "■")) == ("a", True)
    assert truncate_at_stop("no stop", ("\n", "")) == ("no stop", False)


@pytest.mark.filterwarnings("ignore::UserWarning")
async def test_samples_n_completions_within_the_token_budget() -> None:
    policy = tiny_policy()
    result = await policy.complete("Search crows", Sampling(n=3, max_tokens=5, temperature=1.0))
    assert len(result.choices) == 3
    assert result.usage.prompt_tokens == 2
    assert 0 < result.usage.completion_tokens <= 15
    for choice in result.choices:
        assert choice.finish_reason in ("stop", "length")
        assert len(choice.text.split()) <= 5
    greedy = await policy.complete("Search crows", Sampling(n=1, max_tokens=4, temperature=0))
    again = await policy.complete("Search crows", Sampling(n=1, max_tokens=4, temperature=0))
    assert greedy.choices == again.choices  # temperature 0 is deterministic
    chunks = [c async for c in policy.stream("Search crows", Sampling(max_tokens=3))]
    assert len(chunks) == 1 and chunks[0].usage is not None
