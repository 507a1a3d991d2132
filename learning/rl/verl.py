"""Our episodes as verl's agent loop: PPO in the browsing environment on many GPUs.

verl (volcengine/verl) trains with PPO across GPUs: vLLM servers sample, FSDP or Megatron
workers train, and an *agent loop* (`AgentLoopBase`, registered by name) turns one dataset
row into one trajectory: prompt ids, response ids and a response mask, 1 on the tokens the
policy wrote. This module is the verl-free part of ours, so that its tests run where verl
is not installed; learning/rl/verl_agent_loop.py binds it to verl's classes.

- `ServerManagerPolicy` is our Policy over verl's server manager (token in, token out):
  prompts are tokenised as the serving engine tokenises them.
- `BrowsingEpisodes.run` plays one real episode (agent.episode.run_episode on the offline
  web, through learning.rl.rollouts.recorded_episode) and packs it exactly as
  `webgpt train rl` packs it for TRL: the first browsing prompt is the prompt; the
  response is command 1, prompt 2, command 2, …, the answer prompt, the answer; the mask
  is 0 on every prompt token. The trajectory's reward is that of its answer, and only of it
  (learning.rl.reward: the reward model's score as in WebGPT, or the outcome); verl adds
  the per-token KL to the reference policy (`use_kl_in_reward`) and GAE with a value
  network, as WebGPT's PPO did.
- `segment_position_ids` restarts the position ids at every prompt. Our prompts are rebuilt
  at each step (page, quotes, past actions), so each command must be scored given exactly
  the prompt it was sampled from. With `use_remove_padding`, verl hands the model position
  ids and no attention mask, and flash attention separates sequences where positions
  restart: the same block-diagonal mask the TRL path builds (learning/rl/).
"""

import json
import random
import shlex
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from webgpt.agent.episode import EpisodeConfig
from webgpt.agent.errors import ConfigurationError, DataError
from webgpt.agent.hf_policy import truncate_at_stop
from webgpt.agent.policy import Completion, Completions, Sampling, StreamChunk, Usage
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web, offline_web
from webgpt.evals.questions import Question, contains_gold, load_questions
from webgpt.learning.rl.packing import PackedEpisode, pack_within
from webgpt.learning.rl.reward import (
    REWARD_SOURCES,
    EpisodeAnswer,
    RewardRule,
    RewardSource,
    episode_rewards,
)
from webgpt.learning.rl.rollouts import recorded_episode

AGENT_NAME = "webgpt_browse"  # the name the agent loop is registered under in verl


class TokenOutput(Protocol):
    """What verl's server manager returns (verl.workers.rollout.replica.TokenOutput)."""

    token_ids: list[int]
    log_probs: list[float] | None  # with sampling_params["logprobs"] (calculate_log_probs)


class ServerManager(Protocol):
    """verl's AsyncLLMServerManager, as far as the agent loop uses it."""

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any]
    ) -> TokenOutput: ...


@dataclass
class ServerManagerPolicy:
    """Samples through verl's server manager. One request id an episode keeps its turns on
    one server (verl's sticky sessions: prefix-cache hits across the episode's prompts).
    No guided decoding: verl's servers take no regex, so commands go through the browser's
    parser and an invalid one costs an action, as in WebGPT and in `webgpt train rl`."""

    server_manager: ServerManager
    tokenizer: Any
    request_id: str
    name: str = "verl"
    # the agent loop's sampling parameters from verl (top_p, top_k, logprobs, ...); each
    # call's temperature, budget and stop strings are set over them
    loop_sampling: dict[str, Any] = field(default_factory=dict)

    async def complete(self, prompt: str, sampling: Sampling) -> Completions:
        if sampling.n != 1:
            raise ValueError("verl's server manager samples one completion a request")
        prompt_ids: list[int] = self.tokenizer(prompt)["input_ids"]
        params: dict[str, Any] = {
            **self.loop_sampling,
            "temperature": sampling.temperature,
            "max_tokens": sampling.max_tokens,
        }
        if sampling.stop:
            params["stop"] = list(sampling.stop)
        output = await self.server_manager.generate(
            self.request_id, prompt_ids=prompt_ids, sampling_params=params
        )
        ids = tuple(output.token_ids)
        text, stopped = truncate_at_stop(
            self.tokenizer.decode(ids, skip_special_tokens=True), sampling.stop
        )
        # vLLM leaves the stop string out of the text; any end before the budget is a stop
        ended = stopped or len(ids) < sampling.max_tokens
        log_probs = getattr(output, "log_probs", None)
        choice = Completion(
            text,
            "stop" if ended else "length",
            # token in, token out: the ids verl's server sampled are what is trained
            token_ids=ids,
            logprobs=tuple(log_probs) if log_probs else None,
        )
        return Completions([choice], Usage(len(prompt_ids), len(ids)), tuple(prompt_ids))

    async def stream(self, prompt: str, sampling: Sampling) -> AsyncIterator[StreamChunk]:
        result = await self.complete(prompt, sampling)
        yield StreamChunk(result.choices[0].text, result.usage)


@dataclass(frozen=True)
class VerlLoopConfig:
    """The agent loop's options: keys of its entry in verl's agent-loop config file."""

    min_actions: int = 6  # the action limit is drawn per episode from min..max (WebGPT)
    max_actions: int = 12
    # as `webgpt train rl` rewards (learning.rl.reward)
    reward: RewardRule = field(default_factory=RewardRule)
    prompt_length: int = 2048  # verl's rollout.prompt_length
    response_length: int = 8192  # verl's rollout.response_length


@dataclass
class Trajectory:
    """One episode as verl trains on it (AgentLoopOutput's fields, plus what we log)."""

    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    response_logprobs: list[float] | None  # the server's, 0.0 on prompt tokens; or none
    reward_score: float
    num_turns: int
    segment_lengths: list[int]
    answered: bool
    correct: bool
    truncated: bool


class BrowsingEpisodes:
    """Runs one question's episode for verl and packs it into a trajectory."""

    def __init__(
        self,
        config: VerlLoopConfig,
        tokenizer: Any,
        web: Web,
        score: Callable[[list[str]], Awaitable[list[float]]],
        seed: int | None = None,
    ) -> None:
        if not 1 <= config.min_actions <= config.max_actions:
            raise ConfigurationError("the agent loop wants 1 <= min_actions <= max_actions")
        self.config = config
        self.tokenizer = tokenizer
        self.web = web
        self.score = score
        self.rng = random.Random(seed)

    async def run(
        self, question: Question, server_manager: ServerManager, sampling_params: dict[str, Any]
    ) -> Trajectory:
        """One episode sampled with verl's sampling parameters for the loop (temperature,
        top_p, top_k, logprobs), each call's budget and stop strings set over them."""
        loop_sampling = dict(sampling_params)
        temperature = float(loop_sampling.pop("temperature", 1.0))
        policy = ServerManagerPolicy(
            server_manager, self.tokenizer, uuid.uuid4().hex, loop_sampling=loop_sampling
        )
        result, turns = await recorded_episode(
            self.web,
            policy,
            question,
            SessionConfig(
                max_actions=self.rng.randint(self.config.min_actions, self.config.max_actions)
            ),
            EpisodeConfig(temperature=temperature, guided=False),
        )
        answer = EpisodeAnswer.of(result)
        (reward,) = await episode_rewards(question, [answer], self.config.reward, self.score)
        answered = answer.answered
        packed, kept = pack_within(self.tokenizer, turns, self._fits)
        if not self._fits(packed):
            raise ConfigurationError(
                f"an episode's first prompt is {len(packed.prompt_ids)} tokens: raise verl's "
                f"rollout.prompt_length (now {self.config.prompt_length})"
            )
        return Trajectory(
            prompt_ids=packed.prompt_ids,
            response_ids=packed.completion_ids,
            response_mask=packed.env_mask,
            response_logprobs=packed.logprobs,
            reward_score=reward,
            num_turns=2 * kept,
            segment_lengths=packed.segment_lengths,
            answered=answered,
            correct=answered and contains_gold(result.answer or "", question.gold_answers),
            truncated=kept < len(turns),
        )

    def _fits(self, packed: PackedEpisode) -> bool:
        return (
            len(packed.prompt_ids) <= self.config.prompt_length
            and len(packed.completion_ids) <= self.config.response_length
        )


def question_of(row: dict[str, Any]) -> Question:
    """The question of a verl dataset row (written by `webgpt train verl`)."""
    info = row.get("extra_info")
    if not isinstance(info, dict) or not info.get("question") or not info.get("gold_answers"):
        raise DataError(
            "a verl row without extra_info.question and gold_answers: "
            "write the data with `webgpt train verl`"
        )
    return Question(
        question=info["question"], gold_answers=list(info["gold_answers"]), split=info.get("split")
    )


def segment_position_ids(
    attention_mask: Sequence[int], segment_lengths: Sequence[int]
) -> list[int]:
    """Position ids of one padded row ([left pads][prompt][response][right pads]) that
    restart at every packed prompt; pads get 0 (verl removes them before the model runs)."""
    real = [i for i, m in enumerate(attention_mask) if m]
    if len(real) != sum(segment_lengths) or (real and real[-1] - real[0] + 1 != len(real)):
        raise ValueError("the row's real tokens are not the packed episode's segments")
    positions = [0] * len(attention_mask)
    at = real[0] if real else 0
    for length in segment_lengths:
        positions[at : at + length] = range(length)
        at += length
    return positions


# -- the data and the launch ------------------------------------------------------------------


def verl_rows(questions: Path, split: str) -> list[dict[str, Any]]:
    """Questions of a split as verl's RLHFDataset rows: the question as the chat prompt,
    our agent loop named on each row, gold answers in extra_info (the trajectory's
    `correct` figure; the reward is the reward model's)."""
    chosen = load_questions(questions, split)  # none: a DataError
    unique = list({q.question: q for q in chosen}.values())
    return [
        {
            "data_source": "webgpt",
            "agent_name": AGENT_NAME,
            "prompt": [{"role": "user", "content": q.question}],
            "extra_info": {
                "index": index,
                "question": q.question,
                "gold_answers": q.gold_answers,
                "split": split,
            },
        }
        for index, q in enumerate(unique)
    ]


def _write_parquet(rows: list[dict[str, Any]], out: Path) -> None:
    from datasets import Dataset

    out.parent.mkdir(parents=True, exist_ok=True)
    Dataset.from_list(rows).to_parquet(str(out))


# -- bindings to verl's classes (verl_agent_loop.py passes verl's; the tests stand-ins) ----


class WorkerResources:
    """What the agent loops of one worker process share: verl builds an agent loop for
    every row, and each would otherwise open the offline web and a reward client anew.
    Owned by the class `agent_loop_class` builds (one a worker process), not the module."""

    def __init__(self) -> None:
        self._webs: dict[str | None, Web] = {}
        self._scorers: dict[tuple[str, str, str | None], Any] = {}

    def web(self, store: str | None) -> Web:
        if store not in self._webs:
            self._webs[store] = offline_web(Path(store) if store else None)
        return self._webs[store]

    def scorer(self, reward_url: str, reward_model: str, api_key: str | None) -> Any:
        """A client of the reward model's server (no torch in the worker)."""
        from webgpt.reward.remote import RemoteRewardScorer

        key = (reward_url, reward_model, api_key)
        if key not in self._scorers:
            self._scorers[key] = RemoteRewardScorer(reward_url, Path(reward_model), api_key=api_key)
        return self._scorers[key]

    async def aclose(self) -> None:
        """verl's workers keep theirs until the process ends; tests close them."""
        for web in self._webs.values():
            await web.aclose()
        for scorer in self._scorers.values():
            await scorer.aclose()
        self._webs.clear()
        self._scorers.clear()


async def _no_reward_model(texts: list[str]) -> list[float]:
    """The score of a loop without a reward model: reward_source outcome asks for none."""
    raise ConfigurationError("reward_source model needs reward_url and reward_model")


def agent_loop_class(base: type, output: type, metrics: type) -> type:
    """Our agent loop on verl's AgentLoopBase. Its options are the keys of its entry in
    the agent-loop config (hydra passes them): `reward_source` (RewardRule's, with
    `no_answer_reward`, `declined_answerable_reward`, `action_cost`), `reward_url` (a vLLM
    server serving the reward checkpoint, as `webgpt serve` uses it) and `reward_model`
    (that checkpoint's folder; its manifest gives the version and offset), which the
    source `model` needs, `store` (the offline web file), and VerlLoopConfig's fields. The
    class's `shared` resources serve all its loops."""
    resources = WorkerResources()

    class WebGPTAgentLoop(base):  # type: ignore[misc]
        shared = resources

        def __init__(
            self,
            *args: Any,
            reward_url: str | None = None,
            reward_model: str | None = None,
            reward_api_key: str | None = None,
            store: str | None = None,
            min_actions: int = VerlLoopConfig.min_actions,
            max_actions: int = VerlLoopConfig.max_actions,
            reward_source: RewardSource = RewardRule.source,
            no_answer_reward: float = RewardRule.no_answer,
            declined_answerable_reward: float = RewardRule.declined_answerable,
            action_cost: float = RewardRule.action_cost,
            **kwargs: Any,
        ) -> None:
            super().__init__(*args, **kwargs)
            rollout = self.config.actor_rollout_ref.rollout
            config = VerlLoopConfig(
                min_actions=min_actions,
                max_actions=max_actions,
                reward=RewardRule(
                    reward_source, no_answer_reward, declined_answerable_reward, action_cost
                ),
                prompt_length=rollout.prompt_length,
                response_length=rollout.response_length,
            )
            if reward_source != "model":  # the outcome: a reward model given is not read
                score = _no_reward_model
            elif reward_url and reward_model:
                score = resources.scorer(reward_url, reward_model, reward_api_key).score_texts
            else:
                raise ConfigurationError("reward_source model needs reward_url and reward_model")
            self.episodes = BrowsingEpisodes(config, self.tokenizer, resources.web(store), score)

        async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
            trajectory = await self.episodes.run(
                question_of(kwargs), self.server_manager, sampling_params
            )
            return output(
                prompt_ids=trajectory.prompt_ids,
                response_ids=trajectory.response_ids,
                response_mask=trajectory.response_mask,
                response_logprobs=trajectory.response_logprobs,
                reward_score=trajectory.reward_score,
                num_turns=trajectory.num_turns,
                metrics=metrics(),
                extra_fields={
                    "segment_lengths": trajectory.segment_lengths,
                    "answered": trajectory.answered,
                    "correct": trajectory.correct,
                    "truncated": trajectory.truncated,
                },
            )

    return WebGPTAgentLoop


def packed_worker_class(base: type) -> type:
    """verl's AgentLoopWorker whose position ids restart at every packed prompt."""

    class PackedAgentLoopWorker(base):  # type: ignore[misc]
        async def _agent_loop_postprocess(self, output: Any, **kwargs: Any) -> Any:
            segments = output.extra_fields.get("segment_lengths")
            padded = await super()._agent_loop_postprocess(output, **kwargs)
            if segments:
                import torch

                rows = padded.attention_mask.tolist()
                padded.position_ids = torch.tensor(
                    [segment_position_ids(row, segments) for row in rows],
                    dtype=padded.position_ids.dtype,
                )
            return padded

    return PackedAgentLoopWorker


# -- a verl run, prepared ---------------------------------------------------------------------


@dataclass
class VerlRunConfig:
    """Fields become `webgpt train verl` options (help from metadata)."""

    policy: Path = field(metadata={"help": "Hugging Face folder of the policy to start from"})
    questions: Path = field(metadata={"help": "questions JSONL (with gold answers)"})
    out: Path = field(metadata={"help": "folder for the data, the config and run.sh"})
    reward_source: str = field(
        default="model",
        metadata={
            "help": "the reward (learning.rl.reward): 'model', the reward model's score "
            "(WebGPT); 'outcome', for an answer right for its kind that cites a quote, how "
            "right (0-1) times how supported (0.5-1), else 0, less --action-cost per action "
            "(no reward model)"
        },
    )
    reward_model: Path | None = field(
        default=None,
        metadata={"help": "reward model checkpoint folder (--reward-source model reads it)"},
    )
    reward_url: str | None = field(
        default=None,
        metadata={"help": "base URL of a vLLM server serving that checkpoint (…/v1)"},
    )
    action_cost: float = field(
        default=0.0, metadata={"help": "--reward-source outcome: less this per browsing action"}
    )
    version: str = field(default="rl-verl-0001", metadata={"help": "the run's name"})
    store: Path | None = field(default=None, metadata={"help": "offline web file"})
    gpus_per_node: int = field(default=8, metadata={"help": "GPUs on each node"})
    nodes: int = field(default=1, metadata={"help": "nodes"})
    batch_size: int = field(default=64, metadata={"help": "questions in a rollout batch"})
    epochs: int = field(default=1, metadata={"help": "passes over the training questions"})
    learning_rate: float = field(default=1e-6, metadata={"help": "the policy's learning rate"})
    kl_coef: float = field(default=0.05, metadata={"help": "KL penalty in the reward (> 0)"})
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature"})
    min_actions: int = field(default=6, metadata={"help": "action limit drawn from min..max"})
    max_actions: int = field(default=12, metadata={"help": "action limit drawn from min..max"})
    prompt_length: int = field(default=2048, metadata={"help": "tokens of the first prompt"})
    response_length: int = field(
        default=8192, metadata={"help": "tokens of the rest of an episode (later turns cut)"}
    )


def prepare_verl_run(config: VerlRunConfig) -> Path:
    """Writes OUT/train.parquet, OUT/dev.parquet, OUT/agent_loop.yaml and OUT/run.sh (the
    launch command) and returns run.sh. PPO as WebGPT ran it: GAE with a value network
    (initialised from the policy), the KL to the reference policy in the reward, one
    epoch per batch of rollouts, rewards from the reward model only at the end."""
    if config.kl_coef <= 0:
        raise ConfigurationError("--kl-coef must be > 0: the KL penalty keeps RL near BC")
    if config.reward_source not in REWARD_SOURCES:
        raise ConfigurationError(f"--reward-source must be one of {', '.join(REWARD_SOURCES)}")
    if config.reward_source == "model" and (config.reward_model is None or not config.reward_url):
        raise ConfigurationError(
            "--reward-source model scores answers with a served reward model: give "
            "--reward-model and --reward-url"
        )
    if config.action_cost < 0:
        raise ConfigurationError("--action-cost must be 0 or more")
    out = config.out.resolve()
    train_rows, dev_rows = verl_rows(config.questions, "train"), verl_rows(config.questions, "dev")
    train, dev = len(train_rows), len(dev_rows)
    if train < config.batch_size:
        raise DataError(f"{train} training questions: fewer than --batch-size {config.batch_size}")
    _write_parquet(train_rows, out / "train.parquet")
    _write_parquet(dev_rows, out / "dev.parquet")
    loop = {
        "name": AGENT_NAME,
        "_target_": "webgpt.learning.rl.verl_agent_loop.WebGPTAgentLoop",
        "reward_source": config.reward_source,
        "action_cost": config.action_cost,
        "reward_url": config.reward_url,
        "reward_model": str(config.reward_model.resolve()) if config.reward_model else None,
        "store": str(config.store.resolve()) if config.store else None,
        "min_actions": config.min_actions,
        "max_actions": config.max_actions,
    }
    # JSON is YAML: OmegaConf reads the list as verl's agent-loop config file
    (out / "agent_loop.yaml").write_text(json.dumps([loop], indent=2) + "\n")
    policy = config.policy.resolve()
    overrides = [
        "algorithm.adv_estimator=gae",
        "algorithm.use_kl_in_reward=True",
        "algorithm.kl_ctrl.type=fixed",
        f"algorithm.kl_ctrl.kl_coef={config.kl_coef}",
        f"data.train_files={out / 'train.parquet'}",
        f"data.val_files={out / 'dev.parquet'}",
        "data.return_raw_chat=True",
        f"data.train_batch_size={config.batch_size}",
        f"data.max_prompt_length={config.prompt_length}",
        f"data.max_response_length={config.response_length}",
        f"actor_rollout_ref.model.path={policy}",
        "actor_rollout_ref.model.use_remove_padding=True",
        "actor_rollout_ref.actor.use_kl_loss=False",
        "actor_rollout_ref.actor.ppo_epochs=1",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={config.batch_size}",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1",
        f"actor_rollout_ref.actor.optim.lr={config.learning_rate}",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1",
        "actor_rollout_ref.rollout.name=vllm",
        "actor_rollout_ref.rollout.mode=async",
        "actor_rollout_ref.rollout.n=1",
        f"actor_rollout_ref.rollout.temperature={config.temperature}",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1",
        f"actor_rollout_ref.rollout.agent.default_agent_loop={AGENT_NAME}",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={out / 'agent_loop.yaml'}",
        "actor_rollout_ref.rollout.agent.agent_loop_manager_class="
        "webgpt.learning.rl.verl_agent_loop.PackedAgentLoopManager",
        f"critic.model.path={policy}",
        "critic.model.use_remove_padding=True",
        "critic.ppo_micro_batch_size_per_gpu=1",
        "reward_model.enable=False",
        f"trainer.n_gpus_per_node={config.gpus_per_node}",
        f"trainer.nnodes={config.nodes}",
        f"trainer.total_epochs={config.epochs}",
        "trainer.project_name=webgpt",
        f"trainer.experiment_name={config.version}",
        "trainer.logger=[console]",
        f"trainer.default_local_dir={out / 'checkpoints'}",
    ]
    script = out / "run.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"# PPO on the webgpt agent loop with verl ({train} train, {dev} dev questions).\n"
        "# Run from the webgpt checkout, with webgpt and verl installed in one environment\n"
        "# and the reward model served at the reward_url of agent_loop.yaml.\n"
        "exec python3 -m verl.trainer.main_ppo \\\n"
        + "".join(f"    {shlex.quote(o)} \\\n" for o in overrides)
        + '    "$@"\n'
    )
    script.chmod(0o755)
    return script
