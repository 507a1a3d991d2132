"""An in-process transformers policy, for tests and trainer rollouts.

It takes the same prompts and Sampling as the vLLM client. Regex constraints are not
applied (transformers has no regex-guided sampling built in): commands it writes go
through the browser's parser like any unguided policy's.
"""

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.policy import Completion, Completions, Sampling, StreamChunk, Usage


def truncate_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Text up to the earliest stop string (excluded); True when one was found."""
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


@dataclass
class TransformersPolicy:
    """Samples from a causal LM held in this process (a model and its tokenizer)."""

    model: Any  # transformers PreTrainedModel
    tokenizer: Any  # transformers PreTrainedTokenizerBase
    name: str = "in-process"
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @classmethod
    def from_pretrained(cls, path: str, name: str | None = None) -> "TransformersPolicy":
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path)
        return cls(model.eval(), tokenizer, name or str(path))  # type: ignore[no-untyped-call]

    async def complete(self, prompt: str, sampling: Sampling) -> Completions:
        return await asyncio.to_thread(self._generate, prompt, sampling)

    async def stream(self, prompt: str, sampling: Sampling) -> AsyncIterator[StreamChunk]:
        result = await self.complete(prompt, sampling)
        yield StreamChunk(result.choices[0].text, result.usage)

    def _generate(self, prompt: str, sampling: Sampling) -> Completions:
        import torch

        inputs = self.tokenizer(prompt, return_tensors="pt").to(self.model.device)
        prompt_length = inputs["input_ids"].shape[1]
        sample = sampling.temperature > 0
        with self._lock, torch.no_grad():  # one generation at a time: the model is shared
            output = self.model.generate(
                **inputs,
                do_sample=sample,
                temperature=sampling.temperature if sample else None,
                top_p=None,
                top_k=None,
                max_new_tokens=sampling.max_tokens,
                num_return_sequences=sampling.n,
                # stop as the serving engine does, rather than always writing max_tokens
                stop_strings=list(sampling.stop) or None,
                tokenizer=self.tokenizer,
                pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
            )
        # output: (n, prompt_length + new) token ids
        new_tokens = output[:, prompt_length:]
        choices = []
        completion_tokens = 0
        for row in new_tokens:
            completion_tokens += int(row.shape[0])
            text = self.tokenizer.decode(row, skip_special_tokens=True)
            text, stopped = truncate_at_stop(text, sampling.stop)
            ended = stopped or (self.tokenizer.eos_token_id in row.tolist())
            choices.append(Completion(text, "stop" if ended else "length"))
        return Completions(choices, Usage(int(prompt_length), completion_tokens))
