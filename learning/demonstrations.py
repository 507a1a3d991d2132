"""Demonstrations: whole browsing episodes to clone (WebGPT §3, Appendix E), one JSONL schema.

One line per episode. Observations are stored exactly as the policy saw them, not
re-derived, so a file stays valid when the live web changes; on the offline web
`replay` proves the environment still reproduces them byte for byte. Three sources write
the same record: the scripted demonstrator (learning/scripted.py), a teacher model driving
the environment (rejection-sampled on gold answers), and people (`webgpt browse --record`,
the service's /feedback demonstrations via `webgpt feedback export --demonstrations`).

Schema version 1 (`schema_version`): question, observation format version, source, the session's
limits, every step as (observation, command), the quotes, the answer-phase prompt and the
answer, optional gold answers, the page that holds them and the split it belongs to.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from webgpt.agent.errors import DataError
from webgpt.browser.events import CollectedQuote
from webgpt.browser.observation import OBSERVATION_FORMAT_VERSION, answer_prompt
from webgpt.browser.session import BrowserSession, SessionConfig, StepResult
from webgpt.evals.questions import jsonl_lines

SCHEMA_VERSION: Literal[1] = 1
Source = Literal["person", "teacher", "scripted"]
Split = Literal["train", "dev", "test"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DemoStep(_Frozen):
    observation: str = Field(min_length=1, description="what the policy saw before the command")
    command: str = Field(description="the command written in answer to it")


class DemoQuote(_Frozen):
    title: str
    domain: str = ""
    url: str = ""
    extract: str = Field(min_length=1)

    @classmethod
    def of(cls, quote: CollectedQuote) -> "DemoQuote":
        return cls(title=quote.title, domain=quote.domain, url=quote.url, extract=quote.extract)

    def collected(self) -> CollectedQuote:
        return CollectedQuote(
            title=self.title, domain=self.domain, url=self.url, extract=self.extract
        )


class SessionLimits(_Frozen):
    """The session settings that shape observations (replay needs the same ones)."""

    max_actions: Annotated[int, Field(ge=1)] = 100
    window_lines: Annotated[int, Field(ge=1)] = 20
    quote_budget_chars: Annotated[int, Field(ge=1)] = 2000
    search_results: Annotated[int, Field(ge=1)] = 10
    censor: bool = True

    @classmethod
    def of(cls, config: SessionConfig) -> "SessionLimits":
        return cls(
            max_actions=config.max_actions,
            window_lines=config.window_lines,
            quote_budget_chars=config.quote_budget_chars,
            search_results=config.search_results,
            censor=config.censor,
        )

    def config(self, base: SessionConfig | None = None) -> SessionConfig:
        return replace(base or SessionConfig(), **self.model_dump())


class Demonstration(_Frozen):
    schema_version: Literal[1] = SCHEMA_VERSION
    id: str = Field(min_length=1, max_length=200)
    question: str = Field(min_length=1, max_length=2000)
    observation_format: int = OBSERVATION_FORMAT_VERSION
    source: Source
    session: SessionLimits = SessionLimits()
    steps: list[DemoStep] = Field(min_length=1)
    quotes: list[DemoQuote] = Field(default_factory=list)
    answer_prompt: str | None = None
    answer: str | None = None
    gold_answers: list[str] = Field(default_factory=list)
    gold_url: str | None = None
    split: Split | None = None
    meta: dict[str, str | int | float | bool] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> "Demonstration":
        if (self.answer is None) != (self.answer_prompt is None):
            raise ValueError("answer and answer_prompt go together")
        if self.answer is not None:
            if not self.quotes:
                raise ValueError("an answer needs at least one quote")
            expected = answer_prompt(self.question, [q.collected() for q in self.quotes])
            if self.answer_prompt != expected:
                raise ValueError("answer_prompt is not the answer prompt of the question+quotes")
        return self

    def to_json(self) -> str:
        return self.model_dump_json()


UNTAGGED = "untagged"  # LoadReport's name for records without a split


@dataclass
class LoadReport:
    used: int = 0
    skipped: list[tuple[str, int, str]] = field(default_factory=list)  # (file, line, reason)
    by_source: dict[str, int] = field(default_factory=dict)
    # valid records of the splits not asked for, by split (UNTAGGED: recorded without one)
    other_splits: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        sources = ", ".join(f"{k} {v}" for k, v in sorted(self.by_source.items()))
        text = f"{self.used} demonstrations used ({sources or 'none'}), "
        if self.other_splits:
            others = ", ".join(f"{k} {v}" for k, v in sorted(self.other_splits.items()))
            text += f"{sum(self.other_splits.values())} of other splits left out ({others}), "
        text += f"{len(self.skipped)} rows skipped"
        for file, line, reason in self.skipped[:20]:
            text += f"\n  {file}:{line}: {reason}"
        if len(self.skipped) > 20:
            text += f"\n  ... and {len(self.skipped) - 20} more"
        return text


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}" if where else str(first["msg"])


def load_demonstrations(
    paths: Iterable[Path], *, splits: Iterable[str | None] | None = None
) -> tuple[list[Demonstration], LoadReport]:
    """Every valid record of the files (optionally only the given splits); rows that do not
    fit the schema, or were recorded on another observation format, are reported by line
    and skipped."""
    wanted = set(splits) if splits is not None else None
    report = LoadReport()
    demos: list[Demonstration] = []
    for path in paths:
        for number, line in jsonl_lines(path):
            try:
                demo = Demonstration.model_validate_json(line)
            except ValidationError as error:
                report.skipped.append((str(path), number, _first_error(error)[:200]))
                continue
            if demo.observation_format != OBSERVATION_FORMAT_VERSION:
                report.skipped.append(
                    (
                        str(path),
                        number,
                        f"observation format {demo.observation_format}; "
                        f"this build speaks {OBSERVATION_FORMAT_VERSION}",
                    )
                )
                continue
            if wanted is not None and demo.split not in wanted:
                other = demo.split or UNTAGGED
                report.other_splits[other] = report.other_splits.get(other, 0) + 1
                continue
            demos.append(demo)
            report.used += 1
            report.by_source[demo.source] = report.by_source.get(demo.source, 0) + 1
    return demos, report


def write_demonstrations(path: Path, demos: Iterable[Demonstration]) -> int:
    """Write records as JSONL (to a temporary name, then renamed); returns the count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    count = 0
    with partial.open("w", encoding="utf-8") as out:
        for demo in demos:
            out.write(demo.to_json() + "\n")
            count += 1
    partial.replace(path)
    return count


async def replay(demo: Demonstration, session: BrowserSession) -> list[str]:
    """Run the demonstration's commands in a fresh session configured as it was recorded;
    returns the differences (empty: the environment reproduces it byte for byte)."""
    problems: list[str] = []
    session.config = demo.session.config(session.config)
    observation = session.reset(demo.question)
    for number, step in enumerate(demo.steps, start=1):
        if observation != step.observation:
            problems.append(f"step {number}: the observation differs")
        if session.done:
            problems.append(f"step {number}: the episode had already ended")
            break
        observation = (await session.step(step.command)).observation
    quotes = [DemoQuote.of(q) for q in session.quotes]
    if quotes != demo.quotes:
        problems.append("the collected quotes differ")
    if (
        demo.answer_prompt is not None
        and session.quotes
        and session.answer_prompt() != demo.answer_prompt
    ):
        problems.append("the answer prompt differs")
    return problems


class Recorder:
    """Drives a session and writes down what it shows: the one way every source (a person,
    the scripted demonstrator, a teacher model) turns an episode into a Demonstration."""

    def __init__(self, session: BrowserSession, question: str) -> None:
        self.session = session
        self.question = question.strip()
        self.steps: list[DemoStep] = []
        self.observation = session.reset(self.question)

    async def step(self, command: str) -> StepResult:
        result = await self.session.step(command)
        self.steps.append(DemoStep(observation=self.observation, command=command))
        self.observation = result.observation
        return result

    def finish(
        self,
        *,
        id: str,
        source: Source,
        answer: str | None,
        gold_answers: list[str] | None = None,
        gold_url: str | None = None,
        split: Split | None = None,
        meta: dict[str, str | int | float | bool] | None = None,
    ) -> Demonstration:
        """The record; the answer is kept only when the session ended able to answer."""
        session = self.session
        answerable = bool(session.quotes) and session.end_reason not in (
            "nonsense",
            "controversial",
        )
        return Demonstration(
            id=id,
            question=self.question,
            source=source,
            session=SessionLimits.of(session.config),
            steps=self.steps,
            quotes=[DemoQuote.of(q) for q in session.quotes],
            answer_prompt=session.answer_prompt() if answerable and answer else None,
            answer=answer if answerable and answer else None,
            gold_answers=gold_answers or [],
            gold_url=gold_url,
            split=split,
            meta=meta or {},
        )


async def record_commands(
    session: BrowserSession, question: str, commands: Iterable[str], answer: str | None, id: str
) -> Demonstration:
    """A person's demonstration given as commands only (the service's /feedback): the
    commands are run again in the session to record what each one was shown."""
    recorder = Recorder(session, question)
    for command in commands:
        if session.done:
            break
        await recorder.step(command)
    if not recorder.steps:
        raise DataError(f"demonstration {id}: no command to record")
    return recorder.finish(id=id, source="person", answer=answer)
