"""An in-process transformers policy, for tests and trainer rollouts.

It takes the same prompts and Sampling as the vLLM client, regex constraints included:
a Sampling's regex is compiled with xgrammar, the engine vLLM's structured outputs use,
and masks each sampled token, so trainer rollouts decode under the grammar the service
decodes under (`guided=False` samples without it, like an unguided policy).
"""

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from webgpt.agent.policy import Completion, Completions, Sampling, StreamChunk, Usage


def truncate_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Text up to the earliest stop string (excluded); True when one was found."""
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def sampled_tokens(tokenizer: Any, row: list[int], stop: Sequence[str]) -> tuple[list[int], bool]:
    """The tokens one row of a batched `generate` sampled, and whether it stopped (at the
    end-of-sequence token, kept, or at a stop string, its tokens kept): `generate` runs
    until the batch's longest row ends, so a row that stopped sooner is followed by
    padding, which may be the end-of-sequence token itself."""
    eos = tokenizer.eos_token_id
    ended = eos in row
    ids = row[: row.index(eos) + 1] if ended else row
    if not truncate_at_stop(tokenizer.decode(ids, skip_special_tokens=True), stop)[1]:
        while not ended and ids and ids[-1] == tokenizer.pad_token_id:  # another criterion
            ids = ids[:-1]
        return ids, ended
    # the shortest prefix whose text holds a stop string: the token that completed it is
    # where generation stopped for this row (the text only grows with the prefix)
    low, high = 1, len(ids)
    while low < high:
        middle = (low + high) // 2
        if truncate_at_stop(tokenizer.decode(ids[:middle], skip_special_tokens=True), stop)[1]:
            high = middle
        else:
            low = middle + 1
    return ids[:low], True


@dataclass
class _Call:
    prompt: str
    future: "asyncio.Future[Completions]"


@dataclass
class TransformersPolicy:
    """Samples from a causal LM held in this process (a model and its tokenizer).

    Calls made at the same time (the episodes of a rollout batch) are generated together:
    the first waits `batch_window_s` for others with the same Sampling, then up to
    `max_batch` prompts go through one left-padded `generate`. One sequence at a time
    leaves a GPU idle (docs/benchmarks.md, RL rollouts), so
    rollout throughput comes from batching. A tokenizer without a pad token pads with EOS.
    """

    model: Any  # transformers PreTrainedModel
    tokenizer: Any  # transformers PreTrainedTokenizerBase
    name: str = "in-process"
    max_batch: int = 32
    batch_window_s: float = 0.005
    guided: bool = True  # apply a Sampling's regex (xgrammar), as vLLM's structured outputs do
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _waiting: dict[Sampling, list[_Call]] = field(default_factory=dict, init=False, repr=False)
    _generating: "asyncio.Task[None] | None" = field(default=None, init=False, repr=False)
    _grammars: Any = field(default=None, init=False, repr=False)  # xgrammar.GrammarCompiler

    def __post_init__(self) -> None:
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token

    @classmethod
    def from_pretrained(cls, path: str, name: str | None = None) -> "TransformersPolicy":
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path)
        return cls(model.eval(), tokenizer, name or str(path))  # type: ignore[no-untyped-call]

    async def complete(self, prompt: str, sampling: Sampling) -> Completions:
        loop = asyncio.get_running_loop()
        call = _Call(prompt, loop.create_future())
        self._waiting.setdefault(sampling, []).append(call)
        if self._generating is None or self._generating.done():
            self._generating = loop.create_task(self._generate_waiting())
        return await call.future

    async def stream(self, prompt: str, sampling: Sampling) -> AsyncIterator[StreamChunk]:
        result = await self.complete(prompt, sampling)
        choice = result.choices[0]
        yield StreamChunk(choice.text, result.usage, choice.finish_reason)

    async def _generate_waiting(self) -> None:
        """Batch after batch until no call waits; every call's future gets its result, the
        batch's error, or is cancelled with this task."""
        while self._waiting:
            await asyncio.sleep(self.batch_window_s)  # concurrent episodes add their calls
            sampling, calls = next(iter(self._waiting.items()))
            batch = [c for c in calls[: self.max_batch] if not c.future.done()]
            if calls[self.max_batch :]:
                self._waiting[sampling] = calls[self.max_batch :]
            else:
                del self._waiting[sampling]
            if not batch:
                continue
            try:
                results = await asyncio.to_thread(
                    self._generate, [c.prompt for c in batch], sampling
                )
            except Exception as error:
                for call in batch:
                    if not call.future.done():
                        call.future.set_exception(error)
                continue
            except BaseException:
                for call in [*batch, *(c for w in self._waiting.values() for c in w)]:
                    call.future.cancel()
                self._waiting.clear()
                raise
            for call, result in zip(batch, results, strict=True):
                if not call.future.done():
                    call.future.set_result(result)

    def _generate(self, prompts: list[str], sampling: Sampling) -> list[Completions]:
        import torch

        inputs = self.tokenizer(prompts, return_tensors="pt", padding=True, padding_side="left").to(
            self.model.device
        )
        width = inputs["input_ids"].shape[1]
        sample = sampling.temperature > 0
        with self._lock, torch.no_grad():  # one generation at a time: the model is shared
            guide = self._logits_processors(sampling)
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
                pad_token_id=self.tokenizer.pad_token_id,
                logits_processor=guide,
            )
        # output: (len(prompts) * n, width + new) token ids, each prompt's n rows together
        rows = output[:, width:].tolist()
        prompts_ids = [
            [token for token, real in zip(ids, mask, strict=True) if real]
            for ids, mask in zip(
                inputs["input_ids"].tolist(), inputs["attention_mask"].tolist(), strict=True
            )
        ]
        return [
            self._completions(rows[i * sampling.n : (i + 1) * sampling.n], prompt_ids, sampling)
            for i, prompt_ids in enumerate(prompts_ids)
        ]

    def _logits_processors(self, sampling: Sampling) -> list[Any] | None:
        """The token masks of the Sampling's regex for one `generate`; None without one.
        Compiled grammars are cached by the compiler, keyed by the regex."""
        if sampling.regex is None or not self.guided:
            return None
        import xgrammar

        if self._grammars is None:
            info = xgrammar.TokenizerInfo.from_huggingface(
                self.tokenizer, vocab_size=self.model.config.vocab_size
            )
            self._grammars = xgrammar.GrammarCompiler(info)
        return [_RegexMask(self._grammars.compile_regex(sampling.regex))]

    def _completions(
        self, rows: list[list[int]], prompt_ids: list[int], sampling: Sampling
    ) -> Completions:
        choices = []
        completion_tokens = 0
        for row in rows:
            ids, ended = sampled_tokens(self.tokenizer, row, sampling.stop)
            completion_tokens += len(ids)
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            text, _ = truncate_at_stop(text, sampling.stop)
            choices.append(
                Completion(
                    text,
                    "stop" if ended else "length",
                    token_ids=tuple(ids) if sampling.token_ids else None,
                )
            )
        return Completions(
            choices,
            Usage(len(prompt_ids), completion_tokens),
            prompt_token_ids=tuple(prompt_ids) if sampling.token_ids else None,
        )


class _RegexMask:
    """A `generate` logits processor that masks each row's next token to what its regex
    allows (one xgrammar matcher a row, made on the first call: one processor a call).

    A row that has ended (at a stop string or the end-of-sequence token) goes on receiving
    padding while the others generate; its matcher refuses that token, and the row is left
    unmasked from then on."""

    def __init__(self, grammar: Any) -> None:
        self.grammar = grammar
        self.matchers: list[Any] = []
        self.ended: list[bool] = []
        self.bitmask: Any = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import xgrammar

        # input_ids: (rows, length) so far; scores: (rows, vocab) for the next token
        if not self.matchers:
            rows = input_ids.shape[0]
            self.matchers = [xgrammar.GrammarMatcher(self.grammar) for _ in range(rows)]
            self.ended = [False] * rows
            self.bitmask = xgrammar.allocate_token_bitmask(
                rows, self.grammar.tokenizer_info.vocab_size
            )
        else:
            for row, matcher in enumerate(self.matchers):
                if not self.ended[row] and not matcher.accept_token(int(input_ids[row, -1])):
                    self.ended[row] = True
        for row, matcher in enumerate(self.matchers):
            if self.ended[row] or matcher.is_terminated():
                self.bitmask[row].fill_(-1)  # every bit set: nothing masked
            else:
                matcher.fill_next_token_bitmask(self.bitmask, row)
        xgrammar.apply_token_bitmask_inplace(scores, self.bitmask.to(scores.device))
        return scores
