"""One episode as one packed training sequence, shared by the TRL path (trainer) and the
verl path (verl): see the package docstring."""

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Turn:
    """One policy call of an episode: the prompt it saw and what it wrote.

    `completion` is the text, with the stop string when it stopped (the text the BC
    examples train on; logs and tests read it). A sampled turn (learning.rl.rollouts
    records every one) also carries the token ids the engine sampled, which are what is
    trained: encoding the text again can merge or split tokens differently, and a turn
    that ended at the end-of-sequence token would train a stop string it never wrote."""

    prompt: str
    completion: str
    prompt_ids: tuple[int, ...] | None = None  # as the engine encoded the prompt
    completion_ids: tuple[int, ...] | None = None  # as sampled, stop or EOS token included
    completion_logprobs: tuple[float, ...] | None = None  # the engine's, one per id


@dataclass
class PackedEpisode:
    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]  # 1: the policy wrote the token; 0: a prompt (observation) token
    segment_lengths: list[int]  # prompt_ids, then each (completion, next prompt + …) run
    # the sampling engine's log-prob of each completion token, 0.0 on prompt tokens (as
    # verl's agent loops pad them); None unless every turn carries them
    logprobs: list[float] | None = None


def _prompt_ids(tokenizer: Any, turn: Turn) -> list[int]:
    """As the serving engine encodes a completions prompt (special tokens included)."""
    if turn.prompt_ids is not None:
        return list(turn.prompt_ids)
    ids: list[int] = tokenizer(turn.prompt)["input_ids"]
    return ids


def _completion_ids(tokenizer: Any, turn: Turn) -> list[int]:
    """The sampled ids; text written by hand (tests, demonstrations) as plain
    continuation tokens, exactly learning.bc.tokenize_example."""
    if turn.completion_ids is not None:
        return list(turn.completion_ids)
    ids: list[int] = tokenizer(turn.completion, add_special_tokens=False)["input_ids"]
    return ids


def pack_episode(tokenizer: Any, turns: Sequence[Turn]) -> PackedEpisode:
    """The turns as one sequence: the first prompt, then each completion and the next
    prompt; a sampled turn's own ids are used, never its text encoded again."""
    if not turns:
        raise ValueError("an episode with no policy call has nothing to train on")
    prompt_ids = _prompt_ids(tokenizer, turns[0])
    completion_ids: list[int] = []
    env_mask: list[int] = []
    segments = [len(prompt_ids)]
    with_logprobs = all(t.completion_logprobs is not None for t in turns)
    logprobs: list[float] = []
    for index, turn in enumerate(turns):
        if index > 0:
            ids = _prompt_ids(tokenizer, turn)
            completion_ids += ids
            env_mask += [0] * len(ids)
            logprobs += [0.0] * len(ids)
            segments.append(len(ids))
        ids = _completion_ids(tokenizer, turn)
        completion_ids += ids
        env_mask += [1] * len(ids)
        logprobs += list(turn.completion_logprobs or ())
        segments[-1] += len(ids)  # a completion continues its prompt's positions
    return PackedEpisode(
        prompt_ids, completion_ids, env_mask, segments, logprobs if with_logprobs else None
    )


def pack_within(
    tokenizer: Any, turns: Sequence[Turn], fits: Callable[[PackedEpisode], bool]
) -> tuple[PackedEpisode, int]:
    """The episode packed, less its last turns while it does not fit (the first turn is
    always kept), and how many turns were kept. A long episode's first turns still carry
    its reward: the group needs every episode, and the last turns go untrained."""
    kept = len(turns)
    packed = pack_episode(tokenizer, turns)
    while kept > 1 and not fits(packed):
        kept -= 1
        packed = pack_episode(tokenizer, turns[:kept])
    return packed, kept


class SegmentTable:
    """Where each packed episode's prompts start, found again from its token ids.

    TRL hands the model padded rows (prompt left-padded, completion right-padded); the
    trainer's forward hook asks this table for position ids that restart at every prompt.
    Pads get positions of their own segments, so no real token attends to them."""

    def __init__(self) -> None:
        self._segments: dict[bytes, list[int]] = {}

    def clear(self) -> None:
        self._segments.clear()

    def add(self, episode: PackedEpisode) -> None:
        self._segments[self._key(episode.prompt_ids + episode.completion_ids)] = (
            episode.segment_lengths
        )

    def position_ids(self, input_ids: Any, attention_mask: Any) -> Any:
        import torch

        rows = []
        for ids, mask in zip(input_ids.tolist(), attention_mask.tolist(), strict=True):
            real = [i for i, m in enumerate(mask) if m]
            first, last = (real[0], real[-1] + 1) if real else (len(ids), len(ids))
            segments = self._segments.get(self._key(ids[first:last]))
            if segments is None:
                raise RuntimeError("a row the rollouts did not produce reached the model")
            positions = list(range(first))  # left pads: a segment of their own
            for length in segments:
                positions += range(length)
            positions += range(len(ids) - last)  # right pads: another
            rows.append(positions)
        return torch.tensor(rows, device=input_ids.device)

    @staticmethod
    def _key(ids: Sequence[int]) -> bytes:
        return hashlib.sha256(json.dumps(list(ids)).encode()).digest()


def packed_positions_hook(segments: SegmentTable) -> Callable[..., Any]:
    """A forward pre-hook (with kwargs) that scores packed episodes: position ids that
    restart at every prompt, and no attention mask, from which transformers builds the
    block-diagonal causal mask of packed sequences."""

    def hook(_module: Any, args: tuple[Any, ...], inputs: dict[str, Any]) -> Any:
        inputs["position_ids"] = segments.position_ids(
            inputs["input_ids"], inputs["attention_mask"]
        )
        inputs["attention_mask"] = None
        inputs["use_cache"] = False  # with a cache, transformers does not look for packing
        return args, inputs

    return hook
