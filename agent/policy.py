"""The Policy protocol: what the agent needs from a language model."""

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Offered:
    """The commands the browser would take now (agent.grammar.offered_commands): what a
    policy whose tool calls the server can constrain narrows its tools to (a chat
    policy's); a completion policy reads the grammar's regex instead."""

    link_ids: tuple[int, ...] = ()  # links of the page in view
    quotes: tuple[str, ...] = ()  # its sentences in view, not quoted yet
    page: bool = False  # a page with text in view: Find and Scroll move in it
    back: bool = False  # a page to go back to
    finish: bool = False  # a quote to answer from


@dataclass(frozen=True)
class Sampling:
    n: int = 1
    temperature: float = 0.8  # WebGPT's sampling temperature
    max_tokens: int = 64
    stop: tuple[str, ...] = ()
    regex: str | None = None  # constrain the output (guided decoding); None: free text
    offered: Offered | None = None  # unguided: a browsing step's possible commands
    # Also return the tokens sampled (and their log-probs where the server gives them):
    # what RL trains on. Off when serving: the ids are of no use to an answer.
    token_ids: bool = False


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str  # "stop", "length", ...
    # With Sampling.token_ids: the tokens the model sampled, in order, as the engine
    # produced them: the stop string's tokens or the end-of-sequence token included (the
    # text leaves both out). Encoding the text again can give other ids (BPE merges
    # across what were two sampled tokens), which RL must never train on.
    token_ids: tuple[int, ...] | None = None
    logprobs: tuple[float, ...] | None = None  # one per token id, when the server gives them


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
    finish_reason: str | None = None  # on the chunk that ends it: "stop", "length", ...


@dataclass(frozen=True)
class Completions:
    choices: Sequence[Completion]
    usage: Usage
    # With Sampling.token_ids: the prompt as the engine encoded it.
    prompt_token_ids: tuple[int, ...] | None = None


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


@runtime_checkable
class RewritesFollowUps(Protocol):
    """A policy that can make a follow-up question standalone from the conversation (a
    chat model can; the trained completion-format policy cannot, and the rule of
    agent.followups does it for that one)."""

    async def rewrite_follow_up(self, question: str, history: Sequence[tuple[str, str]]) -> str:
        """The question as it reads alone, from history's (role, content) messages."""
        ...
