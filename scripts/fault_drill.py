"""A fault drill: the answering service under load while the things it depends on fail.

    .venv/bin/python scripts/fault_drill.py [--minutes 10] [--streams 16] \
        [--out fault-drill.json] [--seed 0] [--keep]

Everything runs on this machine, in a temporary folder: a PostgreSQL cluster for the answer
records (tests/postgres.py), a policy registry with the shipped adapter published twice (v1
and v2: the drill tests the swap, not which version answers better), a vLLM server of the
base model with runtime LoRA loading that the drill starts as a process of its own (so it
can kill it), and `webgpt serve` following the registry's `current` alias on that vLLM.

`--streams` clients ask questions in a loop: mostly streamed answers, some JSON answers
(half of them with an Idempotency-Key, asked twice), and now and then a client cuts its
stream. Meanwhile, on a seeded schedule, the drill promotes v2 and rolls back (twice),
stops PostgreSQL for a minute, and SIGKILLs vLLM and starts it again on the same port. At
the end it waits for the answer spool to drain and checks that every answer id a client
received is a row of the database. It prints a markdown report and writes the JSON to
--out; docs/fault-drill.md has the measured results.
"""

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.postgres import PostgresServer, fresh_database  # noqa: E402
from webgpt.agent.model import BASE_VERSION, SHIPPED_ADAPTER, prepare_base_model  # noqa: E402
from webgpt.agent.registry import PolicyRegistry  # noqa: E402
from webgpt.infra.sse import sse_lines  # noqa: E402
from webgpt.infra.vllm_server import (  # noqa: E402
    ServerConfig,
    free_port,
    lora_server_config,
    serves,
)

QUESTIONS_FILE = ROOT / "data" / "questions" / "people.jsonl"
# A small fixed set of factoids (short episodes). At temperature 0 every episode of a question
# sends the same prompts, so vLLM's prefix cache carries much of the load on 2 cores.
QUESTIONS_ASKED = 4
MAX_ACTIONS = 8  # an answer in seconds to a minute on 2 cores, not many minutes
POSTGRES_OUTAGE_S = 60.0
POLICY_COOLDOWN_S = 5.0  # agent.openai_policy: after a failed connect, calls fail fast this long
RETRY_AFTER_S = 5.0  # the service's default Retry-After; clients wait it out after a failure
CUT_SHARE = 0.10  # streams a client abandons mid-way
JSON_SHARE = 0.08  # answers asked as JSON instead of a stream; half with an Idempotency-Key
SAMPLE_S = 2.0  # /metrics and /readyz are read this often
START_TIMEOUT_S = 900.0  # vLLM's CPU build compiles at start: minutes on a loaded machine
DRAIN_TIMEOUT_S = 300.0
# A waiting answer's deadline counts its wait; on 2 cores under 16 streams an answer takes
# over a minute, and a JSON answer sends nothing until it ends.
ANSWER_DEADLINE_S = 600
# When, as a share of the run, each fault starts (each moved by up to ±2% of the run, seeded).
# The vLLM kill comes before the second promote so that the drill sees both what answers do
# once the restarted vLLM is back and what a promote does afterwards.
FAULT_PLAN = [
    (0.05, "promote v2"),
    (0.20, "rollback"),
    (0.30, "stop postgres"),
    (0.45, "kill vllm"),
    (0.65, "promote v2"),
    (0.82, "rollback"),
]


# -- the processes -------------------------------------------------------------------------


class PolicyServer:
    """The policy vLLM (the base, adapters loaded at run time) as a process the drill kills
    and starts again on the same port. Started from infra.vllm_server's own ServerConfig,
    command and environment, so it is the server `webgpt serve` would start itself."""

    def __init__(self, config: ServerConfig, log: Path) -> None:
        self.config = config
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def launch(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                self.config.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.config.env(),
                start_new_session=True,  # its own process group: the engine core dies with it
            )

    def ready(self) -> bool:
        """True once it serves the base; RuntimeError if it exited."""
        if self.process is None or self.process.poll() is not None:
            raise RuntimeError(f"vLLM exited during start-up; log: {self.log}")
        return serves(self.config.url, self.config.served_name, timeout_s=2.0)

    async def start(self) -> float:
        """Launch and wait until it serves the base; the seconds that took. Polled from the
        event loop, not waited in a thread, so Ctrl-C is not held up by a start under way."""
        started = time.monotonic()
        self.launch()
        while not await asyncio.to_thread(self.ready):
            if time.monotonic() - started > START_TIMEOUT_S:
                raise RuntimeError(f"vLLM did not serve within {START_TIMEOUT_S:.0f} s: {self.log}")
            await asyncio.sleep(1.0)
        return time.monotonic() - started

    def kill(self) -> None:
        """SIGKILL the whole process group: a crash, nothing gets to clean up."""
        self._signal(signal.SIGKILL, 30.0)

    def stop(self) -> None:
        self._signal(signal.SIGTERM, 30.0)
        self._signal(signal.SIGKILL, 10.0)

    def _signal(self, sig: signal.Signals, wait_s: float) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=wait_s)
        if self.process.returncode is not None:
            with contextlib.suppress(ProcessLookupError):  # the engine core, if it lingers
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process = None


class ServiceProcess:
    """`webgpt serve` as a subprocess, configured only by its WEBGPT_* environment."""

    def __init__(self, env: dict[str, str], port: int, log: Path) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.log = log
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "webgpt.service.cli", "serve", "--port", str(port)],
                env=env,
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches the drill only; it stops this in order
            )

    def wait_ready(self) -> float:
        """Wait until /readyz says ready (the first version loaded, its canary passed)."""
        started = time.monotonic()
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"webgpt serve exited during start-up; log: {self.log}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.base}/readyz", timeout=5).status_code == 200:
                    return time.monotonic() - started
            if time.monotonic() - started > START_TIMEOUT_S:
                raise RuntimeError(f"webgpt serve was not ready in time; log: {self.log}")
            time.sleep(1.0)

    def stop(self) -> None:
        """SIGTERM (answers in flight get uvicorn's 30 s), then SIGKILL."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# -- setting up ----------------------------------------------------------------------------


def build_offline_web(out: Path) -> None:
    """The offline web the offline engine searches (`webgpt corpus build`, ~10 s)."""
    subprocess.run(
        [sys.executable, "-m", "webgpt.service.cli", "corpus", "build", "--out", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )


def make_registry(root: Path) -> PolicyRegistry:
    """v1 and v2: the shipped adapter under two names, v1 current."""
    registry = PolicyRegistry(root)
    registry.publish(SHIPPED_ADAPTER, "v1")
    registry.publish(SHIPPED_ADAPTER, "v2")
    registry.promote("v1")
    return registry


def service_env(home: Path, vllm: ServerConfig, database_url: str, streams: int) -> dict[str, str]:
    """The service's whole configuration; WEBGPT_* variables of the caller's shell are left
    out, so nothing but the drill's own setup is measured."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WEBGPT_")}
    return {
        **env,
        "WEBGPT_HOME": str(home),  # the registry `webgpt model promote` moves is in here too
        "WEBGPT_OFFLINE_STORE": str(home / "offline-web.sqlite"),
        "WEBGPT_POLICY_URL": vllm.url,
        "WEBGPT_POLICY_MODEL": vllm.served_name,  # the base the adapters are loaded on
        "WEBGPT_POLICY_CHECKPOINT": str(home / "registry" / "policy" / "current"),
        "WEBGPT_POLICY_RELOAD_S": "2",
        "WEBGPT_DATABASE_URL": database_url,
        "WEBGPT_DATABASE_RETRY_S": "1",
        "WEBGPT_READINESS_CHECK_S": "1",
        "WEBGPT_ANSWER_SPOOL": str(home / "answer-spool.jsonl"),
        "WEBGPT_MAX_CONCURRENT_REQUESTS": "8",
        # Every client may wait for a slot: an overloaded 429 is not one of the faults here.
        "WEBGPT_MAX_WAITING_REQUESTS": str(2 * streams),
        "WEBGPT_ANSWER_DEADLINE_S": str(ANSWER_DEADLINE_S),
    }


def pick_questions(rng: random.Random) -> list[str]:
    """A few of the people-written factoid questions (data/questions) of the dev split."""
    rows = [json.loads(line) for line in QUESTIONS_FILE.read_text().splitlines() if line]
    factoids = sorted(
        {r["question"] for r in rows if r["kind"] == "factoid" and r["split"] == "dev"}
    )
    return rng.sample(factoids, QUESTIONS_ASKED)


# -- the run -------------------------------------------------------------------------------


@dataclass
class Outcome:
    """One request as its client saw it."""

    client: int
    mode: str  # stream, json, json+key, json+key repeat
    started_s: float
    ended_s: float = 0.0
    result: str = "failed"  # served, failed, cut
    reason: str | None = None  # why it failed: the error event, HTTP status or transport error
    answer_id: str | None = None
    version: str | None = None  # the policy version that answered


@dataclass
class Drill:
    """The shared state of a run: the clock, what happened when, what the clients saw."""

    base: str
    questions: list[str]
    started: float = field(default_factory=time.monotonic)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    def now(self) -> float:
        return round(time.monotonic() - self.started, 2)

    def mark(self, event: str, detail: str = "", at_s: float | None = None) -> None:
        at_s = self.now() if at_s is None else at_s
        self.timeline.append({"t_s": at_s, "event": event, "detail": detail})
        print(f"[{at_s:7.1f} s] {event} {detail}".rstrip(), flush=True)


def answer_body(question: str, stream: bool) -> dict[str, Any]:
    return {"question": question, "stream": stream, "max_actions": MAX_ACTIONS, "temperature": 0}


def http_failure(response: httpx.Response) -> str:
    try:
        error = response.json()["error"]
        return f"HTTP {response.status_code} {error['type']}: {error['message']}"
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code}: {response.text[:200]}"


async def ask_streaming(
    http: httpx.AsyncClient, outcome: Outcome, question: str, cut_after: int | None
) -> None:
    """One streamed answer read to `final` or `error`, then `[DONE]`; with cut_after, the
    connection is closed after that many events (unless the answer ended first)."""
    async with http.stream("POST", "/answer", json=answer_body(question, True)) as response:
        if response.status_code != 200:
            await response.aread()
            outcome.reason = http_failure(response)
            return
        events, ended = 0, False
        async for line in sse_lines(response):
            if not line.startswith("data:"):
                continue  # blank separators and `: ping` comments
            data = line[len("data:") :].strip()
            if data == "[DONE]":
                if not ended:
                    outcome.reason = "[DONE] without a final or error event"
                return
            event = json.loads(data)
            events += 1
            if event["type"] == "final":
                ended, outcome.result = True, "served"
                outcome.answer_id = event["result"]["id"]
                outcome.version = event["result"]["versions"]["policy"]
            elif event["type"] == "error":
                ended = True
                outcome.reason = f"error event {event['error_type']}: {event['message']}"
            if not ended and cut_after is not None and events >= cut_after:
                outcome.result = "cut"  # leaving the block closes the connection mid-stream
                return
    outcome.result = "failed"
    outcome.reason = (
        f"{outcome.reason or 'no final or error event'}, and the stream ended without [DONE]"
    )


async def ask_json(
    http: httpx.AsyncClient, outcome: Outcome, question: str, key: str | None
) -> None:
    headers = {"Idempotency-Key": key} if key else {}
    body = answer_body(question, False)
    # No bytes arrive before the answer is done, so the stream's read timeout does not fit.
    waits = httpx.Timeout(10.0, read=ANSWER_DEADLINE_S + 60.0)
    response = await http.post("/answer", json=body, headers=headers, timeout=waits)
    if response.status_code != 200:
        outcome.reason = http_failure(response)
        return
    answer = response.json()
    outcome.result, outcome.answer_id = "served", answer["id"]
    outcome.version = answer["versions"]["policy"]


async def timed(drill: Drill, outcome: Outcome, ask: Awaitable[None]) -> Outcome:
    """Run one request, turning transport failures into a failure reason."""
    try:
        await ask
    except httpx.HTTPError as error:
        outcome.result, outcome.reason = "failed", f"transport {type(error).__name__}: {error}"
    outcome.ended_s = drill.now()
    drill.outcomes.append(outcome)
    return outcome


async def client_loop(drill: Drill, http: httpx.AsyncClient, index: int, seed: int) -> None:
    """Ask until the drill stops; wait Retry-After after a failure, as a polite client does
    (hammering a restarting vLLM would slow its start and only inflate the failure count)."""
    rng = random.Random(seed * 1000 + index)
    asked = 0
    while not drill.stop.is_set():
        question = drill.questions[(index + asked) % len(drill.questions)]
        asked += 1
        draw = rng.random()
        if draw < JSON_SHARE:
            key = f"drill-{index}-{asked}" if draw < JSON_SHARE / 2 else None
            outcome = Outcome(index, "json+key" if key else "json", drill.now())
            outcome = await timed(drill, outcome, ask_json(http, outcome, question, key))
            if key is not None and outcome.result == "served":
                await ask_again(drill, http, index, question, key, outcome.answer_id)
        else:
            cut_after = rng.randint(1, 30) if rng.random() < CUT_SHARE else None
            outcome = Outcome(index, "stream", drill.now())
            outcome = await timed(drill, outcome, ask_streaming(http, outcome, question, cut_after))
        if outcome.result == "failed":
            await asyncio.sleep(RETRY_AFTER_S)


async def ask_again(
    drill: Drill, http: httpx.AsyncClient, index: int, question: str, key: str, first: str | None
) -> None:
    """The same request with the same Idempotency-Key: the first answer again, not a new one."""
    repeat = Outcome(index, "json+key repeat", drill.now())
    repeat = await timed(drill, repeat, ask_json(http, repeat, question, key))
    if repeat.result == "served" and repeat.answer_id != first:
        repeat.result = "failed"
        repeat.reason = f"the repeat got another answer ({repeat.answer_id}, first {first})"


# -- faults ----------------------------------------------------------------------------------


def plan_faults(duration_s: float, rng: random.Random) -> list[tuple[float, str]]:
    """(seconds into the load, fault) for each fault of FAULT_PLAN."""
    return [
        (round(duration_s * (share + rng.uniform(-0.02, 0.02)), 1), fault)
        for share, fault in FAULT_PLAN
    ]


@dataclass
class Faults:
    """The faults the drill causes, each marked on the timeline when done."""

    drill: Drill
    vllm: PolicyServer
    postgres: PostgresServer
    env: dict[str, str]
    counts: Counter[str] = field(default_factory=Counter)

    async def run(self, at_s: float, fault: str) -> None:
        await asyncio.sleep(max(0.0, at_s - self.drill.now()))
        self.counts[fault] += 1
        name = f"{fault} ({self.counts[fault]})"
        if fault == "promote v2":
            # --force: no quality gate (an hour of evaluation on CPUs); v2 is v1's adapter
            await self.registry_command(name, "promote", "v2", "--force")
        elif fault == "rollback":
            await self.registry_command(name, "rollback")
        elif fault == "stop postgres":
            await self.postgres_outage()
        elif fault == "kill vllm":
            await self.kill_vllm()

    async def registry_command(self, name: str, *command: str) -> None:
        """`webgpt model promote|rollback`, as an operator runs it: the CLI, reading the
        registry from WEBGPT_HOME."""
        cli = [sys.executable, "-m", "webgpt.service.cli", "model", *command]
        process = await asyncio.create_subprocess_exec(
            *cli, env=self.env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        output, _ = await process.communicate()
        self.drill.mark(name, output.decode().strip())

    async def postgres_outage(self) -> None:
        await asyncio.to_thread(self.postgres.stop)
        self.drill.mark("postgres stopped")
        await asyncio.sleep(POSTGRES_OUTAGE_S)
        await asyncio.to_thread(self.postgres.start)
        self.drill.mark("postgres started")

    async def kill_vllm(self) -> None:
        killed_at = self.drill.now()  # requests it cuts fail before the kill returns
        await asyncio.to_thread(self.vllm.kill)
        self.drill.mark("vllm killed", "SIGKILL to its process group", killed_at)
        took = await self.vllm.start()
        self.drill.mark("vllm serving again", f"restart took {took:.0f} s")


# -- watching the service --------------------------------------------------------------------

METRIC = re.compile(r'^(webgpt_[a-z_]+)(?:\{outcome="([a-z_]+)"\})? ([0-9.e+-]+)$')


def read_metrics(text: str) -> dict[str, float]:
    """The answer-record and policy-reload series, as `name` or `name:outcome`."""
    found = {}
    for line in text.splitlines():
        match = METRIC.match(line)
        wanted = match and match[1].startswith(("webgpt_answer_", "webgpt_policy_reloads_total"))
        if match and wanted and not match[1].endswith("_created"):
            name = f"{match[1]}:{match[2]}" if match[2] else match[1]
            found[name] = float(match[3])
    return found


def records(metrics: dict[str, float]) -> dict[str, float | None]:
    """The answer-record figures of /metrics, under short names."""
    return {
        "pending": metrics.get("webgpt_answer_spool_records"),
        **{
            outcome: metrics.get(f"webgpt_answer_records_total:{outcome}", 0.0)
            for outcome in ("spooled", "replayed", "dropped")
        },
    }


def readiness_summary(body: dict[str, Any]) -> str:
    problems = [
        f"{name}: {check.get('detail')}"
        for name, check in body.get("checks", {}).items()
        if not check.get("ok")
    ]
    return str(body.get("status", "?")) + (" (" + "; ".join(problems) + ")" if problems else "")


class LogFollower:
    """The lines `webgpt serve` logs that say what it did about a fault: its JSON events
    (versions loaded, refused, unload failures), database warnings, errors."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def news(self) -> list[tuple[str, str]]:
        with self.path.open("rb") as log:
            log.seek(self.offset)
            data = log.read()
        complete = data.rfind(b"\n") + 1  # a line still being written waits for next time
        self.offset += complete
        found = []
        for line in data[:complete].decode(errors="replace").splitlines():
            if line.startswith('{"event"'):
                event = json.loads(line)
                found.append((f"service {event['event']}", shorten(str(event.get("detail")))))
            elif any(w in line for w in ("feedback database", "ERROR", "Traceback")):
                found.append(("service log", shorten(line)))
        return found


async def watch(drill: Drill, http: httpx.AsyncClient, log: LogFollower) -> None:
    """Sample /metrics and /readyz; mark every readiness change and what the service logs
    about the faults."""
    last_ready = ""
    while True:
        try:
            metrics = read_metrics((await http.get("/metrics", timeout=10)).text)
            ready = readiness_summary((await http.get("/readyz", timeout=10)).json())
        except (httpx.HTTPError, ValueError) as error:
            metrics, ready = {}, f"unreachable: {error!r}"
        for event, detail in log.news():
            drill.mark(event, detail)
        if ready != last_ready:
            drill.mark("readyz", ready)
            last_ready = ready
        drill.samples.append({"t_s": drill.now(), "ready": ready.split(" ")[0], **records(metrics)})
        await asyncio.sleep(SAMPLE_S)


async def wait_for_drain(drill: Drill, http: httpx.AsyncClient) -> dict[str, float]:
    """The final metrics, once the spool is empty (every record written to the database)."""
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while True:
        metrics = read_metrics((await http.get("/metrics", timeout=10)).text)
        if metrics.get("webgpt_answer_spool_records") == 0 or time.monotonic() > deadline:
            drill.mark("spool", f"{metrics.get('webgpt_answer_spool_records')} records pending")
            return metrics
        await asyncio.sleep(1.0)


async def run_load(
    drill: Drill, service_log: Path, faults: Faults, plan: list[tuple[float, str]],
    duration_s: float, streams: int, seed: int,
) -> dict[str, float]:  # fmt: skip
    limits = httpx.Limits(max_connections=4 * streams, max_keepalive_connections=2 * streams)
    # Reads wait at most 120 s: the service pings a quiet stream every 15 s.
    timeout = httpx.Timeout(connect=10.0, read=120.0, write=10.0, pool=None)
    async with (
        httpx.AsyncClient(base_url=drill.base, timeout=timeout, limits=limits) as http,
        httpx.AsyncClient(base_url=drill.base, timeout=10.0) as probes,
    ):
        drill.started = time.monotonic()  # the fault plan counts from here
        watcher = asyncio.create_task(watch(drill, probes, LogFollower(service_log)))
        fault_tasks = [asyncio.create_task(faults.run(at, fault)) for at, fault in plan]
        clients = [asyncio.create_task(client_loop(drill, http, i, seed)) for i in range(streams)]
        await asyncio.sleep(duration_s)
        drill.stop.set()
        drill.mark("load stopped", "no new requests; waiting for those in flight")
        await asyncio.gather(*clients)
        await asyncio.gather(*fault_tasks)  # a vLLM restart may still be under way
        drill.mark("requests in flight done")
        metrics = await wait_for_drain(drill, probes)
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
        return metrics


# -- the report --------------------------------------------------------------------------------


def database_ids(url: str) -> list[str]:
    with psycopg.connect(url) as connection:
        return [row[0] for row in connection.execute("SELECT id FROM answers")]


def vllm_windows(timeline: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """(killed, serving again) for each kill of vLLM."""
    kills = [e["t_s"] for e in timeline if e["event"] == "vllm killed"]
    backs = [e["t_s"] for e in timeline if e["event"] == "vllm serving again"]
    return [(kill, next((b for b in backs if b >= kill), float("inf"))) for kill in kills]


IN_FLIGHT = "in flight when vLLM was killed"
WHILE_DOWN = "started while vLLM was down"
COOLING_DOWN = "started in the policy client's cool-down after vLLM was back"
AFTER_RESTART = "started after vLLM was serving again"


def failure_context(outcome: Outcome, windows: list[tuple[float, float]]) -> str:
    """Where a failure falls relative to the vLLM kills."""
    for killed, back in windows:
        if outcome.started_s < killed <= outcome.ended_s:
            return IN_FLIGHT
        if killed <= outcome.started_s < back:
            return WHILE_DOWN
        cooling = "cooling down" in (outcome.reason or "")
        if cooling and back <= outcome.started_s < back + POLICY_COOLDOWN_S:
            return COOLING_DOWN
        if back <= outcome.started_s:
            return AFTER_RESTART
    return "no vLLM fault yet"


def failure_allowed(outcome: Outcome, context: str) -> bool:
    """What the design allows: a request on a killed (or not yet restarted) vLLM ends in a
    clean policy_unavailable error (an error event, or a 503 before the first byte); so
    does one in the few seconds the policy client fails fast after failing to connect."""
    clean = (outcome.reason or "").startswith(
        ("error event policy_unavailable", "HTTP 503 policy_unavailable")
    )
    return clean and context in (IN_FLIGHT, WHILE_DOWN, COOLING_DOWN)


def phases(timeline: list[dict[str, Any]], end_s: float) -> list[tuple[str, float, float]]:
    """The run cut at each fault and recovery: (what began the phase, from, to)."""
    cuts = [
        (e["event"], e["t_s"])
        for e in timeline
        if e["event"].startswith(("promote", "rollback", "postgres", "vllm", "load stopped"))
    ]
    bounds = [("start", 0.0), *cuts]
    return [
        (name, start, bounds[i + 1][1] if i + 1 < len(bounds) else end_s)
        for i, (name, start) in enumerate(bounds)
    ]


def phase_rows(
    outcomes: list[Outcome], cut_at: list[tuple[str, float, float]]
) -> list[dict[str, Any]]:
    """Each phase's requests, by when they ended (the last phase takes the stragglers)."""
    rows = []
    for i, (name, start, end) in enumerate(cut_at):
        until = end if i + 1 < len(cut_at) else float("inf")
        ended = [o for o in outcomes if start <= o.ended_s < until]
        rows.append(
            {
                "phase": name,
                "from_s": start,
                "to_s": end,
                "served": sum(o.result == "served" for o in ended),
                "failed": sum(o.result == "failed" for o in ended),
                "cut": sum(o.result == "cut" for o in ended),
                "versions": dict(Counter(o.version for o in ended if o.version)),
                "failures": dict(Counter(o.reason for o in ended if o.result == "failed")),
            }
        )
    return rows


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)

    def at(share: float) -> float:
        return round(ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))], 1)

    return {"p50": at(0.5), "p90": at(0.9), "max": at(1.0)}


def recovery(outcomes: list[Outcome], killed: float, back: float) -> dict[str, Any]:
    """What answers did once a killed vLLM served again: the requests started after that
    which failed, and when the first one started that was served (answers work again)."""
    after = [o for o in outcomes if o.started_s >= back]
    served = [o.started_s for o in after if o.result == "served"]
    failed = [o.ended_s for o in after if o.result == "failed"]
    return {
        "killed_s": killed,
        "serving_again_s": back,
        "failed_after_restart": len(failed),
        "last_failure_s": max(failed, default=None),
        "first_served_answer_started_s": min(served, default=None),
    }


def shorten(reason: str) -> str:
    """A failure reason as a table key: ids and ports out, so equal failures count together."""
    reason = re.sub(r"ans_[0-9a-f]{32}", "ans_…", reason)
    return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", reason)[:300]


def build_report(
    drill: Drill, metrics: dict[str, float], ids_in_database: list[str], setup: dict[str, Any]
) -> dict[str, Any]:
    outcomes = drill.outcomes
    for outcome in outcomes:
        if outcome.reason:
            outcome.reason = shorten(outcome.reason)
    windows = vllm_windows(drill.timeline)
    received = {o.answer_id for o in outcomes if o.answer_id}
    stored = set(ids_in_database)
    failures: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"count": 0, "contexts": Counter(), "allowed": True}
    )
    for outcome in (o for o in outcomes if o.result == "failed"):
        context = failure_context(outcome, windows)
        entry = failures[outcome.reason or "?"]
        entry["count"] += 1
        entry["contexts"][context] += 1
        entry["allowed"] = entry["allowed"] and failure_allowed(outcome, context)
    lost = sorted(received - stored)
    served = [o for o in outcomes if o.result == "served"]
    spool_peak = max((s["pending"] or 0 for s in drill.samples), default=0)
    return {
        "setup": setup,
        "timeline": drill.timeline,
        "requests": {
            "started": len(outcomes),
            "served": sum(o.result == "served" for o in outcomes),
            "failed": sum(o.result == "failed" for o in outcomes),
            "cut_by_client": sum(o.result == "cut" for o in outcomes),
            "by_mode": {
                mode: dict(Counter(o.result for o in outcomes if o.mode == mode))
                for mode in sorted({o.mode for o in outcomes})
            },
            "served_by_version": dict(Counter(o.version for o in outcomes if o.version)),
            "served_seconds": percentiles([o.ended_s - o.started_s for o in served]),
        },
        "vllm_restarts": [recovery(outcomes, killed, back) for killed, back in windows],
        "failures": [
            {"reason": reason, **entry, "contexts": dict(entry["contexts"])}
            for reason, entry in sorted(failures.items(), key=lambda kv: -kv[1]["count"])
        ],
        "phases": phase_rows(outcomes, phases(drill.timeline, drill.now())),
        "records": {
            "spooled": metrics.get("webgpt_answer_records_total:spooled", 0),
            "replayed": metrics.get("webgpt_answer_records_total:replayed", 0),
            "dropped": metrics.get("webgpt_answer_records_total:dropped", 0),
            "spool_pending_at_end": metrics.get("webgpt_answer_spool_records"),
            "spool_peak": spool_peak,
            "answer_ids_received": len(received),
            "rows_in_database": len(ids_in_database),
            "distinct_ids_in_database": len(stored),
            "lost": len(lost),
            "lost_ids": lost,
            # Answers recorded whose client never saw the id (cut after the record was
            # spooled, before the final event reached it): stored, not lost.
            "stored_not_received": len(stored - received),
        },
        "policy_reloads": {
            k.split(":")[1]: v for k, v in metrics.items() if k.startswith("webgpt_policy_reloads")
        },
        "verdict": {
            "zero_lost": not lost,
            "only_allowed_failures": all(entry["allowed"] for entry in failures.values()),
        },
        "samples": drill.samples,
        "outcomes": [dataclasses.asdict(o) for o in outcomes],
    }


def report_json(report: dict[str, Any]) -> str:
    """The report as JSON to read: indented, but each request and each sample on a line of
    its own (hundreds of them)."""
    parts = []
    for key, value in report.items():
        if key in ("samples", "outcomes"):
            rows = ",\n  ".join(json.dumps(row) for row in value)
            parts.append(f' "{key}": [\n  {rows}\n ]')
        else:
            parts.append(f' "{key}": ' + json.dumps(value, indent=1).replace("\n", "\n "))
    return "{\n" + ",\n".join(parts) + "\n}\n"


def markdown(report: dict[str, Any]) -> str:
    requests, records = report["requests"], report["records"]
    lines = [
        "| measure | value |",
        "|---|---|",
        f"| requests started | {requests['started']} |",
        f"| served | {requests['served']} (seconds: {json.dumps(requests['served_seconds'])}) |",
        f"| failed | {requests['failed']} |",
        f"| cut by the client | {requests['cut_by_client']} |",
        f"| answers by version | {json.dumps(requests['served_by_version'])} |",
        f"| records spooled / replayed / dropped | {records['spooled']:g} / "
        f"{records['replayed']:g} / {records['dropped']:g} |",
        f"| spool peak (records waiting for the database) | {records['spool_peak']:g} |",
        f"| answer ids received by clients | {records['answer_ids_received']} |",
        f"| rows in `answers` (distinct ids) | {records['rows_in_database']} "
        f"({records['distinct_ids_in_database']}) |",
        f"| **lost** (received, not in the database) | **{records['lost']}** |",
    ]
    for restart in report["vllm_restarts"]:
        lines.append(
            f"| vLLM killed at {restart['killed_s']:.0f} s, serving again at "
            f"{restart['serving_again_s']:.0f} s | {restart['failed_after_restart']} requests "
            f"started after that failed, the last ending at {restart['last_failure_s']} s; the "
            f"first answer served after it started at "
            f"{restart['first_served_answer_started_s']} s |"
        )
    lines += [
        "",
        "| failure reason | count | when | allowed by the design |",
        "|---|---|---|---|",
    ]
    for failure in report["failures"]:
        when = ", ".join(f"{k}: {v}" for k, v in failure["contexts"].items())
        reason = failure["reason"].replace("|", "\\|")
        lines.append(f"| {reason} | {failure['count']} | {when} | {failure['allowed']} |")
    lines += ["", "| phase (began with) | from s | to s | served | failed | cut | versions |"]
    lines.append("|---|---|---|---|---|---|---|")
    for row in report["phases"]:
        versions = ", ".join(f"{k} {v}" for k, v in row["versions"].items())
        lines.append(
            f"| {row['phase']} | {row['from_s']:.0f} | {row['to_s']:.0f} | {row['served']} | "
            f"{row['failed']} | {row['cut']} | {versions} |"
        )
    return "\n".join(lines)


# -- main --------------------------------------------------------------------------------------


def interrupt_on_sigterm() -> None:
    """SIGTERM cleans up like Ctrl-C: every process this drill started is stopped."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def cleanup_step(what: str, step: Callable[[], None]) -> None:
    """Run one cleanup step; a failure is reported and the remaining steps still run."""
    try:
        step()
    except Exception as error:  # cleanup goes on whatever one step did
        print(f"cleanup: {what} failed: {error!r}", file=sys.stderr)


@contextlib.contextmanager
def workspace(keep: bool) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="webgpt-fault-drill-"))
    try:
        yield folder
    finally:
        if keep:
            print(f"kept {folder}", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)


def machine() -> dict[str, Any]:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return {
        "cpus": os.cpu_count(),
        "load_average_at_start": os.getloadavg(),
        "commit": commit,
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    duration_s = args.minutes * 60
    plan = plan_faults(duration_s, rng)
    print("fault schedule (s into the load):", json.dumps(plan), flush=True)
    setup: dict[str, Any] = {"args": vars(args) | {"out": str(args.out)}, "machine": machine()}
    setup |= {"fault_plan": plan, "max_actions": MAX_ACTIONS, "temperature": 0}
    base_model = prepare_base_model(print)  # the embedded base, in the usual $WEBGPT_HOME
    # The workspace outlives the processes: they are stopped before their folder goes.
    with workspace(args.keep) as folder, contextlib.ExitStack() as cleanup:
        home = folder / "home"
        home.mkdir()
        build_offline_web(home / "offline-web.sqlite")
        make_registry(home / "registry" / "policy")

        postgres = PostgresServer()
        cleanup.callback(cleanup_step, "PostgreSQL", postgres.remove)
        postgres.start()
        database_url = fresh_database(postgres.url)

        config = dataclasses.replace(
            lora_server_config(base_model, BASE_VERSION, max_lora_rank=16), port=free_port()
        )
        vllm = PolicyServer(config, folder / "vllm.log")
        cleanup.callback(cleanup_step, "vLLM", vllm.stop)
        setup["vllm_start_s"] = round(asyncio.run(vllm.start()), 1)
        setup["vllm_cpu_bind"] = config.cpu_bind  # VLLM_CPU_OMP_THREADS_BIND
        print(f"vLLM serving {BASE_VERSION} in {setup['vllm_start_s']} s", flush=True)

        env = service_env(home, config, database_url, args.streams)
        service = ServiceProcess(env, free_port(), folder / "service.log")
        cleanup.callback(cleanup_step, "webgpt serve", service.stop)
        setup["service_ready_s"] = round(service.wait_ready(), 1)
        print(f"webgpt serve ready in {setup['service_ready_s']} s (v1 loaded, canary passed)")
        setup["settings"] = {k: v for k, v in env.items() if k.startswith("WEBGPT_")}

        drill = Drill(service.base, pick_questions(rng))
        setup["questions"] = drill.questions
        faults = Faults(drill, vllm, postgres, env)
        setup["load_started_at"] = time.strftime("%H:%M:%S")  # to read the kept logs by
        load = run_load(drill, service.log, faults, plan, duration_s, args.streams, args.seed)
        metrics = asyncio.run(load)
        return build_report(drill, metrics, database_ids(database_url), setup)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long the load runs")
    parser.add_argument("--streams", type=int, default=16, help="concurrent clients")
    # a run output: its figures go in docs/fault-drill.md, the file itself is not kept in git
    parser.add_argument("--out", type=Path, default=Path("fault-drill.json"))
    parser.add_argument("--seed", type=int, default=0, help="the schedule, questions and cuts")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs)")
    args = parser.parse_args()
    interrupt_on_sigterm()
    report = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report_json(report))
    print(markdown(report))
    print(json.dumps(report["verdict"]))


if __name__ == "__main__":
    main()
