"""Token in, token out: RL trains the token ids the engine sampled, never the sampled text
encoded again (learning.rl.packing, rollouts; agent.policy.Completion.token_ids)."""

from pathlib import Path

import pytest

from tests.agent.fake_policy import Script, fake_policy_app
from tests.learning.test_comparisons import MONA, QUESTION
from tests.learning.test_rl import rollouts_for, tiny_tokenizer_folder  # noqa: F401 (a fixture)
from tests.servers import serve
from webgpt.agent.errors import PolicyResponseError
from webgpt.agent.hf_policy import TransformersPolicy, sampled_tokens
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.policy import Sampling
from webgpt.learning.rl.config import RLConfig
from webgpt.learning.rl.packing import pack_episode
from webgpt.learning.rl.rollouts import RecordingPolicy


def policy_tokens(completion_ids: list[int], env_mask: list[int]) -> list[int]:
    return [t for t, m in zip(completion_ids, env_mask, strict=True) if m]


def test_rollouts_train_the_ids_sampled_where_the_text_encodes_to_others(
    learning_store: Path,
    reward_checkpoint: Path,
    tiny_tokenizer_folder: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The server samples every character as a token of its own: the text those ids spell,
    encoded again, gives fewer and other ids (BPE merges). The packed episode holds the
    sampled ones, with the server's log-probs on them."""
    config = RLConfig(
        policy=tmp_path, reward_model=reward_checkpoint, questions=tmp_path, out=tmp_path,
        answer_only_share=0.0, min_actions=10, max_actions=10, store=learning_store,
    )  # fmt: skip
    rollouts = rollouts_for(config, tiny_tokenizer_folder, reward_checkpoint)
    tokenizer = rollouts.tokenizer
    script = Script(
        oracle_quote=MONA,
        answers=["Leonardo da Vinci painted it [1]."],
        tokenizer=tokenizer,
        one_token_per_character=True,
    )
    with serve(fake_policy_app(script)) as base:
        policy = OpenAIPolicy(f"{base}/v1", "scripted", backoff_s=0.01)
        try:
            [rollout] = rollouts.loop.run_until_complete(
                rollouts.sample([QUESTION.question], policy)
            )
        finally:
            rollouts.loop.run_until_complete(policy.aclose())
            rollouts.close()

    assert all(r["return_token_ids"] is True and r["logprobs"] == 0 for r in script.requests)
    turns = rollout.turns
    assert len(turns) == 5 and rollout.correct  # search, click, quote, end; the answer
    sampled = [list(turn.completion_ids or ()) for turn in turns]
    assert sampled == [script.sampled_ids(turn.completion) for turn in turns]
    encoded = [tokenizer(t.completion, add_special_tokens=False)["input_ids"] for t in turns]
    assert all(ids != again for ids, again in zip(sampled, encoded, strict=True))
    packed = rollout.packed
    trained = policy_tokens(packed.completion_ids, packed.env_mask)
    assert trained == [token for ids in sampled for token in ids]
    assert packed.prompt_ids == list(turns[0].prompt_ids or ())
    assert packed.logprobs is not None
    assert [p for p, m in zip(packed.logprobs, packed.env_mask, strict=True) if m] == [
        script.sampled_logprob
    ] * len(trained)
    assert {p for p, m in zip(packed.logprobs, packed.env_mask, strict=True) if not m} == {0.0}


async def test_a_turn_that_ended_at_eos_trains_the_eos_not_a_stop_string(
    tiny_tokenizer_folder: Path,  # noqa: F811
) -> None:
    """The old packing appended the stop string to a turn that ended (at EOS, too): a
    token the model never wrote. All-zero logits make greedy sampling write token 0, the
    tiny tokenizer's end-of-sequence token, at once."""
    import torch

    policy = TransformersPolicy.from_pretrained(str(tiny_tokenizer_folder))
    with torch.no_grad():
        policy.model.lm_head.weight.zero_()
    eos = policy.tokenizer.eos_token_id
    assert eos == 0
    recorder = RecordingPolicy(policy)
    sampling = Sampling(temperature=0, max_tokens=5, stop=("\n",))

    result = await recorder.complete("Search crows", sampling)

    assert result.choices[0].text == "" and result.choices[0].finish_reason == "stop"
    [turn] = recorder.turns
    assert turn.completion_ids == (eos,)
    assert turn.prompt_ids == tuple(policy.tokenizer("Search crows")["input_ids"])
    packed = pack_episode(policy.tokenizer, recorder.turns)
    assert policy_tokens(packed.completion_ids, packed.env_mask) == [eos]


def test_a_row_s_sample_ends_where_generation_stopped_for_it(
    tiny_tokenizer_folder: Path,  # noqa: F811
) -> None:
    """`generate` pads a row that stopped before the batch's longest; here the pad is
    another token than EOS, and then EOS itself (SmolLM2 pads with EOS)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer_folder)
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    words = tokenizer("Search Mona Lisa", add_special_tokens=False)["input_ids"]
    newline = tokenizer("\n", add_special_tokens=False)["input_ids"]
    stop = ("\n",)
    assert sampled_tokens(tokenizer, [*words, *newline, pad, pad], stop) == (
        [*words, *newline],
        True,
    )
    assert sampled_tokens(tokenizer, [*words, *newline, eos, eos], stop) == (
        [*words, *newline],
        True,
    )
    assert sampled_tokens(tokenizer, [*words, eos, pad], stop) == ([*words, eos], True)
    assert sampled_tokens(tokenizer, words, stop) == (words, False)  # the token budget


async def test_a_server_without_token_ids_is_refused_for_training_not_for_serving() -> None:
    script = Script(answers=["Crows [1]."] * 2)  # no tokenizer: vLLM's extension missing
    with serve(fake_policy_app(script)) as base:
        policy = OpenAIPolicy(f"{base}/v1", "scripted", backoff_s=0.01)
        try:
            served = await policy.complete("Answer ■", Sampling())
            assert served.choices[0].token_ids is None
            assert "return_token_ids" not in script.requests[0]  # serving asks for none
            with pytest.raises(PolicyResponseError, match="return_token_ids"):
                await RecordingPolicy(policy).complete("Answer ■", Sampling())
        finally:
            await policy.aclose()
