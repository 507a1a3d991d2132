"""The reward model: a causal-LM backbone without its unembedding, plus a scalar head.

The reward of a text is the head applied to the backbone's hidden state at the text's last
token. Rewards are Elo-like: r_a - r_b is the logit of P(a preferred over b).

A checkpoint folder holds the backbone (Hugging Face files), the tokenizer,
`reward_head.safetensors`, and the manifest (reward.checkpoints) whose metrics carry the
normalisation `offset` (subtracted so a reference set scores 0 on average).
"""

from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import nn

HEAD_FILE = "reward_head.safetensors"


class RewardModel(nn.Module):
    def __init__(self, backbone: Any) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(backbone.config.hidden_size, 1)
        # Start near zero so early rewards do not depend on the random head.
        nn.init.normal_(self.head.weight, std=1 / (backbone.config.hidden_size + 1) ** 0.5)
        nn.init.zeros_(self.head.bias)

    @classmethod
    def from_backbone(cls, path: Path | str) -> "RewardModel":
        """A new reward model on a pretrained (causal LM) backbone: its LM head is dropped."""
        from transformers import AutoModel

        return cls(AutoModel.from_pretrained(path, dtype=torch.float32))

    @classmethod
    def load(cls, folder: Path) -> "RewardModel":
        model = cls.from_backbone(folder)
        state = load_file(folder / HEAD_FILE)
        model.head.load_state_dict({"weight": state["weight"], "bias": state["bias"]})
        return model

    def save(self, folder: Path) -> None:
        backbone = self.backbone
        if hasattr(backbone, "merge_and_unload"):  # LoRA: save plain weights
            backbone = backbone.merge_and_unload()
        backbone.save_pretrained(folder)
        head = {k: v.detach().contiguous().cpu() for k, v in self.head.state_dict().items()}
        save_file(head, str(folder / HEAD_FILE))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Rewards of a right-padded batch: input_ids (batch, length) -> (batch,)."""
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        # hidden: (batch, length, hidden_size); the last real token of each row
        last = attention_mask.sum(dim=1) - 1
        final = hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
        rewards: torch.Tensor = self.head(final).squeeze(-1)
        return rewards


def tokenize(tokenizer: Any, texts: list[str], max_length: int) -> dict[str, torch.Tensor]:
    """Right-padded batch; long texts lose their beginning (the prompt), never the answer."""
    tokenizer.padding_side = "right"
    tokenizer.truncation_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    encoded = tokenizer(
        texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt"
    )
    return {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}


def pairwise_loss(rewards: torch.Tensor, pairs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean over pairs of -[y log σ(r_i - r_j) + (1 - y) log σ(r_j - r_i)].

    rewards: (texts,); pairs: (pairs, 2) indexes into rewards; labels: (pairs,) P(i preferred),
    0.5 for a tie (a soft label, as WebGPT treats ties).
    """
    margin = rewards[pairs[:, 0]] - rewards[pairs[:, 1]]
    return nn.functional.binary_cross_entropy_with_logits(margin, labels)
