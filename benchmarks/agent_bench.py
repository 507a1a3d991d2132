"""Agent benchmark on the embedded default: where a browsing step's time goes, and what n=4
episodes side by side cost compared with one.

    .venv/bin/python benchmarks/agent_bench.py [--policy-url URL --policy-model NAME]

Without --policy-url it prepares the default model and starts its own vLLM server on a
free port (stopped at the end). It needs the offline web (`webgpt corpus build`).
For each question: one episode (n=1) with the time per step split into policy / fetch /
render / overhead; then four episodes at once on one shared page cache (what best-of-4
does before scoring), to compare wall times. The reward model is not part of these figures.
"""

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for tests.servers

from tests.servers import free_port
from webgpt.agent.episode import EpisodeConfig, EpisodeResult, run_episode
from webgpt.agent.model import DEFAULT_VERSION, prepare_default_model
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.browser.loader import PageCache
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web, WebOptions
from webgpt.infra.vllm_server import ServerConfig, start, stop

QUESTIONS = [
    "What does json.dumps do?",
    "Who painted the Mona Lisa?",
    "How do I read a file line by line in Python?",
]


async def episodes(
    web: Web, policy: OpenAIPolicy, question: str, n: int, max_actions: int
) -> tuple[float, list[EpisodeResult], PageCache]:
    cache = web.new_cache()
    config = SessionConfig(max_actions=max_actions)
    started = time.perf_counter()
    results = await asyncio.gather(
        *(
            run_episode(i, web.session(cache, config), policy, question, EpisodeConfig())
            for i in range(n)
        )
    )
    return time.perf_counter() - started, list(results), cache


async def bench(url: str, model: str, max_actions: int) -> None:
    web = Web(WebOptions(engine="offline", js_mode="never", offline_only=True))
    policy = OpenAIPolicy(url, model)
    totals = {"policy": 0.0, "fetch": 0.0, "render": 0.0, "overhead": 0.0, "steps": 0}
    print(f"{'question':48} {'n=1 s':>7} {'steps':>5} {'n=4 s':>7} {'n=4/n=1':>8}")
    try:
        await episodes(web, policy, "warm-up", 1, 2)
        for question in QUESTIONS:
            wall_1, [one], cache = await episodes(web, policy, question, 1, max_actions)
            steps = one.actions + (1 if one.answer is not None else 0)
            totals["policy"] += one.timings.policy_s
            totals["fetch"] += cache.stats.fetch_s
            totals["render"] += cache.stats.render_s
            totals["overhead"] += (
                wall_1 - one.timings.policy_s - cache.stats.fetch_s - cache.stats.render_s
            )
            totals["steps"] += steps
            wall_4, _, _ = await episodes(web, policy, question, 4, max_actions)
            print(
                f"{question[:48]:48} {wall_1:7.1f} {steps:5d} {wall_4:7.1f} {wall_4 / wall_1:7.2f}x"
            )
        steps_total = totals["steps"] or 1
        print(f"per step (n=1, {steps_total} steps incl. answer):")
        for part in ("policy", "fetch", "render", "overhead"):
            print(f"  {part:9} {1000 * totals[part] / steps_total:8.1f} ms")
    finally:
        await policy.aclose()
        await web.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--policy-url")
    parser.add_argument("--policy-model")
    parser.add_argument("--max-actions", type=int, default=10)
    args = parser.parse_args()
    if args.policy_url:
        asyncio.run(bench(args.policy_url, args.policy_model, args.max_actions))
        return
    config = ServerConfig(prepare_default_model(print), DEFAULT_VERSION, port=free_port())
    running = start(config, lambda _: None, record=False)
    try:
        asyncio.run(bench(running.url, running.model, args.max_actions))
    finally:
        stop(running)


if __name__ == "__main__":
    main()
