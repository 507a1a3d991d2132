"""Policy hot reload benchmark: how long a swap takes, and what it does to answer latency.

    .venv/bin/python benchmarks/policy_swap_bench.py [--clients 2] [--phase-s 90] [--full-weights]

`webgpt serve` follows a policy alias in a scratch registry (the embedded base, linked in,
and the shipped behavior-cloned adapter published as two versions) and starts its own local
vLLM server with runtime LoRA loading, as a fresh clone does. With --full-weights the two
versions are the default merged into full weights, so the swap is blue/green: a second
vLLM process starts for the promoted version. `clients` loops ask questions
of the default offline web: a steady phase, then the second version is promoted and the
loops go on for another phase. Prints the swap time (promote to the service counting the
reload: load + canaries) and answer latency p50/p99 in steady state, during the swap and
after it; every request must succeed.
"""

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.servers import free_port  # noqa: E402
from webgpt.agent.model import (  # noqa: E402
    BASE_VERSION,
    SHIPPED_ADAPTER,
    policy_dir,
    prepare_base_model,
    prepare_default_model,
)
from webgpt.agent.registry import PolicyRegistry  # noqa: E402

QUESTIONS = [
    "Who created Tetris?",
    "What kind of thing was Byzantine Empire?",
    "Who wrote the novel Pride and Prejudice?",
    "What is the capital of Australia?",
]
Outcome = tuple[float, float, int, str]  # started, ended, status, policy version


async def load(base: str, clients: int, stop: asyncio.Event, done: list[Outcome]) -> None:
    async def client(http: httpx.AsyncClient, offset: int) -> None:
        asked = offset
        while not stop.is_set():
            question = QUESTIONS[asked % len(QUESTIONS)]
            asked += 1
            started = time.monotonic()
            response = await http.post(
                f"{base}/answer", json={"question": question, "max_actions": 10, "temperature": 0}
            )
            ok = response.status_code == 200
            version = response.json()["versions"]["policy"] if ok else response.text[:200]
            done.append((started, time.monotonic(), response.status_code, version))

    async with httpx.AsyncClient(timeout=600) as http:
        await asyncio.gather(*(client(http, i) for i in range(clients)))


def reloaded(base: str) -> bool:
    """True once the promoted version serves (the first load at start-up counts too)."""
    text = httpx.get(f"{base}/metrics").text
    return 'webgpt_policy_reloads_total{outcome="loaded"} 2.0' in text


async def run(base: str, registry: PolicyRegistry, clients: int, phase_s: float) -> None:
    stop, done = asyncio.Event(), []  # type: ignore[var-annotated]
    task = asyncio.create_task(load(base, clients, stop, done))
    await asyncio.sleep(phase_s)
    promoted = time.monotonic()
    registry.promote("swap-b")
    while not await asyncio.to_thread(reloaded, base):
        await asyncio.sleep(0.2)
    swapped = time.monotonic()
    await asyncio.sleep(phase_s)
    stop.set()
    await task
    failed = [o for o in done if o[2] != 200]
    print(f"swap: {swapped - promoted:.1f} s from promote to serving swap-b (load + canaries)")
    print(f"requests: {len(done)}, failed: {len(failed)} {failed[:3]}")
    phases = {
        "steady (before)": [o for o in done if o[1] < promoted],
        "during the swap": [o for o in done if o[0] < swapped and o[1] > promoted],
        "after": [o for o in done if o[0] > swapped],
    }
    print(f"{'phase':<16} {'answers':>7} {'p50 s':>6} {'p99 s':>6}  versions")
    for name, outcomes in phases.items():
        latencies = sorted(o[1] - o[0] for o in outcomes)
        if not latencies:
            print(f"{name:<16} {0:>7}")
            continue
        p99 = latencies[min(len(latencies) - 1, round(0.99 * (len(latencies) - 1)))]
        versions = sorted({o[3] for o in outcomes})
        print(
            f"{name:<16} {len(latencies):>7} {statistics.median(latencies):>6.1f} {p99:>6.1f}  "
            f"{','.join(versions)}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--phase-s", type=float, default=90.0)
    parser.add_argument("--full-weights", action="store_true", help="swap merged versions")
    args = parser.parse_args()
    prepare_base_model(print)
    with tempfile.TemporaryDirectory() as scratch:
        registry = PolicyRegistry(Path(scratch) / "policy")
        registry.root.mkdir()
        (registry.root / BASE_VERSION).symlink_to(policy_dir(BASE_VERSION))
        version = prepare_default_model(print) if args.full_weights else SHIPPED_ADAPTER
        registry.publish(version, "swap-a")
        registry.publish(version, "swap-b")
        registry.promote("swap-a")
        port = free_port()
        env = {
            **os.environ,
            "WEBGPT_POLICY_CHECKPOINT": str(registry.current),
            "WEBGPT_POLICY_RELOAD_S": "1",
        }
        started = time.monotonic()
        service = subprocess.Popen(
            [sys.executable, "-m", "webgpt.service.cli", "serve", "--port", str(port)],
            env=env,
            cwd=ROOT,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            while True:
                if service.poll() is not None:
                    raise SystemExit("webgpt serve exited during start-up")
                try:
                    if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(2)
            print(f"service ready in {time.monotonic() - started:.0f} s (vLLM with LoRA, canary)")
            asyncio.run(run(base, registry, args.clients, args.phase_s))
        finally:
            service.send_signal(signal.SIGTERM)
            service.wait(timeout=120)
    print(json.dumps(vars(args)))


if __name__ == "__main__":
    main()
