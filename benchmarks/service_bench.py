"""Service load benchmark: is the service the bottleneck?

    .venv/bin/python benchmarks/service_bench.py [--requests 64]

Three processes on this machine: a scripted OpenAI-compatible policy that answers at once
(tests/agent/fake_policy.py, browsing by reading the page), `webgpt serve` on a small
offline web, and this client. At 1, 16 and 64 concurrent streams it prints requests/s,
p50/p99 latency to `[DONE]`, and the service's time per episode step (latency / steps at
concurrency 1, where nothing waits); then the service's peak memory.
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.servers import free_port  # noqa: E402
from webgpt.browser.corpus import build_corpus, wikipedia_pages  # noqa: E402

ARTICLES = {
    f"Bird {i}": {
        "title": f"Bird {i}",
        "extract": f"Bird {i} is a corvid. Crows are birds of "
        f"the genus Corvus and bird {i} is one of them.",
    }
    for i in range(200)
}
POLICY = """
import sys, uvicorn
from tests.agent.fake_policy import Script, fake_policy_app
quote = "Crows are birds of the genus Corvus"
script = Script(oracle_quote=quote, answers=["Corvids [1]."] * 10**6)
uvicorn.run(fake_policy_app(script), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


def wait_for(url: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


async def one(client: httpx.AsyncClient, base: str, i: int) -> tuple[float, int]:
    started = time.perf_counter()
    steps = 0
    body = {"question": f"bird {i % 200} crows corvus", "stream": True}
    async with client.stream("POST", f"{base}/answer", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith('data: {"type":"action"') or line.startswith(
                'data: {"type":"candidate"'
            ):
                steps += 1
            if line == "data: [DONE]":
                break
    return time.perf_counter() - started, steps


async def level(base: str, concurrency: int, total: int) -> None:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(total):
        queue.put_nowait(i)
    latencies: list[float] = []
    steps: list[int] = []

    async def worker(client: httpx.AsyncClient) -> None:
        while not queue.empty():
            latency, n = await one(client, base, queue.get_nowait())
            latencies.append(latency)
            steps.append(n)

    limits = httpx.Limits(max_connections=concurrency + 4)
    async with httpx.AsyncClient(timeout=300, limits=limits) as client:
        started = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        wall = time.perf_counter() - started
    latencies.sort()
    p50, p99 = (
        latencies[len(latencies) // 2],
        latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
    )
    per_step = sum(latencies) / sum(steps)
    print(
        f"{concurrency:11d} {total / wall:10.1f} {1000 * p50:8.0f} {1000 * p99:8.0f}"
        f" {1000 * per_step:12.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=64, help="requests per concurrency level")
    parser.add_argument(
        "--levels", default="1,16,64", help="concurrency levels, comma-separated (default 1,16,64)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        summaries = Path(tmp) / "summaries.json"
        summaries.write_text(json.dumps(ARTICLES))
        store = Path(tmp) / "web.sqlite"
        build_corpus(store, [("wikipedia", wikipedia_pages(summaries))])
        policy_port, service_port = free_port(), free_port()
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "WEBGPT_OFFLINE_STORE": str(store),
            "WEBGPT_HOME": tmp,
            "WEBGPT_MAX_CONCURRENT_REQUESTS": "64",
            "WEBGPT_MAX_WAITING_REQUESTS": "64",
            "WEBGPT_FEEDBACK_DB": f"{tmp}/fb.sqlite",
        }
        policy = subprocess.Popen([sys.executable, "-c", POLICY, str(policy_port)], env=env)
        service = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "webgpt.service.cli",
                "serve",
                "--port",
                str(service_port),
                "--policy-url",
                f"http://127.0.0.1:{policy_port}/v1",
                "--policy-model",
                "scripted",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{service_port}"
            wait_for(f"http://127.0.0.1:{policy_port}/v1/models")
            wait_for(f"{base}/readyz")
            asyncio.run(level(base, 1, 4))  # warm-up: workers, caches
            print(f"{args.requests} streamed answers per level, 5 steps each (4 actions + answer)")
            print(
                f"{'concurrency':>11} {'answers/s':>10} {'p50 ms':>8} {'p99 ms':>8}"
                f" {'ms per step':>12}"
            )
            for concurrency in (int(level) for level in args.levels.split(",")):
                asyncio.run(level(base, concurrency, args.requests))
            status = Path(f"/proc/{service.pid}/status").read_text()
            peak = next(line for line in status.splitlines() if line.startswith("VmHWM"))
            print(f"service peak memory: {peak.split(':')[1].strip()}")
        finally:
            for process in (service, policy):
                process.terminate()
                process.wait(timeout=30)


if __name__ == "__main__":
    main()
