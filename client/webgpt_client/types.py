"""Typed results and stream events. Unknown fields are kept, so a newer service does not
break an older SDK; unknown event types arrive as `Event`."""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class Reference(_Model):
    n: int
    title: str
    url: str
    domain: str
    extract: str


class Candidate(_Model):
    episode: int
    answer: str | None
    reward: float | None
    references: list[Reference]
    end_reason: str | None
    error: str | None = None


class Usage(_Model):
    prompt_tokens: int
    completion_tokens: int
    actions: int
    pages_fetched: int
    page_cache_hits: int = 0


class Answer(_Model):
    id: str
    question: str
    answer: str | None
    references: list[Reference]
    candidates: list[Candidate]
    best: int | None
    usage: Usage
    versions: dict[str, Any]
    timings: dict[str, Any]
    trace: list[Any] | None = None


class Feedback(_Model):
    """The service's receipt for recorded feedback."""

    id: int
    kind: str


class Event(_Model):
    """Any trace event; `type` tells which (episode_start, action, answer_delta, candidate,
    error, final). Typed subclasses below cover the ones most programs read."""

    type: str


class ActionEvent(Event):
    type: Literal["action"]
    episode: int
    command: str
    event: dict[str, Any]
    actions_left: int


class AnswerDeltaEvent(Event):
    type: Literal["answer_delta"]
    episode: int
    text: str


class CandidateEvent(Event):
    type: Literal["candidate"]
    episode: int
    answer: str | None
    reward: float | None


class FinalEvent(Event):
    type: Literal["final"]
    result: Answer


class ErrorEvent(Event):
    type: Literal["error"]
    message: str
    error_type: str | None = None


AnyEvent = ActionEvent | AnswerDeltaEvent | CandidateEvent | FinalEvent | ErrorEvent | Event
_TYPED: dict[str, type[Event]] = {
    "action": ActionEvent,
    "answer_delta": AnswerDeltaEvent,
    "candidate": CandidateEvent,
    "final": FinalEvent,
    "error": ErrorEvent,
}


def parse_event(data: dict[str, Any]) -> AnyEvent:
    kind = _TYPED.get(str(data.get("type")), Event)
    return kind.model_validate(data)
