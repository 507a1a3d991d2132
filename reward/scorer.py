"""Scoring answers with a trained reward model in this process: the agent's `Scorer` for
best-of-n. (reward.remote scores the same checkpoint on a vLLM server instead.)

`RewardScorer` satisfies agent.answer.Scorer structurally (reward/ never imports agent/):
it scores exactly what the policy produced (answer-phase prompt + answer), n at a time in
one padded forward pass, and subtracts the checkpoint's offset so a reference set scores 0.
"""

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path

import torch

from reward.checkpoints import load_reward_manifest
from reward.model import RewardModel, tokenize
from reward.protocol import ScoredText, scored_text


class RewardScorer:
    """Loads a reward checkpoint once; `score` runs batched forward passes in a thread."""

    def __init__(
        self,
        folder: Path,
        max_length: int = 1024,
        batch_size: int = 16,
        device: str | None = None,  # default: the first GPU if there is one, else the CPU
    ) -> None:
        from transformers import AutoTokenizer

        manifest = load_reward_manifest(folder, verify=True)
        self.version = manifest.version
        self.offset = float(manifest.metrics.get("offset", 0.0))
        self.max_length = max_length
        self.batch_size = batch_size
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model = RewardModel.load(folder).eval().to(self.device)
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.version

    async def score(self, answers: Sequence[ScoredText]) -> list[float]:
        texts = [scored_text(a) for a in answers]
        return await asyncio.to_thread(self.score_texts, texts)

    async def aclose(self) -> None:
        """Nothing to release: the model's memory goes with the scorer."""

    def score_texts(self, texts: list[str]) -> list[float]:
        """Normalised rewards of texts (answer-phase prompt + answer each)."""
        scores: list[float] = []
        with self._lock, torch.no_grad():
            for start in range(0, len(texts), self.batch_size):
                batch = tokenize(
                    self.tokenizer, texts[start : start + self.batch_size], self.max_length
                )
                on_device = {k: v.to(self.device) for k, v in batch.items()}
                scores.extend((self.model(**on_device) - self.offset).float().cpu().tolist())
        return scores
