"""What best-of-n costs in the service by default: the first request for more than one
episode prepares and loads the shipped reward model; later ones only score with it.

    .venv/bin/python benchmarks/best_of_n_service_bench.py [--home DIR] [--repeats 5]

The service (the real app on uvicorn, its default settings: the shipped reward model on
first use, in this process) answers on a small offline web with a scripted policy that
answers at once (tests/agent/fake_policy.py), so the figures are the service's own cost
of n = 4 against n = 1, without the policy's time (docs/benchmarks.md has the policy's, in
"Best-of-n latency"). Without --home, WEBGPT_HOME is a fresh folder: the first request
does what it does on a fresh clone (download the base, convert, merge twice); with --home
~/.cache/webgpt, what it does on a machine that has prepared the model before.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.agent.fake_policy import Script, fake_policy_app
from tests.servers import serve

ARTICLES = {
    "Crow": {
        "title": "Crow",
        "extract": "Crows are birds of the genus Corvus. Crows can recognise individual human "
        "faces and remember them for years.",
        "description": "Genus of birds",
    },
}
QUESTION = {"question": "crow corvus"}


def timed(base: str, n: int) -> float:
    started = time.perf_counter()
    response = httpx.post(
        f"{base}/answer", json={**QUESTION, "n": n, "deadline_s": 900}, timeout=1800
    )
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, default=None, help="WEBGPT_HOME (default: fresh)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="webgpt-bon-service-") as folder:
        run(args, Path(folder))


def run(args: argparse.Namespace, work: Path) -> None:
    os.environ["WEBGPT_HOME"] = str(args.home.expanduser() if args.home else work / "home")

    from webgpt.agent.openai_policy import OpenAIPolicy
    from webgpt.browser.corpus import build_corpus, wikipedia_pages
    from webgpt.browser.web import Web, WebOptions
    from webgpt.service.app import create_app
    from webgpt.service.metrics import Metrics
    from webgpt.service.serving import AnswerService
    from webgpt.service.settings import ServiceSettings
    from webgpt.service.store import FeedbackStore

    summaries = work / "summaries.json"
    summaries.write_text(json.dumps(ARTICLES))
    build_corpus(work / "web.sqlite", [("wikipedia", wikipedia_pages(summaries))])
    script = Script(
        oracle_quote="Crows are birds of the genus Corvus.",
        answers=["Crows are corvids [1].", "Crows, which remember faces, are corvids [1]."]
        * 10_000,
    )
    with serve(fake_policy_app(script)) as policy_base:
        url = policy_base + "/v1"
        settings = ServiceSettings(policy_url=url, policy_model="scripted")
        web = Web(WebOptions(offline_store=work / "web.sqlite", offline_only=True, js_mode="never"))
        service = AnswerService(
            settings,
            web,
            OpenAIPolicy(url, "scripted"),
            None,
            Metrics(),
            FeedbackStore(work / "fb"),
        )
        with serve(create_app(service)) as base:
            timed(base, 1)  # warm: the page cache, the database
            first = timed(base, 4)
            rows = {n: [timed(base, n) for _ in range(args.repeats)] for n in (1, 4)}
    home = "fresh" if args.home is None else str(args.home)
    print(f"WEBGPT_HOME {home}; scripted policy; {args.repeats} repeats")
    print(f"  first n = 4 request (prepare + load the reward model): {first:7.2f} s")
    for n, seconds in rows.items():
        print(f"  n = {n}: median {statistics.median(seconds):.2f} s, max {max(seconds):.2f} s")


if __name__ == "__main__":
    main()
