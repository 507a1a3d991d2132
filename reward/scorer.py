"""Scoring answers with a trained reward model in this process: the agent's `Scorer` for
best-of-n. (reward.remote scores the same checkpoint on a vLLM server instead.)

`RewardScorer` satisfies agent.answer.Scorer structurally (reward/ never imports agent/):
it scores exactly what the policy produced (answer-phase prompt + answer), n at a time in
one padded forward pass, and subtracts the checkpoint's offset so a reference set scores 0.
"""

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from webgpt.reward.data import ScoredText, answer_text
from webgpt.reward.manifest import load_reward_manifest
from webgpt.reward.model import RewardModel, token_ids


def scoring_device(device: str | None) -> torch.device:
    """The device named, else the first GPU if there is one, else the CPU."""
    return torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))


class RewardScorer:
    """Loads a reward checkpoint once; `score` runs batched forward passes in a thread."""

    def __init__(
        self,
        folder: Path,
        max_length: int = 1024,
        batch_size: int = 16,
        device: str | None = None,  # default: the first GPU if there is one, else the CPU
        dtype: torch.dtype = torch.float32,  # what the weights compute in
    ) -> None:
        from transformers import AutoTokenizer

        manifest = load_reward_manifest(folder, verify=True)
        self.version = manifest.version
        self.offset = float(manifest.metrics.get("offset", 0.0))
        self.max_length = max_length
        self.batch_size = batch_size
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.device = scoring_device(device)
        self.model = RewardModel.load(folder, dtype).eval().to(self.device, dtype)
        # Its own single thread, not the default pool that DNS lookups, offline search and
        # the feedback store share: a long forward pass never queues them, and one thread
        # runs one batch at a time, so no lock is needed.
        self._executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"reward-{self.version}"
        )

    @property
    def name(self) -> str:
        return self.version

    async def score(self, answers: Sequence[ScoredText]) -> list[float]:
        return await self.score_in_thread([answer_text(a) for a in answers])

    async def score_in_thread(self, texts: list[str]) -> list[float]:
        """score_texts on the scorer's own thread."""
        return await asyncio.get_running_loop().run_in_executor(
            self._executor, self.score_texts, texts
        )

    async def aclose(self) -> None:
        """Let a batch in progress finish, then end the thread; the memory goes with it."""
        await asyncio.to_thread(self._executor.shutdown, wait=True)

    def score_texts(self, texts: list[str]) -> list[float]:
        """Normalised rewards of texts (answer-phase prompt + answer each)."""
        if not texts:
            return []
        sequences = token_ids(self.tokenizer, texts, self.max_length)
        with torch.no_grad():
            rewards = self.model.score_sequences(sequences, self.batch_size)
        return (rewards - self.offset).tolist()
