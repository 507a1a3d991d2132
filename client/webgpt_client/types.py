"""Typed results and stream events. Unknown fields are kept, so a newer service does not
break an older SDK; unknown event types arrive as `Event`."""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

# WebGPT's 5-point comparison scale, A first; and a rater's short judgement of one answer.
Grade = Literal["a_much_better", "a_better", "equal", "b_better", "b_much_better"]
Rating = Literal["yes", "partly", "no"]
Ratings = dict[Literal["supported", "coherent", "useful"], Rating]


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
    declined: bool = False  # the answer says the pages found do not answer; it cites nothing
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
    declined: bool = False  # the answer says the pages found do not answer; it cites nothing
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


class EpisodeErrorEvent(Event):
    """One episode failed; the others go on and the stream continues."""

    type: Literal["episode_error"]
    episode: int
    message: str


class ErrorEvent(Event):
    """The request failed after the stream started: the stream's last event."""

    type: Literal["error"]
    message: str
    error_type: str


AnyEvent = (
    ActionEvent
    | AnswerDeltaEvent
    | CandidateEvent
    | EpisodeErrorEvent
    | FinalEvent
    | ErrorEvent
    | Event
)
_TYPED: dict[str, type[Event]] = {
    "action": ActionEvent,
    "answer_delta": AnswerDeltaEvent,
    "candidate": CandidateEvent,
    "episode_error": EpisodeErrorEvent,
    "final": FinalEvent,
    "error": ErrorEvent,
}


def parse_event(data: dict[str, Any]) -> AnyEvent:
    kind = _TYPED.get(str(data.get("type")), Event)
    return kind.model_validate(data)
