"""Feedback export memory benchmark: peak resident memory while `FeedbackStore` exports
10k, 100k and 1M comparisons, streamed (server-side cursor, EXPORT_BATCH_ROWS at a time)
against the whole result fetched at once (what the export did before).

    .venv/bin/python benchmarks/export_bench.py [--rows 10000 100000 1000000] [--database-url URL]

Without --database-url the rows go to a SQLite file in a temporary folder; with it (an empty
PostgreSQL database), there. Each comparison names one of 1,000 recorded answers of two
candidates (the shape the service records), so a row's export parses one answer's JSON.
Each export runs in a fresh process (memory freed by one run would hide the next one's),
whose resident memory is sampled from /proc/self/statm every 10 ms.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa

from tests.service.test_store import two_candidates
from webgpt.service.store import ANSWERS, COMPARISONS, FeedbackStore

ANSWERS_RECORDED = 1000
PAGE = os.sysconf("SC_PAGE_SIZE")


def resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE / 2**20


def peak_while(work: Callable[[], int]) -> tuple[int, float, float]:
    """(work's result, seconds, peak resident MiB above the start)."""
    start, peak, done = resident_mib(), [0.0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], resident_mib())
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    began = time.perf_counter()
    try:
        result = work()
    finally:
        done.set()
        sampler.join()
    return result, time.perf_counter() - began, max(peak[0], resident_mib()) - start


def fill(store: FeedbackStore, rows: int) -> None:
    """Top the comparisons table up to `rows`, 10,000 a transaction."""
    with store.engine.begin() as connection:
        have = connection.execute(sa.select(sa.func.count()).select_from(COMPARISONS)).scalar()
        answers = connection.execute(sa.select(sa.func.count()).select_from(ANSWERS)).scalar()
    if not answers:
        for i in range(ANSWERS_RECORDED):
            store.record_answer(two_candidates(f"ans_{i}"))
    row = {"a": 0, "b": 1, "preference": "a", "label": 1.0, "created": 0.0}
    for start in range(int(have or 0), rows, 10_000):
        batch = [
            {**row, "answer_id": f"ans_{i % ANSWERS_RECORDED}"}
            for i in range(start, min(rows, start + 10_000))
        ]
        with store.engine.begin() as connection:
            connection.execute(COMPARISONS.insert(), batch)


def streamed(store: FeedbackStore) -> int:
    return sum(1 for _ in store.export_comparisons())


def fetched_whole(store: FeedbackStore) -> int:
    """The rows fetched at once, as the export did before it streamed."""
    query = sa.select(COMPARISONS.c.id, ANSWERS.c.result).join(
        ANSWERS, ANSWERS.c.id == COMPARISONS.c.answer_id
    )
    with store.engine.connect() as connection:
        rows = connection.execute(query).all()
    return len(rows)


def measure(database: str, export: str) -> None:
    """One export in this process: prints {"rows", "seconds", "peak_mib"}."""
    store = FeedbackStore(Path(database) if "://" not in database else database)
    work = {"streamed": streamed, "whole": fetched_whole}[export]
    rows, seconds, peak = peak_while(lambda: work(store))
    store.close()
    print(json.dumps({"rows": rows, "seconds": seconds, "peak_mib": peak}))


def in_fresh_process(database: str, export: str) -> dict[str, float]:
    command = [sys.executable, __file__, "--measure", export, "--database-url", database]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--measure", choices=["streamed", "whole"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args.database_url, args.measure)
        return 0
    with tempfile.TemporaryDirectory() as folder:
        database = args.database_url or str(Path(folder) / "feedback.sqlite")
        store = FeedbackStore(Path(database) if "://" not in database else database)
        print(f"database: {store.engine.dialect.name}")
        print("| comparisons | streamed: s | streamed: peak MiB | fetched whole: peak MiB |")
        print("|---|---|---|---|")
        for rows in sorted(args.rows):
            fill(store, rows)
            stream = in_fresh_process(database, "streamed")
            assert stream["rows"] == rows, (stream, rows)
            whole = in_fresh_process(database, "whole")
            print(
                f"| {rows:,} | {stream['seconds']:.1f} | {stream['peak_mib']:.1f} "
                f"| {whole['peak_mib']:.1f} |",
                flush=True,
            )
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
