"""Best-of-n latency on the embedded default: seconds a question for n = 1, 2, 4 through
the path the service answers by (`Agent.answer`: n episodes side by side on one page
cache, then the shipped reward model scores the answers in this process and picks one).

    .venv/bin/python benchmarks/best_of_n_bench.py [--questions FILE] [--limit 12]
        [--n 1 2 4] [--temperature 0.8] [--policy-url URL --policy-model NAME]

Without --policy-url it prepares the default policy and starts its own vLLM server on a
free port (stopped at the end); the reward model is `webgpt model prepare`'s. Questions:
the factoids of the people-written dev sample (docs/eval), in file order. Every n answers
the same questions, one question at a time, so the figures are per-question latency on
an otherwise idle machine. Correctness here is a by-product on few questions; the
best-of-n correctness figures come from `webgpt eval --best-of` (docs/reward.md).
"""

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for tests.servers

from tests.servers import free_port
from webgpt.agent.answer import Agent
from webgpt.agent.episode import EpisodeConfig
from webgpt.agent.model import DEFAULT_VERSION, prepare_default_model, prepare_default_reward_model
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web, WebOptions
from webgpt.evals.questions import answers_correctly, load_questions
from webgpt.infra.vllm_server import ServerConfig, start, stop
from webgpt.reward.scorer import RewardScorer

SAMPLE = Path(__file__).resolve().parent.parent / "docs/eval/people-dev-sample80-questions.jsonl"


async def bench(args: argparse.Namespace, url: str, model: str) -> None:
    questions = [q for q in load_questions(args.questions, None) if q.kind == "factoid"]
    questions = questions[: args.limit]
    web = Web(WebOptions(engine="offline", js_mode="never", offline_only=True))
    policy = OpenAIPolicy(url, model)
    scorer = RewardScorer(prepare_default_reward_model(print))
    agent = Agent(
        web,
        policy,
        scorer=scorer,
        episode=EpisodeConfig(temperature=args.temperature),
        session=SessionConfig(max_actions=args.max_actions),
    )
    print(f"{len(questions)} factoid questions, T = {args.temperature}, {args.max_actions} actions")
    print(f"{'n':>3} {'s/question p50':>15} {'mean':>6} {'max':>6} {'correct':>8}")
    try:
        await agent.answer("warm-up", n=1)  # compiles nothing new, but loads the scorer
        for n in args.n:
            walls, right = [], 0
            for question in questions:
                started = time.perf_counter()
                result = await agent.answer(question.question, n=n)
                walls.append(time.perf_counter() - started)
                right += answers_correctly(result.answer, question.gold_answers)
            print(
                f"{n:3d} {statistics.median(walls):15.1f} {statistics.mean(walls):6.1f} "
                f"{max(walls):6.1f} {right / len(questions):8.1%}"
            )
    finally:
        await scorer.aclose()
        await policy.aclose()
        await web.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--questions", type=Path, default=SAMPLE)
    parser.add_argument("--limit", type=int, default=12)
    parser.add_argument("--n", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--max-actions", type=int, default=20)
    parser.add_argument("--policy-url")
    parser.add_argument("--policy-model")
    args = parser.parse_args()
    if args.policy_url:
        asyncio.run(bench(args, args.policy_url, args.policy_model))
        return
    config = ServerConfig(prepare_default_model(print), DEFAULT_VERSION, port=free_port())
    running = start(config, lambda _: None, record=False)
    try:
        asyncio.run(bench(args, running.url, running.model))
    finally:
        stop(running)


if __name__ == "__main__":
    main()
