"""Offline search benchmark: the time of one search of the offline web (`webgpt corpus
build`) for the queries the question's own search makes. Prints figures;
docs/benchmarks.md records them.

    .venv/bin/python benchmarks/search_bench.py [QUESTIONS.jsonl ...] [--repeat 3]

Each question's query (agent.queries.question_query) is searched `--repeat` times for 10
results, as an episode's Search asks; the first pass warms SQLite's page cache and is not
timed. The figures are given for the queries that name a qualified name and for the rest
(until 2026-12-03 a page the query named was ranked first, which read the pages of a
qualified name's module: docs/benchmarks.md keeps both sets of figures).
"""

import argparse
import re
import statistics
import time
from pathlib import Path

from webgpt.agent.queries import question_query
from webgpt.browser.offline import OfflineWeb
from webgpt.evals.questions import load_questions

QUALIFIED = re.compile(r"\w\.\w")  # "json.dumps": the queries whose module's page is read
DEFAULT_QUESTIONS = [
    Path("docs/eval/generated-dev60-kinds-questions.jsonl"),
    Path("docs/eval/people-dev-sample80-questions.jsonl"),
    Path("docs/eval/people-dev-rest125-questions.jsonl"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("questions", type=Path, nargs="*", default=DEFAULT_QUESTIONS)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    queries = [question_query(q.question) for f in args.questions for q in load_questions(f)]
    web = OfflineWeb()
    for query in queries:  # warm the page cache
        web.search_sync(query, 10)
    timed: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.repeat):
        for query in queries:
            start = time.perf_counter()
            web.search_sync(query, 10)
            timed[bool(QUALIFIED.search(query))].append(time.perf_counter() - start)
    pages = web.page_count()
    web.close()
    print(f"{len(queries)} queries, {args.repeat} passes, {pages} pages")
    for names, label in ((True, "naming a qualified name"), (False, "the rest")):
        ms = sorted(1000 * t for t in timed[names])
        if ms:
            p95 = ms[int(0.95 * (len(ms) - 1))]
            p50 = statistics.median(ms)
            print(f"{label}: {len(ms)} searches, p50 {p50:.1f} ms, p95 {p95:.1f} ms")


if __name__ == "__main__":
    main()
