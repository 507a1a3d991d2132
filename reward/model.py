"""The reward model: a causal-LM backbone without its unembedding, plus a scalar head.

The reward of a text is the head applied to the backbone's hidden state at the text's last
token. Rewards are Elo-like: r_a - r_b is the logit of P(a preferred over b).

A checkpoint folder is a Hugging Face `<Arch>ForSequenceClassification` model with one
label (the backbone under its usual prefix, the head as `score.weight`), the tokenizer, and
the manifest (infra.checkpoints) whose metrics carry the normalisation `offset`
(subtracted so a reference set scores 0 on average). That layout is what transformers and
vLLM's pooling runner load as they are, so the same folder is scored in the service's
process (reward.scorer) or on a vLLM server (reward.remote) with no conversion step.

A model trained with LoRA can also be saved as its adapter alone (`save_adapter`: PEFT's
adapter files plus the head in `score.safetensors`, megabytes where the classifier is
hundreds): what a repository ships, merged onto its backbone again by `from_adapter`.
"""

import copy
from pathlib import Path
from typing import Any

import torch
from torch import nn

from webgpt.infra.errors import CheckpointError

HEAD_FILE = "score.safetensors"  # the head of an adapter folder (`score.weight`)
# Below this many shared opening tokens a batch reads them itself: a cache copy costs more.
MIN_SHARED_TOKENS = 8


class RewardModel(nn.Module):
    def __init__(self, backbone: Any) -> None:
        super().__init__()
        self.backbone = backbone
        # No bias: the pairwise loss only sees reward differences, so a bias never learns,
        # and sequence-classification heads (HF's `score`, vLLM's) have none.
        self.head = nn.Linear(backbone.config.hidden_size, 1, bias=False)
        # Start near zero so early rewards do not depend on the random head.
        nn.init.normal_(self.head.weight, std=1 / (backbone.config.hidden_size + 1) ** 0.5)

    @classmethod
    def from_backbone(cls, path: Path | str) -> "RewardModel":
        """A new reward model on a pretrained (causal LM) backbone: its LM head is dropped."""
        from transformers import AutoModel

        return cls(AutoModel.from_pretrained(path, dtype=torch.float32))

    @classmethod
    def from_adapter(cls, backbone: Path, adapter: Path, trainable: bool = False) -> "RewardModel":
        """The model `save_adapter` saved: its LoRA adapter on backbone, and its head;
        trainable, to train further (the adapter's own rank and modules)."""
        from peft import PeftModel
        from safetensors.torch import load_file

        model = cls.from_backbone(backbone)
        model.backbone = PeftModel.from_pretrained(model.backbone, adapter, is_trainable=trainable)
        head = load_file(adapter / HEAD_FILE)
        model.head.weight.data.copy_(head["score.weight"].to(torch.float32))
        return model

    @classmethod
    def load(cls, folder: Path, dtype: torch.dtype = torch.float32) -> "RewardModel":
        from transformers import AutoModelForSequenceClassification

        classifier = AutoModelForSequenceClassification.from_pretrained(folder, dtype=dtype)
        if classifier.config.num_labels != 1 or not hasattr(classifier, "score"):
            raise CheckpointError(f"{folder} is not a one-label sequence classifier with `score`")
        model = cls(classifier.base_model)
        model.head.load_state_dict(classifier.score.state_dict())
        return model

    def save(self, folder: Path) -> None:
        """Save as `<Arch>ForSequenceClassification` with one label (see the module doc)."""
        import transformers
        from transformers.models.auto.modeling_auto import (
            MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES,
        )

        backbone = self.backbone
        if hasattr(backbone, "merge_and_unload"):  # LoRA: save plain weights
            backbone = backbone.merge_and_unload()
        config = copy.deepcopy(backbone.config)
        class_name = MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES.get(config.model_type)
        if class_name is None:
            raise CheckpointError(f"transformers has no classifier for {config.model_type}")
        config.num_labels = 1
        config.architectures = [class_name]
        with torch.device("meta"):  # a shell: its tensors are assigned, never allocated
            classifier = getattr(transformers, class_name)(config)
        if not hasattr(classifier, "score"):  # vLLM's pooling runner reads the head from here
            raise CheckpointError(f"{class_name} has no `score` head; vLLM could not serve it")
        prefix = classifier.base_model_prefix
        state = {f"{prefix}.{name}": value for name, value in backbone.state_dict().items()}
        state["score.weight"] = self.head.weight.detach()
        classifier.load_state_dict(state, strict=True, assign=True)
        classifier.save_pretrained(folder)

    def save_adapter(self, folder: Path, dtype: torch.dtype = torch.bfloat16) -> None:
        """Save the LoRA adapter and the head alone, in dtype (bf16: half the bytes, as the
        shipped policy adapter; its rounding moves rewards by about 1e-3)."""
        from safetensors.torch import save_file

        if not hasattr(self.backbone, "peft_config"):
            raise CheckpointError("only a LoRA reward model (--lora-rank) has an adapter to save")
        trained = self.backbone.state_dict()
        self.backbone.save_pretrained(
            folder,
            state_dict={
                name: value.to(dtype) for name, value in trained.items() if "lora_" in name
            },
        )
        save_file(
            {"score.weight": self.head.weight.detach().to(dtype).contiguous()}, folder / HEAD_FILE
        )

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Rewards of a right-padded batch: input_ids (batch, length) -> (batch,)."""
        # use_cache=False: one forward pass reads the whole text, so a KV cache is only work
        hidden = self.backbone(
            input_ids=input_ids, attention_mask=attention_mask, use_cache=False
        ).last_hidden_state
        # hidden: (batch, length, hidden_size); the last real token of each row
        last = attention_mask.sum(dim=1) - 1
        final = hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
        rewards: torch.Tensor = self.head(final).squeeze(-1)
        return rewards

    def score_sequences(self, sequences: list[list[int]], batch_size: int) -> torch.Tensor:
        """Rewards of token sequences (not padded), in their order: read shortest first in
        batches, so a batch pads little, and the tokens every sequence opens with (a quote
        ranking's question and page title, a decline judgment's answer prompt) read once,
        their keys and values reused by every batch. The same rewards as forward, to float
        rounding."""
        device = self.head.weight.device
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        shared = _shared_opening(sequences)
        cache = None
        if shared >= MIN_SHARED_TOKENS:
            opening = torch.tensor([sequences[0][:shared]], device=device)
            cache = self.backbone(input_ids=opening, use_cache=True).past_key_values
        rewards = torch.empty(len(sequences))
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            rests = [sequences[i][shared if cache is not None else 0 :] for i in rows]
            width = max(len(rest) for rest in rests)
            ids = torch.zeros((len(rows), width), dtype=torch.long, device=device)  # masked
            mask = torch.zeros((len(rows), width), dtype=torch.long, device=device)
            for row, rest in enumerate(rests):
                ids[row, : len(rest)] = torch.tensor(rest, device=device)
                mask[row, : len(rest)] = 1
            last = mask.sum(dim=1) - 1
            if cache is None:
                hidden = self.backbone(input_ids=ids, attention_mask=mask, use_cache=False)
            else:
                # the opening's keys and values, one copy a row (the forward pass extends them)
                past = copy.deepcopy(cache)
                past.batch_repeat_interleave(len(rows))
                opened = torch.ones((len(rows), shared), dtype=torch.long, device=device)
                hidden = self.backbone(
                    input_ids=ids,
                    attention_mask=torch.cat([opened, mask], dim=1),
                    position_ids=torch.arange(shared, shared + width, device=device).expand(
                        len(rows), -1
                    ),
                    past_key_values=past,
                    use_cache=True,
                )
            final = hidden.last_hidden_state[torch.arange(len(rows), device=device), last]
            rewards[rows] = self.head(final).squeeze(-1).float().cpu()
        return rewards


def _shared_opening(sequences: list[list[int]]) -> int:
    """How many tokens every sequence opens with, leaving each at least one of its own (its
    reward is read at its last token)."""
    if len(sequences) < 2:
        return 0
    shortest = min(len(s) for s in sequences)
    first = sequences[0]
    shared = 0
    while shared < shortest - 1 and all(s[shared] == first[shared] for s in sequences):
        shared += 1
    return shared


def merge_reward_adapter(backbone: Path, adapter: Path, out: Path) -> None:
    """Backbone + a saved reward adapter and head -> one sequence-classifier folder (with the
    backbone's tokenizer) that the scorers and vLLM's pooling runner load as it is."""
    from transformers import AutoTokenizer

    RewardModel.from_adapter(backbone, adapter).save(out)
    AutoTokenizer.from_pretrained(backbone).save_pretrained(out)


def token_ids(tokenizer: Any, texts: list[str], max_length: int) -> list[list[int]]:
    """Each text's tokens, unpadded; a long text loses its beginning (the prompt), never
    the answer."""
    tokenizer.truncation_side = "left"
    ids: list[list[int]] = tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]
    return ids


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
