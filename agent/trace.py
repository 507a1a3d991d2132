"""Typed trace events of an answer, as they happen (the service streams them as SSE).

Browser step events (search, page, quote, ...) travel inside ActionEvent.
"""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from webgpt.browser.events import BrowserEvent


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)


class FollowUpEvent(_Event):
    """The question was a follow-up: its pronouns pointed into the conversation, and the
    episodes browse it made standalone (agent.followups). Comes before any episode."""

    type: Literal["follow_up"] = "follow_up"
    question: str  # as the user wrote it
    question_asked: str  # what the episodes browse
    replaced: list[tuple[str, str]]  # (pronoun, what it was taken to mean); by the rule
    by: Literal["rule", "policy"] = "rule"  # what made it standalone


class EpisodeStartEvent(_Event):
    type: Literal["episode_start"] = "episode_start"
    episode: int
    question: str


class ActionEvent(_Event):
    type: Literal["action"] = "action"
    episode: int
    command: str  # what the policy wrote (a Quote narrowed by page_quotes: the page's best)
    event: BrowserEvent
    actions_left: int
    # the parts of the grammar that narrowed what the policy could write at this step
    # (agent.grammar.BrowsingGrammar): question_search, ranked_quotes (a learned ranker),
    # named_find, force_finish; page_quotes, the ranker's best of the whole page taken
    # for the Quote the policy wrote (agent.episode.page_quote); and result_order, a
    # search's first results shown best page first (agent.result_order)
    narrowed: list[str] = []


class AnswerDeltaEvent(_Event):
    type: Literal["answer_delta"] = "answer_delta"
    episode: int
    text: str


class ShapedEvent(_Event):
    """A part other than the policy's own sampling changed this episode's answer: which
    (agent.episode.SHAPING_PARTS) and, where it helps, why."""

    type: Literal["shaped"] = "shaped"
    episode: int
    part: str
    detail: str = ""


class Reference(_Event):
    n: int
    title: str
    url: str
    domain: str
    extract: str


class CandidateEvent(_Event):
    """One episode's finished answer (reward filled in once the scorer ran)."""

    type: Literal["candidate"] = "candidate"
    episode: int
    answer: str | None
    declined: bool = False  # the answer says the pages found do not answer (agent.declines)
    references: list[Reference]
    end_reason: str | None
    reward: float | None = None
    error: str | None = None


class EpisodeErrorEvent(_Event):
    """One episode failed (its policy calls did); the others go on. Not the request's end,
    which is a `final` or `error` event of the stream (service.protocol)."""

    type: Literal["episode_error"] = "episode_error"
    episode: int
    message: str


TraceEvent = Annotated[
    FollowUpEvent
    | EpisodeStartEvent
    | ActionEvent
    | AnswerDeltaEvent
    | ShapedEvent
    | CandidateEvent
    | EpisodeErrorEvent,
    Field(discriminator="type"),
]
