"""verl's agent loop over our episodes, on a fake server manager (verl is not installed
here: its classes are stand-ins with verl's constructor and fields; its vLLM servers are a
token-in, token-out fake that browses by reading the observation)."""

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.agent.fake_policy import Script
from tests.learning.test_comparisons import MONA, QUESTION
from tests.learning.test_rl import tiny_tokenizer_folder  # noqa: F401 (a fixture)
from tests.reward.fake_vllm import ClassifyScript, fake_vllm_classify_app
from tests.servers import serve
from webgpt.agent.errors import ConfigurationError, DataError
from webgpt.browser.web import Web, WebOptions
from webgpt.learning.rl.verl import (
    AGENT_NAME,
    BrowsingEpisodes,
    VerlLoopConfig,
    VerlRunConfig,
    agent_loop_class,
    packed_worker_class,
    prepare_verl_run,
    question_of,
    segment_position_ids,
)


@dataclass
class FakeTokenOutput:
    token_ids: list[int]
    log_probs: list[float] | None = None


@dataclass
class FakeServerManager:
    """verl's AsyncLLMServerManager.generate: prompt ids in, sampled ids out. Like vLLM,
    the ids run to the stop string, included."""

    tokenizer: Any
    script: Script
    calls: list[tuple[str, list[int], dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.script.tokenizer = self.tokenizer  # the server's ids are of this tokenizer

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any]
    ) -> FakeTokenOutput:
        self.calls.append((request_id, prompt_ids, dict(sampling_params)))
        prompt = self.tokenizer.decode(prompt_ids)
        text = (
            self.script.next_answer() if prompt.endswith("■") else self.script.next_command(prompt)
        )
        stop = sampling_params.get("stop") or [""]
        ids = self.script.sampled_ids(text + stop[0])
        log_probs = [self.script.sampled_logprob] * len(ids)
        return FakeTokenOutput(ids, log_probs if sampling_params.get("logprobs") else None)


def offline(store: Path) -> Web:
    return Web(WebOptions(offline_store=store, offline_only=True, js_mode="never"))


def scored_async(score: Any) -> Any:
    async def scored(texts: list[str]) -> list[float]:
        return list(score(texts))

    return scored


async def test_an_episode_becomes_a_trajectory_with_only_the_policy_s_tokens_trained(
    learning_store: Path,
    reward_checkpoint: Path,
    tiny_tokenizer_folder: Path,  # noqa: F811
) -> None:
    from transformers import AutoTokenizer

    from webgpt.reward.scorer import RewardScorer

    tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer_folder)
    scorer = RewardScorer(reward_checkpoint)
    web = offline(learning_store)
    config = VerlLoopConfig(min_actions=10, max_actions=10)
    episodes = BrowsingEpisodes(config, tokenizer, web, scored_async(scorer.score_texts))
    answer = "Leonardo da Vinci painted it [1]."
    script = Script(oracle_quote=MONA, answers=[answer], default_command="Scrolled down 1")
    manager = FakeServerManager(tokenizer, script)
    try:
        right = await episodes.run(QUESTION, manager, {"temperature": 0.9})
        calls = list(manager.calls)
        script.oracle_quote = None  # the next episode never quotes: no answer
        unanswered = await episodes.run(QUESTION, manager, {"temperature": 0.9})
    finally:
        await web.aclose()

    # one episode, one request id (verl's sticky session), the episode's sampling
    assert len({request_id for request_id, _, _ in calls}) == 1
    assert {p["temperature"] for _, _, p in calls} == {0.9}
    assert all(p["stop"] and p["max_tokens"] > 0 for _, _, p in calls)
    # the response mask: 1 exactly on what the policy wrote, 0 on every later prompt
    prompts = [tokenizer.decode(ids) for _, ids, _ in calls]
    mine = [t for t, m in zip(right.response_ids, right.response_mask, strict=True) if m]
    seen = [t for t, m in zip(right.response_ids, right.response_mask, strict=True) if not m]
    assert tokenizer.decode(mine) == (
        f"Search {QUESTION.question}\nClicked on link 0\nQuote: {MONA}\nEnd: Answer\n{answer}■"
    )
    assert right.prompt_ids == calls[0][1]
    assert tokenizer.decode(seen) == "".join(prompts[1:])
    assert len(right.segment_lengths) == len(calls) == right.num_turns // 2 == 5
    assert sum(right.segment_lengths) == len(right.prompt_ids) + len(right.response_ids)
    # the reward is the reward model's score of the answer, and only of it
    [expected] = scorer.score_texts([prompts[-1] + answer])
    assert right.reward_score == pytest.approx(expected, abs=1e-4)  # another batch's padding
    assert (right.answered, right.correct, right.truncated) == (True, True, False)
    assert (unanswered.answered, unanswered.correct) == (False, False)
    assert unanswered.reward_score == config.reward.no_answer
    assert unanswered.num_turns == 2 * 10  # its action limit, every turn a command


async def test_an_episode_longer_than_verl_s_response_keeps_its_first_turns(
    learning_store: Path,
    reward_checkpoint: Path,
    tiny_tokenizer_folder: Path,  # noqa: F811
) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer_folder)
    web = offline(learning_store)
    script = Script(default_command="Scrolled down 1")
    manager = FakeServerManager(tokenizer, script)
    try:
        short = BrowsingEpisodes(
            VerlLoopConfig(min_actions=6, max_actions=6, response_length=400),
            tokenizer, web, scored_async(lambda texts: [0.0] * len(texts)),
        )  # fmt: skip
        cut = await short.run(QUESTION, manager, {"temperature": 1.0})
        tiny_prompt = BrowsingEpisodes(
            VerlLoopConfig(min_actions=2, max_actions=2, prompt_length=10),
            tokenizer, web, scored_async(lambda texts: [0.0] * len(texts)),
        )  # fmt: skip
        with pytest.raises(ConfigurationError, match=r"raise verl's rollout\.prompt_length"):
            await tiny_prompt.run(QUESTION, manager, {"temperature": 1.0})
    finally:
        await web.aclose()

    assert cut.truncated and 0 < len(cut.response_ids) <= 400
    assert cut.num_turns < 2 * 6


async def test_the_trajectory_holds_the_ids_and_log_probs_the_server_sampled(
    learning_store: Path,
    tiny_tokenizer_folder: Path,  # noqa: F811
) -> None:
    """Token in, token out: a server that samples a token per character gives ids the
    text, encoded again, does not; the response holds the server's ids, and its
    log-probs when verl asks for them (calculate_log_probs), 0.0 on prompt tokens."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer_folder)
    web = offline(learning_store)
    answer = "Leonardo da Vinci painted it [1]."
    script = Script(oracle_quote=MONA, answers=[answer], one_token_per_character=True)
    manager = FakeServerManager(tokenizer, script)
    episodes = BrowsingEpisodes(
        VerlLoopConfig(min_actions=10, max_actions=10), tokenizer, web,
        scored_async(lambda texts: [0.5] * len(texts)),
    )  # fmt: skip
    try:
        trajectory = await episodes.run(
            QUESTION, manager, {"temperature": 1.0, "top_p": 0.9, "logprobs": True}
        )
    finally:
        await web.aclose()

    assert {(p["top_p"], p["logprobs"]) for _, _, p in manager.calls} == {(0.9, True)}
    written = (
        f"Search {QUESTION.question}\n", "Clicked on link 0\n", f"Quote: {MONA}\n",
        "End: Answer\n", f"{answer}■",
    )  # fmt: skip
    sampled = [token for text in written for token in script.sampled_ids(text)]
    mask = trajectory.response_mask
    assert [t for t, m in zip(trajectory.response_ids, mask, strict=True) if m] == sampled
    encoded = tokenizer("".join(written), add_special_tokens=False)["input_ids"]
    assert sampled != encoded  # the text's own encoding is not what was sampled
    assert trajectory.response_logprobs is not None
    assert len(trajectory.response_logprobs) == len(trajectory.response_ids)
    assert {p for p, m in zip(trajectory.response_logprobs, mask, strict=True) if m} == {
        script.sampled_logprob
    }
    assert {p for p, m in zip(trajectory.response_logprobs, mask, strict=True) if not m} == {0.0}
    assert trajectory.reward_score == 0.5


def test_position_ids_restart_at_every_packed_prompt() -> None:
    # [left pad, left pad][prompt 3][command 1 + prompt 2 …][right pad]
    mask = [0, 0, 1, 1, 1, 1, 1, 1, 0]
    assert segment_position_ids(mask, [3, 2, 1]) == [0, 0, 0, 1, 2, 0, 1, 0, 0]
    with pytest.raises(ValueError, match="not the packed episode's segments"):
        segment_position_ids(mask, [3, 2])
    with pytest.raises(ValueError, match="not the packed episode's segments"):
        segment_position_ids([1, 0, 1], [2])


# -- the bindings, with stand-ins for verl's classes --------------------------------------


class StandInAgentLoopBase:
    """verl's AgentLoopBase.__init__ as hydra calls it (agent_loop.py, AgentLoopWorker)."""

    def __init__(self, trainer_config: Any, server_manager: Any, tokenizer: Any, **_: Any) -> None:
        self.config = trainer_config.config
        self.server_manager = server_manager
        self.tokenizer = tokenizer


@dataclass
class StandInOutput:  # verl's AgentLoopOutput fields that the loop fills
    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    response_logprobs: list[float] | None
    reward_score: float
    num_turns: int
    metrics: Any
    extra_fields: dict[str, Any]


# a dataset row as verl hands it to the loop
ROW = {
    "raw_prompt": [{"role": "user", "content": QUESTION.question}],
    "extra_info": {"question": QUESTION.question, "gold_answers": QUESTION.gold_answers},
}


def built_by_verl_for(tokenizer: Any, manager: FakeServerManager) -> dict[str, Any]:
    """What verl builds an agent loop with, beside the options of its config entry."""
    rollout = SimpleNamespace(prompt_length=4096, response_length=16384)
    trainer_config = SimpleNamespace(actor_rollout_ref=SimpleNamespace(rollout=rollout))
    return {
        "trainer_config": SimpleNamespace(config=trainer_config),
        "server_manager": manager,
        "tokenizer": tokenizer,
    }


async def test_the_agent_loop_returns_verl_s_output_scored_by_the_reward_server(
    learning_store: Path,
    reward_checkpoint: Path,
    tiny_tokenizer_folder: Path,  # noqa: F811
) -> None:
    from transformers import AutoTokenizer

    from webgpt.reward.scorer import RewardScorer

    tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer_folder)
    loop_class = agent_loop_class(StandInAgentLoopBase, StandInOutput, dict)
    answer = "Leonardo da Vinci painted it [1]."
    manager = FakeServerManager(tokenizer, Script(oracle_quote=MONA, answers=[answer]))
    classify = ClassifyScript(reward_checkpoint, served_name="rm-bon")
    with serve(fake_vllm_classify_app(classify)) as url:
        built_by_verl = built_by_verl_for(tokenizer, manager)
        # the options of its agent-loop config entry, as hydra passes them
        options = {
            "reward_url": f"{url}/v1",
            "reward_model": str(reward_checkpoint),
            "store": str(learning_store),
        }
        loop = loop_class(**built_by_verl, **options, min_actions=10, max_actions=10)
        output = await loop.run({"temperature": 1.0, "top_p": 1.0}, **ROW)
        second = loop_class(**built_by_verl, **options)
        # verl builds a loop a row: they share one offline web and one reward client
        assert second.episodes.web is loop.episodes.web
        assert second.episodes.score == loop.episodes.score
        await loop_class.shared.aclose()

    assert len(classify.requests) == 1  # the answer, scored once by the reward server
    prompt = tokenizer.decode(manager.calls[-1][1])
    [expected] = RewardScorer(reward_checkpoint).score_texts([prompt + answer])
    assert output.reward_score == pytest.approx(expected, abs=1e-4)
    assert output.extra_fields["correct"] is True
    assert sum(output.extra_fields["segment_lengths"]) == len(output.prompt_ids) + len(
        output.response_ids
    )
    assert len(output.response_mask) == len(output.response_ids) and 0 in output.response_mask
    with pytest.raises(DataError, match=r"extra_info\.question and gold_answers"):
        await loop.run({}, raw_prompt=ROW["raw_prompt"], extra_info={})


async def test_the_agent_loop_on_the_outcome_reward_needs_no_reward_server(
    learning_store: Path,
    tiny_tokenizer_folder: Path,  # noqa: F811
) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer_folder)
    loop_class = agent_loop_class(StandInAgentLoopBase, StandInOutput, dict)
    rewards = []
    for answer in ("Leonardo da Vinci painted it [1].", "Raphael painted it [1]."):
        manager = FakeServerManager(tokenizer, Script(oracle_quote=MONA, answers=[answer]))
        built_by_verl = built_by_verl_for(tokenizer, manager)
        loop = loop_class(
            **built_by_verl, reward_source="outcome", action_cost=0.01,
            store=str(learning_store), min_actions=10, max_actions=10,
        )  # fmt: skip
        output = await loop.run({"temperature": 1.0, "top_p": 1.0}, **ROW)
        rewards.append(output.reward_score)
    await loop_class.shared.aclose()
    assert rewards[0] - rewards[1] == pytest.approx(1.0)  # right and cited, against wrong
    assert 1.0 - 0.01 * 10 <= rewards[0] < 1.0  # less the cost of its (up to 10) actions
    with pytest.raises(ConfigurationError, match="needs reward_url and reward_model"):
        loop_class(**built_by_verl, store=str(learning_store))  # the source `model`


class StandInWorker:
    """verl's AgentLoopWorker._agent_loop_postprocess: left-padded prompt, right-padded
    response, positions counted over the attention mask (compute_position_id_with_mask)."""

    async def _agent_loop_postprocess(self, output: Any, **_: Any) -> Any:
        import torch

        width = 6
        prompt = [0] * (width - len(output.prompt_ids)) + [1] * len(output.prompt_ids)
        response = [1] * len(output.response_ids) + [0] * (width - len(output.response_ids))
        mask = torch.tensor([prompt + response])
        positions = (torch.cumsum(mask, dim=1) - 1).clamp(min=0)
        return SimpleNamespace(attention_mask=mask, position_ids=positions)


async def test_the_worker_restarts_positions_at_every_prompt_of_the_episode() -> None:
    worker = packed_worker_class(StandInWorker)()
    output = SimpleNamespace(
        prompt_ids=[11, 12, 13],
        response_ids=[21, 31, 32, 33],  # a command, then the next prompt and command
        extra_fields={"segment_lengths": [4, 3]},
    )
    padded = await worker._agent_loop_postprocess(output)
    assert padded.position_ids.tolist() == [[0, 0, 0, 0, 1, 2, 3, 0, 1, 2, 0, 0]]
    plain = SimpleNamespace(prompt_ids=[1], response_ids=[2], extra_fields={})
    untouched = await worker._agent_loop_postprocess(plain)  # not ours: verl's positions
    assert untouched.position_ids.tolist() == [[0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]]


# -- the run, prepared --------------------------------------------------------------------


def test_a_verl_run_is_prepared_with_data_config_and_launch_command(
    reward_checkpoint: Path, tmp_path: Path
) -> None:
    from datasets import Dataset

    questions_file = tmp_path / "questions.jsonl"
    rows = [
        QUESTION.model_copy(update={"split": "train"}),
        QUESTION.model_copy(update={"split": "train"}),  # a repeat: one row
        QUESTION.model_copy(update={"question": "Who was Ada?", "split": "dev"}),
    ]
    questions_file.write_text("".join(q.model_dump_json() + "\n" for q in rows))

    config = VerlRunConfig(
        policy=tmp_path / "policy", reward_model=reward_checkpoint,
        reward_url="http://reward:8000/v1", questions=questions_file, out=tmp_path / "run",
        batch_size=1, kl_coef=0.02, gpus_per_node=4,
    )  # fmt: skip
    script = prepare_verl_run(config)

    train = Dataset.from_parquet(str(tmp_path / "run" / "train.parquet"))
    dev = Dataset.from_parquet(str(tmp_path / "run" / "dev.parquet"))
    assert (len(train), len(dev)) == (1, 1) and set(train["agent_name"]) == {AGENT_NAME}
    question = question_of(train[0])
    assert question == QUESTION.model_copy(update={"split": "train"}).model_copy(
        update={"url": None, "title": None, "evidence": None, "answer": None, "style": None}
    )
    assert train[0]["prompt"] == [{"role": "user", "content": question.question}]
    [loop] = json.loads((tmp_path / "run" / "agent_loop.yaml").read_text())
    assert loop["name"] == AGENT_NAME
    assert loop["_target_"] == "webgpt.learning.rl.verl_agent_loop.WebGPTAgentLoop"
    assert loop["reward_url"] == "http://reward:8000/v1"
    launch = script.read_text()
    for override in (
        "python3 -m verl.trainer.main_ppo",
        "algorithm.adv_estimator=gae",
        "algorithm.use_kl_in_reward=True",
        "algorithm.kl_ctrl.kl_coef=0.02",
        "actor_rollout_ref.model.use_remove_padding=True",
        "agent_loop_manager_class=webgpt.learning.rl.verl_agent_loop.PackedAgentLoopManager",
        f"actor_rollout_ref.rollout.agent.default_agent_loop={AGENT_NAME}",
        "trainer.n_gpus_per_node=4",
    ):
        assert override in launch

    assert (loop["reward_source"], loop["reward_model"]) == ("model", str(reward_checkpoint))

    outcome = VerlRunConfig(
        **{**config.__dict__, "reward_source": "outcome", "reward_model": None,
           "reward_url": None, "action_cost": 0.01, "out": tmp_path / "outcome"}
    )  # fmt: skip
    prepare_verl_run(outcome)
    [loop] = json.loads((tmp_path / "outcome" / "agent_loop.yaml").read_text())
    assert (loop["reward_source"], loop["action_cost"]) == ("outcome", 0.01)
    assert loop["reward_url"] is None and loop["reward_model"] is None

    with pytest.raises(ConfigurationError, match="give --reward-model and --reward-url"):
        prepare_verl_run(VerlRunConfig(**{**config.__dict__, "reward_url": None}))
    with pytest.raises(ConfigurationError, match="--reward-source must be one of"):
        prepare_verl_run(VerlRunConfig(**{**config.__dict__, "reward_source": "vibes"}))
    with pytest.raises(ConfigurationError, match="--action-cost must be 0 or more"):
        prepare_verl_run(VerlRunConfig(**{**outcome.__dict__, "action_cost": -0.1}))
    with pytest.raises(ConfigurationError, match="--kl-coef must be > 0"):
        prepare_verl_run(VerlRunConfig(**{**config.__dict__, "kl_coef": 0.0}))
    with pytest.raises(DataError, match="fewer than --batch-size"):
        prepare_verl_run(
            VerlRunConfig(**{**config.__dict__, "batch_size": 2, "out": tmp_path / "refused"})
        )
    assert not (tmp_path / "refused").exists()  # refused before anything was written
