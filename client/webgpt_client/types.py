"""Typed results and stream events. Unknown fields are kept, so a newer service does not
break an older SDK; unknown event types arrive as `Event`."""

from typing import Any, Literal, TypedDict

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


class SourceQuote(_Model):
    n: int  # the [n] the answer cites this quote by
    extract: str


class Source(_Model):
    """One page the answer quotes, with every quote taken from it."""

    title: str
    url: str
    domain: str
    quotes: list[SourceQuote]


class Candidate(_Model):
    episode: int
    answer: str | None
    declined: bool = False  # the answer says the pages found do not answer; it cites nothing
    reward: float | None
    references: list[Reference]
    end_reason: str | None
    invalid_actions: int = 0  # commands the browser refused: the policy wrote outside its grammar
    error: str | None = None


class Usage(_Model):
    prompt_tokens: int
    completion_tokens: int
    actions: int
    pages_fetched: int
    page_cache_hits: int = 0


class Message(TypedDict):
    """A message of a conversation, as `history` takes it (OpenAI's shape)."""

    role: Literal["user", "assistant"]
    content: str


class Answer(_Model):
    id: str
    question: str
    # What was browsed: the question, or a follow-up made standalone from the history
    # ("When did he die?" -> "When did William Shakespeare die?"); None: nothing browsed.
    question_asked: str | None = None
    answer: str | None
    declined: bool = False  # the answer says the pages found do not answer; it cites nothing
    references: list[Reference]  # one per quote: [n] cites references[n - 1]
    sources: list[Source] = []  # the same quotes, listed under the page each came from
    candidates: list[Candidate]
    best: int | None
    usage: Usage
    versions: dict[str, Any]
    timings: dict[str, Any]
    trace: list[Any] | None = None


class Feedback(_Model):
    """The service's receipt for stored feedback or a demonstration: its id and kind."""

    id: int
    kind: str


class Health(_Model):
    """GET /healthz, the liveness probe: the service process answers."""

    status: str  # "ok"

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class ReadyCheck(_Model):
    """One dependency's state (policy, reward, database), in words fit for an
    unauthenticated probe: no addresses."""

    ok: bool
    detail: str | None = None
    spooled: int | None = None  # the database: answer records waiting for it


class Readiness(_Model):
    """GET /readyz, the readiness probe, from the service's last background check: "ready"
    when the policy (and the reward model, when configured) answer; the database is
    reported but not needed (answers are spooled while it is down)."""

    status: str  # "ready" or "not ready"; a str, so a newer service's word does not break
    checks: dict[str, ReadyCheck]

    @property
    def ok(self) -> bool:
        return self.status == "ready"


class CollectedQuote(_Model):
    """A quote collected while browsing: what an answer may cite as [n], n counting from 1."""

    title: str
    domain: str
    url: str
    extract: str


class BrowserEvent(_Model):
    """What one browsing command did; `type` tells which (search, page, scroll, find,
    quote, end, invalid_action), the other fields are those of that type (docs/service.md,
    "Stream events")."""

    type: str


class SessionState(_Model):
    """A demonstration session as the person sees it: `observation` is exactly the text
    the policy would be shown; the other fields are its parts, for drawing a page."""

    id: str
    question: str
    observation: str
    title: str
    url: str
    first_line: int
    last_line: int
    total_lines: int
    lines: list[str]  # the lines in view, link markers 【n†text†domain】 included
    quotes: list[CollectedQuote]
    past_actions: list[str]
    actions_left: int
    can_go_back: bool
    done: bool  # browsing has ended: answer (or abandon) next
    end_reason: str | None  # answer, nonsense, controversial, action_limit, quote_budget
    event: BrowserEvent | None = None  # what the last command did


class Event(_Model):
    """Any trace event; `type` tells which (episode_start, action, answer_delta, candidate,
    error, final). Typed subclasses below cover the ones most programs read."""

    type: str


class FollowUpEvent(Event):
    """The question was a follow-up, browsed made standalone from the conversation."""

    type: Literal["follow_up"]
    question: str
    question_asked: str
    replaced: list[tuple[str, str]]  # (pronoun, what it was taken to mean)
    by: str  # what made it standalone: "rule"


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
    FollowUpEvent
    | ActionEvent
    | AnswerDeltaEvent
    | CandidateEvent
    | EpisodeErrorEvent
    | FinalEvent
    | ErrorEvent
    | Event
)
_TYPED: dict[str, type[Event]] = {
    "follow_up": FollowUpEvent,
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
