"""The Policy protocol: what the agent needs from a language model."""

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Sampling:
    n: int = 1
    temperature: float = 0.8  # WebGPT's sampling temperature
    max_tokens: int = 64
    stop: tuple[str, ...] = ()
    regex: str | None = None  # constrain the output (guided decoding); None: free text


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str  # "stop", "length", ...


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True)
class StreamChunk:
    text: str
    usage: Usage | None = None  # on the last chunk, when the server reports it


@dataclass(frozen=True)
class Completions:
    choices: Sequence[Completion]
    usage: Usage


class Policy(Protocol):
    """A language model that completes prompts."""

    @property
    def name(self) -> str:
        """The model name answers report."""
        ...

    async def complete(self, prompt: str, sampling: Sampling) -> Completions: ...

    def stream(self, prompt: str, sampling: Sampling) -> AsyncIterator[StreamChunk]:
        """Text deltas of one sample (sampling.n must be 1)."""
        ...
