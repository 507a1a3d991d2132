"""Wire models of the HTTP API (requests, responses, stream events, errors)."""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag
from pydantic_core import PydanticCustomError

from webgpt.agent.answer import AnswerResult
from webgpt.agent.episode import ANSWER_MAX_ACTIONS
from webgpt.agent.followups import Turn
from webgpt.agent.trace import Reference, TraceEvent
from webgpt.browser.events import BrowserEvent, CollectedQuote, EndReason


def _not_blank(value: object) -> object:
    """An empty and a blank text are the same fault, told the same way."""
    if isinstance(value, str) and not value.strip():
        raise PydanticCustomError("blank", "should not be empty or blank")
    return value


# Text a person typed that must say something: a question, a command.
Text = Annotated[str, BeforeValidator(_not_blank)]


# Earlier messages a request may carry, and their length (a longer one is cut, in a chat
# request, or refused); a follow-up is read against the last exchange.
MAX_HISTORY_TURNS = 50
MAX_TURN_CHARS = 20_000


class HistoryTurn(BaseModel):
    """A message of the conversation before the question: what the user asked or the
    assistant answered."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: str = Field(max_length=MAX_TURN_CHARS)


class AnswerRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: Text = Field(min_length=1)
    # The conversation before the question, oldest first: a follow-up ("When did he die?")
    # is browsed made standalone from it (agent.followups; the answer's question_asked).
    history: list[HistoryTurn] = Field(default_factory=list, max_length=MAX_HISTORY_TURNS)
    n: int = Field(1, ge=1)
    # None: agent.episode.answer_temperature(n), 0 for one episode and 0.8 for more.
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    max_actions: int = Field(ANSWER_MAX_ACTIONS, ge=1)
    engine: str | None = None
    stream: bool = False
    include_trace: bool = False
    # Seconds the answer may take, waiting for a slot included; None: the service's
    # answer_deadline_s. Past it, everything of the answer is cancelled: 504 (a stream: an
    # `error` event).
    deadline_s: float | None = Field(None, gt=0)

    def conversation(self) -> list[Turn]:
        """The history as the agent reads it (agent.followups)."""
        return [Turn(turn.role, turn.content) for turn in self.history]


class SourceQuote(BaseModel):
    n: int = Field(description="the [n] the answer cites this quote by")
    extract: str


class Source(BaseModel):
    """One page the answer quotes, with every quote taken from it."""

    title: str
    url: str
    domain: str
    quotes: list[SourceQuote]


def sources_of(references: list[Reference]) -> list[Source]:
    """The references grouped by page, in the order the answer first cites each page; every
    quote keeps its n, so each [n] of the answer still names its own text."""
    pages: dict[str, Source] = {}
    for reference in references:
        source = pages.setdefault(
            reference.url,
            Source(title=reference.title, url=reference.url, domain=reference.domain, quotes=[]),
        )
        source.quotes.append(SourceQuote(n=reference.n, extract=reference.extract))
    return list(pages.values())


class AnswerResponse(AnswerResult):
    """The answer as the service returns it: `references` one per quote ([n] -> the n-th),
    and `sources` the same quotes listed under the page each was taken from."""

    sources: list[Source] = Field(default_factory=list)
    trace: list[TraceEvent] | None = None

    @classmethod
    def of(cls, result: AnswerResult, trace: list[TraceEvent] | None = None) -> "AnswerResponse":
        return cls(**dict(result), sources=sources_of(result.references), trace=trace)


class ReadyCheck(BaseModel):
    """One dependency's state, as an unauthenticated probe may see it (no addresses)."""

    ok: bool
    detail: str | None = None
    spooled: int | None = None  # the database: answer records waiting for it


class Readiness(BaseModel):
    """GET /readyz: "ready" when the policy (and reward model, when configured) answer; the
    database is reported but not needed (answers are spooled while it is down)."""

    status: Literal["ready", "not ready"]
    checks: dict[str, ReadyCheck]


class ComparisonFeedback(BaseModel):
    """A person's judgement between two candidates of an answer."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["comparison"] = "comparison"
    answer_id: str = Field(min_length=1, max_length=100)
    better: int = Field(ge=0, description="index of the better candidate")
    worse: int = Field(ge=0, description="index of the worse candidate")
    tie: bool = Field(False, description="the two are equally good")
    note: str | None = Field(None, max_length=2000)


# WebGPT's 5-point comparison scale (paper 000, Appendix C) and the probability that A is
# the better answer each grade stands for: the soft label `webgpt train rm` reads
# (docs/reward.md, "Labels"). WebGPT itself trained on the collapsed labels 1, 0.5 and 0.
GRADE_LABELS: dict[str, float] = {
    "a_much_better": 1.0,
    "a_better": 0.75,
    "equal": 0.5,
    "b_better": 0.25,
    "b_much_better": 0.0,
}
Grade = Literal["a_much_better", "a_better", "equal", "b_better", "b_much_better"]
Rating = Literal["yes", "partly", "no"]


class AnswerRatings(BaseModel):
    """A rater's short judgement of one answer (each optional)."""

    model_config = ConfigDict(extra="forbid")

    supported: Rating | None = Field(
        default=None, description="its claims are supported by its quotes"
    )
    coherent: Rating | None = None
    useful: Rating | None = Field(default=None, description="it answers the question usefully")


class GradedComparisonFeedback(BaseModel):
    """Two candidates of an answer (A and B as shown) rated, and the overall preference on
    WebGPT's graded scale."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["graded"]
    answer_id: str = Field(min_length=1, max_length=100)
    a: int = Field(ge=0, description="index of the candidate shown as A")
    b: int = Field(ge=0, description="index of the candidate shown as B")
    grade: Grade
    ratings_a: AnswerRatings = Field(default_factory=AnswerRatings)
    ratings_b: AnswerRatings = Field(default_factory=AnswerRatings)
    note: str | None = Field(None, max_length=2000)


class DemonstrationFeedback(BaseModel):
    """A recorded browsing episode: the commands a person issued and the answer written."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["demonstration"]
    question: Text = Field(min_length=1, max_length=2000)
    commands: list[str] = Field(min_length=1, max_length=200)
    answer: str = Field(min_length=1, max_length=10_000)
    quotes: list[dict[str, str]] = Field(default_factory=list, max_length=50)


def _feedback_kind(value: object) -> str:
    """`kind` picks the model; a body without one is a comparison."""
    if isinstance(value, dict):
        return str(value.get("kind", "comparison"))
    return str(getattr(value, "kind", "comparison"))


Feedback = Annotated[
    Annotated[ComparisonFeedback, Tag("comparison")]
    | Annotated[GradedComparisonFeedback, Tag("graded")]
    | Annotated[DemonstrationFeedback, Tag("demonstration")],
    Discriminator(_feedback_kind),
]


class FeedbackReceipt(BaseModel):
    id: int
    kind: str


class SessionCreate(BaseModel):
    """A browser session for a person's demonstration: a typed question, or the next one
    of the operator's queue (settings.demo_questions)."""

    model_config = ConfigDict(extra="forbid")

    question: Text | None = Field(None, min_length=1, max_length=2000)
    from_queue: bool = False


class SessionStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: Text = Field(min_length=1, max_length=2000, description="a command of Table 1")


class SessionAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer: str | None = Field(
        None,
        min_length=1,
        max_length=10_000,
        description="citing quotes as [n]; none when browsing ended Nonsense or Controversial",
    )


class SessionState(BaseModel):
    """What the person sees: the observation exactly as the policy would, and its parts."""

    id: str
    question: str
    observation: str
    title: str
    url: str
    first_line: int
    last_line: int
    total_lines: int
    lines: list[str] = Field(description="the lines in view, link markers included")
    quotes: list[CollectedQuote]
    past_actions: list[str]
    actions_left: int
    can_go_back: bool
    done: bool
    end_reason: EndReason | None
    event: BrowserEvent | None = Field(None, description="what the last command did")


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):  # content parts: keep the text ones
            return " ".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return self.content or ""


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatRequest(BaseModel):
    """OpenAI chat completions (service.chat); fields we do not use (max_tokens, top_p, ...)
    are accepted."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int = Field(1, ge=1, description="choices, each its own browsing episode")
    best_of: int | None = Field(
        None, ge=1, description="episodes the reward model picks the n best of (extra body)"
    )
    temperature: float | None = Field(
        None, ge=0.0, le=2.0, description="as /answer's: unset, 0 for one episode, else 0.8"
    )
    deadline_s: float | None = Field(None, gt=0, description="as /answer's (extra body)")

    def question(self) -> str:
        return self.messages[self._last_question()].text().strip()

    def history(self) -> list[HistoryTurn]:
        """The user's and the assistant's messages before the question, the last
        MAX_HISTORY_TURNS of them (system and tool messages say nothing a follow-up points
        to)."""
        before = self.messages[: self._last_question()]
        turns = [
            HistoryTurn(role=m.role, content=m.text()[:MAX_TURN_CHARS])  # type: ignore[arg-type]
            for m in before
            if m.role in ("user", "assistant")
        ]
        return turns[-MAX_HISTORY_TURNS:]

    def _last_question(self) -> int:
        for index in range(len(self.messages) - 1, -1, -1):
            message = self.messages[index]
            if message.role == "user" and message.text().strip():
                return index
        raise ValueError("no user message with text")


class FinalEvent(BaseModel):
    """The answer: the last event of a stream that succeeded (without its trace, which the
    stream carried)."""

    type: Literal["final"] = "final"
    result: AnswerResponse


class StreamErrorEvent(BaseModel):
    """The request failed after the stream started: the last event of the stream. (One
    episode failing is an `episode_error` of the trace; the request goes on.)"""

    type: Literal["error"] = "error"
    message: str
    error_type: str


# What an answer stream carries, in order: the trace, then `final` or `error`.
StreamEvent = TraceEvent | FinalEvent | StreamErrorEvent


class ErrorDetail(BaseModel):
    type: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail
