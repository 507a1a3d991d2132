"""What a `webgpt train rl` run is told (its options) and what it returns."""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers.trainer_utils import SaveStrategy, SchedulerType

from webgpt.agent.errors import ConfigurationError
from webgpt.agent.model import default_quote_ranker_name
from webgpt.infra.known_warnings import trainer_import_warnings_silenced
from webgpt.learning.comparisons import ANSWER_ONLY_SWAPS
from webgpt.learning.rl.reward import REWARD_SOURCES, RewardRule
from webgpt.learning.runs import default_work_folder, jsonable, work_folder_field

with trainer_import_warnings_silenced():
    from trl.trainer.grpo_config import GRPOConfig


@dataclass(kw_only=True)
class RLConfig(GRPOConfig):
    """`webgpt train rl`: our options, then every option of TRL's GRPOTrainer (this is a
    GRPOConfig, as TRL's trainers take theirs). Fields become options, help from metadata;
    GRPOConfig's fields redefined here carry our defaults: `--steps` names `max_steps`;
    `--learning-rate`, `--beta`, `--temperature`, `--seed` are GRPOConfig's own. The batch
    is `--questions-per-step` groups of `--episodes-per-question` episodes, so GRPOConfig's
    `num_generations` and `per_device_train_batch_size` follow from those two."""

    policy: Path = field(metadata={"help": "Hugging Face folder of the policy to start from"})
    questions: Path = field(metadata={"help": "questions JSONL (with gold answers)"})
    out: Path = field(metadata={"help": "registry folder; the checkpoint goes to OUT/VERSION"})
    reward_model: Path | None = field(
        default=None,
        metadata={"help": "reward model checkpoint folder (--reward-source model reads it)"},
    )
    version: str = field(default="rl-0001", metadata={"help": "checkpoint version name"})
    split: str = field(default="train", metadata={"help": "train on questions of this split"})
    questions_per_step: int = field(default=2, metadata={"help": "questions in a rollout batch"})
    episodes_per_question: int = field(
        default=4, metadata={"help": "episodes a question (a group; at least 2)"}
    )
    kl_budget: float = field(
        default=0.5, metadata={"help": "stop once the mean per-token KL passes this"}
    )
    max_minutes: float | None = field(
        default=None,
        metadata={
            "help": "stop after this many minutes of training in this process (the "
            "checkpoint is kept)"
        },
    )
    min_actions: int = field(default=6, metadata={"help": "action limit drawn from min..max"})
    max_actions: int = field(default=12, metadata={"help": "action limit drawn from min..max"})
    answer_only_share: float = field(
        default=0.25, metadata={"help": "share of groups that only answer from kept quotes"}
    )
    unquoted: str = field(
        default="episodes",
        metadata={
            "help": "an answer-only group whose question was never quoted: 'episodes' trains "
            "whole episodes of it (~20x the tokens), 'swap' answers another question (up to "
            f"{ANSWER_ONLY_SWAPS} tried)"
        },
    )
    reward_source: str = field(
        default="model",
        metadata={
            "help": "the reward (learning.rl.reward): 'model', the reward model's score of "
            "the answer (WebGPT); 'outcome', for an answer right for its question's kind "
            "that cites a quote, how right (0-1) times how supported by its quotes (0.5-1), "
            "else 0, less --action-cost per action"
        },
    )
    no_answer_reward: float = field(
        default=-2.0,
        metadata={"help": "reward of an episode that ends without an answer, or an empty one"},
    )
    declined_answerable_reward: float = field(
        default=-1.0,
        metadata={"help": "reward of a decline of a question the pages answer"},
    )
    action_cost: float = field(
        default=0.0, metadata={"help": "--reward-source outcome: less this per browsing action"}
    )
    lora_rank: int = field(default=16, metadata={"help": "LoRA rank of the trained weights"})
    max_tokens: int = field(
        default=8192, metadata={"help": "tokens of a packed episode; later turns left out"}
    )
    comparisons_out: Path | None = field(
        default=None,
        metadata={
            "help": "also append every group's answers as synthetic comparisons (JSONL, as "
            "`webgpt comparisons generate`): data to refresh the reward model where RL goes"
        },
    )
    store: Path | None = field(default=None, metadata={"help": "offline web file"})
    quote_ranker: str = field(
        default_factory=default_quote_ranker_name,
        metadata={
            "help": "the quote ranker the episodes decode with, as the service's: `default` "
            "(the shipped one), a folder, or `none` (default: $WEBGPT_QUOTE_RANKER, else "
            "`default`)"
        },
    )
    dev_steps: int = field(
        default=0,
        metadata={
            "help": "every N steps, a dev evaluation: one greedy episode on each of the first "
            "--dev-questions questions of split dev (in --questions), their mean reward and "
            "shares answered and right logged beside the loss as dev/* (0: none)"
        },
    )
    dev_questions: int = field(default=8, metadata={"help": "questions of a dev evaluation"})
    resume: bool = field(
        default=False,
        metadata={
            "help": "continue the run from the last checkpoint in its work folder "
            "(--output-dir; --save-steps writes them): weights, optimizer, RNGs, the rollout "
            "sampler's draws and counts restored"
        },
    )

    # GRPOConfig's (and TrainingArguments') fields, with our defaults
    output_dir: str | None = work_folder_field()
    max_steps: int = field(
        default=20,
        metadata={"help": "optimizer steps (one per rollout batch)", "aliases": ["--steps"]},
    )
    learning_rate: float = field(default=1e-5, metadata={"help": "AdamW learning rate"})
    lr_scheduler_type: SchedulerType | str = field(
        default="constant", metadata={"help": "learning-rate schedule"}
    )
    beta: float = field(default=0.05, metadata={"help": "KL penalty coefficient (> 0)"})
    temperature: float = field(
        default=1.0,
        metadata={"help": "sampling temperature (the log-probabilities are of it too)"},
    )
    num_iterations: int = field(
        default=1, metadata={"help": "optimisation epochs per batch of rollouts (WebGPT: 1)"}
    )
    logging_steps: float = field(default=1, metadata={"help": "log every N steps"})
    save_strategy: SaveStrategy | str = field(
        default="no", metadata={"help": "when a checkpoint is written: no, steps (--save-steps)"}
    )
    save_steps: float = field(
        default=0, metadata={"help": "write a checkpoint every N steps, to --resume from"}
    )
    seed: int = field(default=0, metadata={"help": "sampling and question-order seed"})
    disable_tqdm: bool | None = field(default=True)
    dataloader_pin_memory: bool = field(default=False)
    use_vllm: bool = field(
        default=False, init=False, metadata={"help": "rollouts sample in this process"}
    )
    # from --episodes-per-question and --questions-per-step
    num_generations: int | None = field(default=None, init=False)
    per_device_train_batch_size: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.policy, self.out = Path(self.policy).expanduser(), Path(self.out).expanduser()
        self.questions = Path(self.questions).expanduser()
        for name in ("reward_model", "comparisons_out", "store"):
            if getattr(self, name) is not None:
                setattr(self, name, Path(getattr(self, name)).expanduser())
        _check(self)
        self.num_generations = self.episodes_per_question
        self.per_device_train_batch_size = self.questions_per_step * self.episodes_per_question
        if self.output_dir is None:
            self.output_dir = default_work_folder(self.out, self.version)
        if self.save_steps and self.save_strategy == "no":
            self.save_strategy = "steps"
        if self.save_strategy == "steps" and not self.save_steps:
            raise ConfigurationError("--save-strategy steps wants --save-steps N")
        if self.bf16 is None:  # TRL's default is bf16 everywhere; a CPU trains in fp32
            import torch

            self.bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        super().__post_init__()  # type: ignore[no-untyped-call]

    @property
    def reward_rule(self) -> RewardRule:
        """How an episode's answer is rewarded (learning.rl.reward)."""
        return RewardRule(
            self.reward_source,  # type: ignore[arg-type]  # checked in _check
            self.no_answer_reward,
            self.declined_answerable_reward,
            self.action_cost,
        )

    def to_dict(self) -> dict[str, Any]:
        """Every field as a JSON value (paths as strings)."""
        return jsonable(super().to_dict())  # type: ignore[no-untyped-call]


def _check(config: RLConfig) -> None:
    if config.episodes_per_question < 2:
        raise ConfigurationError("--episodes-per-question must be at least 2 (a group)")
    if config.beta <= 0:
        raise ConfigurationError("--beta must be above 0: the KL penalty keeps the policy near BC")
    if not 1 <= config.min_actions <= config.max_actions:
        raise ConfigurationError("--min-actions must be between 1 and --max-actions")
    if not 0 <= config.answer_only_share <= 1:
        raise ConfigurationError("--answer-only-share must be between 0 and 1")
    if config.reward_source not in REWARD_SOURCES:
        raise ConfigurationError(f"--reward-source must be one of {', '.join(REWARD_SOURCES)}")
    if config.reward_source == "model" and config.reward_model is None:
        raise ConfigurationError(
            "--reward-source model scores answers with a reward model: give --reward-model"
        )
    if config.action_cost < 0:
        raise ConfigurationError("--action-cost must be 0 or more")
    if config.unquoted not in ("episodes", "swap"):
        raise ConfigurationError("--unquoted must be 'episodes' or 'swap'")
    if config.max_steps < 1 or config.questions_per_step < 1:
        raise ConfigurationError("--steps and --questions-per-step must be at least 1")
    if config.max_minutes is not None and config.max_minutes <= 0:
        raise ConfigurationError("--max-minutes must be above 0")
    if config.dev_steps < 0 or (config.dev_steps and config.dev_questions < 1):
        raise ConfigurationError("--dev-steps N wants N >= 0 and --dev-questions >= 1")
    if config.eval_strategy != "no":
        raise ConfigurationError(
            "GRPOTrainer's own evaluation samples no episodes: use --dev-steps N instead"
        )


@dataclass
class RLResult:
    checkpoint: Path
    manifest_metrics: dict[str, Any]
    log_history: list[dict[str, float]]
    parameters_changed: bool
