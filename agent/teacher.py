"""Demonstrations from a teacher model: a (large) policy behind any OpenAI-compatible
endpoint drives our environment; only episodes that end with a cited answer containing a
gold answer, every citation faithful, are kept (rejection sampling)."""

import hashlib

from agent.demonstrations import Demonstration, DemoQuote, DemoStep, SessionLimits
from agent.episode import EpisodeConfig, run_episode
from agent.evaluate import cited_numbers
from agent.policy import Policy
from agent.questions import Question, contains_gold
from browser.session import SessionConfig
from browser.web import Web


async def teacher_demonstration(
    question: Question,
    web: Web,
    teacher: Policy,
    *,
    attempts: int = 2,
    temperature: float = 0.8,
    session: SessionConfig | None = None,
) -> Demonstration | None:
    """The first of `attempts` teacher episodes that answers right, or None."""
    config = session or SessionConfig(max_actions=20)
    for attempt in range(attempts):
        browser = web.session(config=config)
        result = await run_episode(
            0, browser, teacher, question.question, EpisodeConfig(temperature=temperature)
        )
        answer = result.answer
        if not answer or not contains_gold(answer, question.gold_answers):
            continue
        if not cited_numbers(answer, result.references) or result.dangling_citations:
            continue
        quotes = [DemoQuote.of(q) for q in browser.quotes]
        return Demonstration(
            id=f"teacher-{hashlib.sha256(question.question.encode()).hexdigest()[:16]}",
            question=browser.question,
            source="teacher",
            session=SessionLimits.of(config),
            steps=[DemoStep(observation=s.observation, command=s.command) for s in result.steps],
            quotes=quotes,
            answer_prompt=browser.answer_prompt(),
            answer=answer,
            gold_answers=question.gold_answers,
            gold_url=question.url,
            split=question.split,
            meta={"teacher": teacher.name, "attempt": attempt + 1},
        )
    return None
