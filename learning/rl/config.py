"""What a `webgpt train rl` run is told (its options) and what it returns."""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# other questions an answer-only group tries (`--unquoted swap`) before it falls back to whole
# episodes: one unquoted question in a few dozen would otherwise cost a whole-episode group
ANSWER_ONLY_SWAPS = 3


@dataclass
class RLTrainConfig:
    """Fields become `webgpt train rl` options (help from metadata)."""

    policy: Path = field(metadata={"help": "Hugging Face folder of the policy to start from"})
    reward_model: Path = field(metadata={"help": "reward model checkpoint folder"})
    questions: Path = field(metadata={"help": "questions JSONL (with gold answers)"})
    out: Path = field(metadata={"help": "registry folder; the checkpoint goes to OUT/VERSION"})
    version: str = field(default="rl-0001", metadata={"help": "checkpoint version name"})
    split: str = field(default="train", metadata={"help": "train on questions of this split"})
    steps: int = field(default=20, metadata={"help": "optimizer steps (one per rollout batch)"})
    questions_per_step: int = field(default=2, metadata={"help": "questions in a rollout batch"})
    episodes_per_question: int = field(
        default=4, metadata={"help": "episodes a question (a group; at least 2)"}
    )
    learning_rate: float = field(default=1e-5, metadata={"help": "AdamW learning rate"})
    beta: float = field(default=0.05, metadata={"help": "KL penalty coefficient (> 0)"})
    kl_budget: float = field(
        default=0.5, metadata={"help": "stop once the mean per-token KL passes this"}
    )
    max_minutes: float | None = field(
        default=None,
        metadata={"help": "stop after this many minutes of training (the checkpoint is kept)"},
    )
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature"})
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
    no_answer_reward: float = field(
        default=-2.0, metadata={"help": "reward of an episode that ends without an answer"}
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
    seed: int = field(default=0, metadata={"help": "sampling and question-order seed"})


@dataclass
class RLResult:
    checkpoint: Path
    manifest_metrics: dict[str, Any]
    log_history: list[dict[str, float]]
    parameters_changed: bool
