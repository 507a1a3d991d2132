"""Training configurations: dataclasses whose fields become command-line options
(`webgpt train rm --help`; `--config run.yaml` gives them from a file, infra.trainer_options)."""

from dataclasses import dataclass, field
from pathlib import Path

from webgpt.infra.trainer_options import Repeatable


@dataclass
class RewardTrainConfig:
    """Fields become `webgpt train rm` options (help from metadata)."""

    comparisons: list[Path] = field(
        metadata={"help": "comparison files (JSONL), repeatable", "action": Repeatable}
    )
    backbone: Path = field(metadata={"help": "Hugging Face folder of the starting model"})
    out: Path = field(metadata={"help": "registry folder; the checkpoint goes to OUT/VERSION"})
    version: str = field(default="rm-0001", metadata={"help": "checkpoint version name"})
    epochs: int = field(default=3, metadata={"help": "passes over the training questions"})
    learning_rate: float = field(default=1e-5, metadata={"help": "AdamW learning rate"})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay"})
    questions_per_batch: int = field(default=8, metadata={"help": "questions per step"})
    max_length: int = field(default=1024, metadata={"help": "tokens per scored text"})
    ema_decay: float = field(default=0.99, metadata={"help": "EMA decay per step"})
    validation_fraction: float = field(default=0.1, metadata={"help": "questions held out"})
    patience: int = field(default=2, metadata={"help": "epochs without progress before stop"})
    lora_rank: int = field(default=0, metadata={"help": "LoRA rank; 0 = full fine-tuning"})
    adapter_out: Path | None = field(
        default=None,
        metadata={
            "help": "with --lora-rank: also publish the LoRA adapter and the head alone "
            "(megabytes, what a repository ships) as ADAPTER_OUT/VERSION; "
            "`webgpt model prepare` merges a shipped one onto its backbone"
        },
    )
    init_adapter: Path | None = field(
        default=None,
        metadata={
            "help": "with --lora-rank: continue this adapter (a folder --adapter-out wrote, "
            "its LoRA and head, on --backbone) rather than start a new one; the result is "
            "again one adapter on --backbone, shipped as the first was"
        },
    )
    seed: int = field(default=0, metadata={"help": "shuffling and split seed"})
    held_out: Path | None = field(
        default=None,
        metadata={
            "help": "comparisons to measure accuracy on after training (of questions never "
            "trained on, e.g. `comparisons generate --split dev`); reported and kept in the "
            "manifest"
        },
    )

    def __post_init__(self) -> None:
        # a --config file gives strings (and a lone string for a list)
        given = self.comparisons
        files = [given] if isinstance(given, str | Path) else given
        self.comparisons = [Path(p).expanduser() for p in files]
        self.backbone, self.out = Path(self.backbone).expanduser(), Path(self.out).expanduser()
        if self.held_out is not None:
            self.held_out = Path(self.held_out).expanduser()
        if self.adapter_out is not None:
            if self.lora_rank < 1:
                raise ValueError("--adapter-out needs --lora-rank: full fine-tuning has no adapter")
            self.adapter_out = Path(self.adapter_out).expanduser()
        if self.init_adapter is not None:
            if self.lora_rank < 1:
                raise ValueError("--init-adapter needs --lora-rank: it continues a LoRA adapter")
            self.init_adapter = Path(self.init_adapter).expanduser()
