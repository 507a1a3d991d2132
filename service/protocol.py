"""Wire models of the HTTP API (requests, responses, stream events, errors)."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent.answer import AnswerResult
from agent.trace import TraceEvent


class AnswerRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    n: int = Field(1, ge=1)
    temperature: float = Field(0.8, ge=0.0, le=2.0)
    max_actions: int = Field(100, ge=1)
    engine: str | None = None
    stream: bool = False
    include_trace: bool = False


class AnswerResponse(AnswerResult):
    trace: list[TraceEvent] | None = None


class FinalEvent(BaseModel):
    type: Literal["final"] = "final"
    result: AnswerResult


class StreamErrorEvent(BaseModel):
    type: Literal["error"] = "error"
    episode: None = None
    message: str
    error_type: str


class ErrorDetail(BaseModel):
    type: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail
