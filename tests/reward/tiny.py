"""A tiny causal LM (and its word-level tokenizer) that tests build and train themselves."""

import json
import random
from pathlib import Path

COLORS = ["blue", "green", "red", "yellow", "purple", "orange"]
FILLER = [
    "the",
    "sky",
    "is",
    "in",
    "story",
    "what",
    "color",
    "answer",
    "says",
    "very",
    "today",
    "and",
    "so",
    "it",
    "looks",
    "[1]",
    "■",
    "(example.org)",
    "Sky",
    "notes",
]


def build_tiny_backbone(folder: Path) -> Path:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = ["<pad>", "<eos>", "<unk>", *COLORS, *FILLER, *[str(i) for i in range(200)]]
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=1,  # head size 32: the smallest vLLM's CPU attention supports
        num_key_value_heads=1,
        max_position_embeddings=256,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=1,
        tie_word_embeddings=False,
    )
    # Seeded: the thresholds the training tests assert must not depend on which tests ran
    # first and drew from the global generator.
    with torch.random.fork_rng():
        torch.manual_seed(0)
        LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def train_tiny_reward_model(folder: Path, comparisons: Path, version: str) -> Path:
    """A reward model on a tiny backbone built in folder, trained on comparisons with a
    known preference; its checkpoint folder."""
    from webgpt.reward.config import RewardTrainConfig  # torch: only for the tests that train
    from webgpt.reward.train import train_reward_model

    config = RewardTrainConfig(
        comparisons=[comparisons],
        backbone=build_tiny_backbone(folder / "backbone"),
        out=folder / "registry",
        version=version,
        epochs=4,
        learning_rate=3e-3,
        ema_decay=0.9,
        validation_fraction=0.2,
        max_length=96,
    )
    return train_reward_model(config, log=lambda _: None).checkpoint


def answer(story: int, color: str) -> str:
    return f"in story {story} the sky is {color} [1]"


def write_comparisons(path: Path, stories: int, seed: int = 0, first: int = 0) -> None:
    """Known preference: an answer saying the sky is blue beats any other colour; two
    non-blue answers tie. Half the rows in our format, half in WebGPT's. One question per
    story, stories numbered from `first`."""
    rng = random.Random(seed)
    rows = []
    for story in range(first, first + stories):
        question = f"what color is the sky in story {story}"
        quote = {
            "title": "Sky notes",
            "domain": "example.org",
            "url": "https://example.org/",
            "extract": f"in story {story} the sky is blue",
        }
        others = rng.sample(COLORS[1:], 3)
        for other in others:
            good, bad = answer(story, "blue"), answer(story, other)
            if rng.random() < 0.5:
                rows.append(
                    {
                        "question": question,
                        "a": {"quotes": [quote], "answer": good},
                        "b": {"quotes": [quote], "answer": bad},
                        "preference": "a",
                    }
                )
            else:
                rows.append(
                    {
                        "question": {"full_text": question, "dataset": "synthetic"},
                        "quotes_0": {
                            "title": ["Sky notes (example.org)"],
                            "extract": [quote["extract"]],
                        },
                        "answer_0": bad,
                        "tokens_0": [],
                        "score_0": -1.0,
                        "quotes_1": {
                            "title": ["Sky notes (example.org)"],
                            "extract": [quote["extract"]],
                        },
                        "answer_1": good,
                        "tokens_1": [],
                        "score_1": 1.0,
                    }
                )
        rows.append(
            {
                "question": question,
                "a": {"quotes": [quote], "answer": answer(story, others[0])},
                "b": {"quotes": [quote], "answer": answer(story, others[1])},
                "preference": "tie",
            }
        )
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
