"""Where a policy's wrong factoid answers go wrong: search, view, quote choice or answer.

    .venv/bin/python scripts/quote_diagnosis.py QUESTIONS.jsonl URL,MODEL OUT.jsonl \
        [--split dev] [--max-actions 20] [--quote-ranker FOLDER|none] [--relevant-quotes K]
        [--no-question-search]

Runs one greedy guided episode a factoid on the offline web against a running
OpenAI-compatible policy server (`webgpt model serve`), and writes a line a question: its
commands, answer, and how far the gold answer came: onto a page opened, into the window in
view when the policy quoted, among the quote choices the grammar offered, into the quote
taken. Prints the count of each outcome. This is how narrowing a factoid's Quote to the
sentences that bear on it was found worth learning (docs/agent.md, "Learned quote
choice"): in 64 of v14's 115 wrong answers on the people dev half, a choice holding the
gold answer was offered and another one quoted; and the question's own search
(docs/questions.md): with one relevant sentence and the policy's own first search, 33 of
147 episodes never opened a page holding the gold answer.
"""

import argparse
import asyncio
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

from webgpt.agent.cli import add_quote_ranker
from webgpt.agent.episode import EpisodeConfig, run_episode
from webgpt.agent.grammar import quote_choices
from webgpt.agent.model import load_quote_ranker
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.browser.loader import PageCache
from webgpt.browser.search.base import SearchEngine
from webgpt.browser.session import BrowserSession, SessionConfig, StepResult
from webgpt.browser.web import offline_web
from webgpt.evals.questions import answers_correctly, load_questions, normalize


class RecordingSession(BrowserSession):
    """A session that notes, before each command, the page, the window and the choices."""

    def __init__(self, engine: SearchEngine, cache: PageCache, config: SessionConfig) -> None:
        super().__init__(engine, cache, config)
        self.pages: dict[str, str] = {}
        self.quote_steps: list[tuple[str, list[str], str]] = []  # window, choices, taken

    async def step(self, command_text: str) -> StepResult:
        if self.page.kind not in ("blank", "search", "error"):
            self.pages[self.page.url] = self.page.text_index.text
        if command_text.startswith("Quote:"):
            window = "\n".join(self.window_text())
            self.quote_steps.append((window, quote_choices(self), command_text))
        return await super().step(command_text)


def outcome(correct: bool, gold: list[str], session: RecordingSession) -> str:
    def holds(text: str) -> bool:
        return any(g in normalize(text) for g in gold)

    if correct:
        return "correct"
    if any(holds(taken) for _, _, taken in session.quote_steps):
        return "quoted the gold answer, answered otherwise"
    if any(holds(c) for _, choices, _ in session.quote_steps for c in choices):
        return "a choice held the gold answer, another was quoted"
    if any(holds(window) for window, _, _ in session.quote_steps):
        return "gold answer in view, in no choice"
    if any(holds(text) for text in session.pages.values()):
        return "gold answer on a page opened, never in view when quoting"
    return "gold answer on no page opened"


async def diagnose(args: argparse.Namespace) -> None:
    questions = load_questions(args.questions, args.split)
    url, _, model = args.policy.partition(",")
    web = offline_web(None)
    policy = OpenAIPolicy(url, model, api_key=None, guided=True)
    ranker = load_quote_ranker(args.quote_ranker, print)
    config = EpisodeConfig(
        temperature=0.0,
        relevant_quotes=args.relevant_quotes or None,
        question_search=args.question_search,
        quote_ranker=ranker,
    )
    assert web.engine is not None
    session_config = replace(SessionConfig(args.max_actions), render=web.options.render)
    counts: Counter[str] = Counter()
    try:
        with args.out.open("w") as out:
            for question in (q for q in questions if q.kind == "factoid"):
                cache = web.new_cache()
                session = RecordingSession(web.engine, cache, session_config)
                try:
                    result = await run_episode(0, session, policy, question.question, config)
                finally:
                    await cache.aclose()
                correct = answers_correctly(result.answer, question.gold_answers)
                gold = [normalize(g) for g in question.gold_answers]
                counts[found := outcome(correct, gold, session)] += 1
                row = {
                    "question": question.question,
                    "gold_answers": question.gold_answers,
                    "gold_url": question.url,
                    "answer": result.answer,
                    "outcome": found,
                    "unshown": result.unshown,
                    "commands": [step.command for step in result.steps],
                    "choices": [choices for _, choices, _ in session.quote_steps],
                }
                out.write(json.dumps(row) + "\n")
    finally:
        await policy.aclose()
        await web.aclose()
        if ranker is not None:
            await ranker.aclose()
    for found, count in counts.most_common():
        print(f"{count:4d}  {found}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("questions", type=Path)
    parser.add_argument("policy", help="URL,MODEL of a running policy server")
    parser.add_argument("out", type=Path)
    parser.add_argument("--split", default=None)
    parser.add_argument("--max-actions", type=int, default=20)
    add_quote_ranker(parser)
    parser.add_argument("--relevant-quotes", type=int, default=1, metavar="K")
    parser.add_argument("--question-search", action=argparse.BooleanOptionalAction, default=True)
    asyncio.run(diagnose(parser.parse_args()))


if __name__ == "__main__":
    main()
