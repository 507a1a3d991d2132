"""Demonstrations from a teacher model: a policy behind any OpenAI-compatible endpoint
drives our environment, and only episodes that end the way their question's kind asks for
are kept (rejection sampling; `worth_learning`). The teacher may be a larger model, or the
current policy itself sampled at a temperature: expert iteration, which adds the policy's
own successes to the next BC run (docs/training.md)."""

import hashlib

from webgpt.agent.declines import is_declined
from webgpt.agent.episode import EpisodeConfig, EpisodeResult, run_episode
from webgpt.agent.policy import Policy
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web
from webgpt.evals.evaluate import cited_numbers, distinct_sentence_count, is_long_form
from webgpt.evals.questions import Question, contains_gold
from webgpt.learning.demonstrations import Demonstration, DemoQuote, DemoStep, SessionLimits


async def teacher_demonstration(
    question: Question,
    web: Web,
    teacher: Policy,
    episode: EpisodeConfig,
    *,
    attempts: int = 2,
    session: SessionConfig | None = None,
) -> Demonstration | None:
    """The first of `attempts` teacher episodes worth learning from, or None. The episodes
    decode as `episode` says: for expert iteration, as the service decodes (guided, with
    its quote ranker), at a sampling temperature; a chat-format teacher
    (agent.chat_policy) unguided, its tool calls carrying no grammar."""
    config = session or SessionConfig(max_actions=20)
    for attempt in range(attempts):
        browser = web.session(config=config)
        result = await run_episode(0, browser, teacher, question.question, episode)
        answer = result.answer
        if answer is None or not browser.quotes or not worth_learning(question, result):
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
            meta={"teacher": teacher.name, "attempt": attempt + 1, "kind": question.kind},
        )
    return None


def worth_learning(question: Question, result: EpisodeResult) -> bool:
    """The episode ends as its question's kind asks, every citation naming a quote it
    collected: a factoid with a cited answer that states a gold answer; a long-form
    question in WebGPT's style (two distinct sentences or more, citing two quotes or
    more: evals.evaluate.is_long_form); an unanswerable one with a decline. A decline of
    an answerable question is never kept, nor an episode with a command the browser
    refused (a student would learn to write it)."""
    answer = result.answer
    if not answer or result.invalid_actions:
        return False
    if is_declined(answer):
        return question.kind == "unanswerable"
    cited = set(cited_numbers(answer, result.references))
    if question.kind == "unanswerable" or not cited or result.dangling_citations:
        return False
    if question.kind == "longform":
        return is_long_form(distinct_sentence_count(answer), len(cited))
    return contains_gold(answer, question.gold_answers)
