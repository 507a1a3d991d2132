"""The feedback store on both of its databases: a SQLite file and a real PostgreSQL server
(tests/postgres.py). The same tests run on each (the `database` fixture)."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from tests.servers import free_port
from webgpt.agent.answer import AnswerResult, AnswerTimings, AnswerUsage, Candidate
from webgpt.agent.errors import ConfigurationError
from webgpt.agent.trace import Reference
from webgpt.learning.demonstrations import Demonstration, DemoStep
from webgpt.service.store import COMPARISONS, FeedbackStore

CROW = Reference(
    n=1,
    title="Crow",
    url="https://en.wikipedia.org/wiki/Crow",
    domain="en.wikipedia.org",
    extract="Crows are birds of the genus Corvus.",
)


def two_candidates(answer_id: str) -> AnswerResult:
    """An answer of best-of-2, as the service records it."""
    candidates = [
        Candidate(
            episode=i,
            answer=text,
            reward=None,
            references=[CROW],
            end_reason="answer",
            dangling_citations=[],
            actions=3,
        )
        for i, text in enumerate(["Crows are corvids [1].", "Crows are birds [1]."])
    ]
    return AnswerResult(
        id=answer_id,
        question="What are crows?",
        answer=candidates[0].answer,
        references=[CROW],
        candidates=candidates,
        best=0,
        usage=AnswerUsage(
            prompt_tokens=1, completion_tokens=1, actions=6, pages_fetched=1, page_cache_hits=0
        ),
        versions={"policy": "p1", "reward": "r1", "format": 1},
        timings=AnswerTimings(
            total_s=1, policy_s=1, browser_s=0, fetch_s=0, render_s=0, scoring_s=0
        ),
    )


def test_feedback_round_trips_and_survives_reopening(database: str | Path) -> None:
    store = FeedbackStore(database)
    store.record_answer(two_candidates("ans_1"))
    store.record_answer(two_candidates("ans_1"))  # recorded again: replaced, not refused
    assert store.add_comparison("ans_1", 1, 0, label=1.0, note="shorter") == 1
    assert store.add_comparison("ans_1", 0, 1, label=0.5) == 2
    graded = {"grade": "b_better", "a": {"supported": "no"}, "b": {"supported": "yes"}}
    assert store.add_comparison("ans_1", 0, 1, label=0.25, ratings=graded) == 3
    with pytest.raises(Exception, match="unknown answer id"):
        store.add_comparison("ans_nope", 0, 1, label=1.0)
    with pytest.raises(Exception, match="below 2"):
        store.add_comparison("ans_1", 0, 2, label=1.0)
    assert store.add_demonstration("q", {"commands": ["Search crows"]}) == 1
    demo = Demonstration(
        id="person-1",
        question="crow corvus",
        source="person",
        steps=[DemoStep(observation="♦Question", command="Search crows")],
    )
    assert store.add_recorded_demonstration(demo) == 2
    assert store.demonstrated_questions() == {"q", "crow corvus"}
    store.close()

    reopened = FeedbackStore(database)  # migrations run again: nothing to do, nothing lost
    rows = list(reopened.export_comparisons())
    assert [(row["preference"], row["label"]) for row in rows] == [
        ("a", 1.0),
        ("tie", 0.5),
        ("b", 0.25),
    ]
    assert "ratings" not in rows[0] and rows[2]["ratings"] == graded
    assert rows[0]["a"]["answer"] == "Crows are birds [1]."
    assert rows[0]["a"]["quotes"][0]["url"] == CROW.url
    assert rows[0]["versions"] == {"policy": "p1", "reward": "r1", "format": 1}
    assert list(reopened.export_demonstrations()) == [
        (1, "q", "commands", {"commands": ["Search crows"]}),
        (2, "crow corvus", "demonstration", json.loads(demo.to_json())),
    ]
    reopened.close()


def test_two_replicas_share_one_database(database: str | Path) -> None:
    first, second = FeedbackStore(database), FeedbackStore(database)
    first.record_answer(two_candidates("ans_1"))
    ids: list[int] = []

    def post(store: FeedbackStore) -> None:
        for _ in range(20):
            ids.append(store.add_comparison("ans_1", 0, 1, label=1.0))

    threads = [threading.Thread(target=post, args=(s,)) for s in (first, second, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(ids) == list(range(1, 61))  # every write landed, each id once
    assert len(list(first.export_comparisons())) == 60
    first.close()
    second.close()


def test_a_sqlite_file_from_before_migrations_is_adopted(tmp_path: Path) -> None:
    old = tmp_path / "feedback.sqlite"
    with sqlite3.connect(old) as db:  # the schema the store created before Alembic
        db.executescript(
            "CREATE TABLE answers (id TEXT PRIMARY KEY, question TEXT NOT NULL,"
            " created REAL NOT NULL, result TEXT NOT NULL);"
            "CREATE TABLE comparisons (id INTEGER PRIMARY KEY, answer_id TEXT NOT NULL"
            " REFERENCES answers(id), a INTEGER NOT NULL, b INTEGER NOT NULL,"
            " preference TEXT NOT NULL CHECK (preference IN ('a', 'b', 'tie')), note TEXT,"
            " created REAL NOT NULL);"
            "CREATE TABLE demonstrations (id INTEGER PRIMARY KEY, question TEXT NOT NULL,"
            " episode TEXT NOT NULL, created REAL NOT NULL);"
        )
        db.execute(
            "INSERT INTO answers VALUES (?, ?, ?, ?)",
            ("ans_old", "q", 0.0, two_candidates("ans_old").model_dump_json()),
        )
        db.execute("INSERT INTO comparisons VALUES (1, 'ans_old', 0, 1, 'a', NULL, 0.0)")
    db.close()
    store = FeedbackStore(old)
    assert store.add_comparison("ans_old", 1, 0, label=1.0) == 2
    exported = list(store.export_comparisons())
    assert [row["answer_id"] for row in exported] == ["ans_old"] * 2
    assert exported[0]["label"] == 1.0  # an old row's label follows from its preference
    store.close()


def test_an_unreachable_database_is_a_clear_error_without_its_password() -> None:
    url = f"postgresql://webgpt:s3cret@127.0.0.1:{free_port()}/feedback"
    with pytest.raises(ConfigurationError, match="cannot open the feedback database") as error:
        FeedbackStore(url)
    assert "s3cret" not in str(error.value) and "127.0.0.1" in str(error.value)
    with pytest.raises(ConfigurationError, match="SQLite or PostgreSQL"):
        FeedbackStore("mysql://x@127.0.0.1/feedback")


@pytest.mark.slow  # starts a process
def test_a_kill_9_during_a_burst_of_feedback_loses_nothing_acknowledged(
    database: str | Path, offline_store: Path, policy_url: str, tmp_path: Path
) -> None:
    store = FeedbackStore(database)
    store.record_answer(two_candidates("ans_1"))
    store.close()
    port = free_port()
    env = {
        **os.environ,
        "WEBGPT_PORT": str(port),
        "WEBGPT_POLICY_URL": policy_url,
        "WEBGPT_POLICY_MODEL": "scripted",
        "WEBGPT_OFFLINE_STORE": str(offline_store),
        "WEBGPT_DATABASE_URL": database if isinstance(database, str) else "",
        "WEBGPT_FEEDBACK_DB": str(database) if isinstance(database, Path) else "",
        "WEBGPT_HOME": str(tmp_path / "home"),
    }
    log = (tmp_path / "service.log").open("wb")
    service = subprocess.Popen(
        [sys.executable, "-m", "webgpt.service.cli", "serve"], env=env, stdout=log, stderr=log
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not _answers(f"{base}/healthz"):
            assert service.poll() is None and time.monotonic() < deadline, (
                tmp_path / "service.log"
            ).read_text()
            time.sleep(0.1)
        acknowledged: list[int] = []

        def burst() -> None:
            with httpx.Client(timeout=10) as http:
                while True:
                    try:
                        response = http.post(
                            f"{base}/feedback", json={"answer_id": "ans_1", "better": 0, "worse": 1}
                        )
                    except httpx.TransportError:
                        return  # the service is gone
                    assert response.status_code == 200, response.text
                    acknowledged.append(response.json()["id"])

        clients = [threading.Thread(target=burst) for _ in range(8)]
        for client in clients:
            client.start()
        deadline = time.monotonic() + 60  # a burst thread that failed must not hang the test
        while len(acknowledged) < 50:
            assert time.monotonic() < deadline, f"{len(acknowledged)} feedback writes in 60 s"
            time.sleep(0.01)
        service.send_signal(signal.SIGKILL)
        for client in clients:
            client.join(timeout=30)
    finally:
        service.kill()
        service.wait()
        log.close()

    store = FeedbackStore(database)
    with store.engine.connect() as connection:
        stored = set(connection.execute(sa.select(COMPARISONS.c.id)).scalars())
    store.close()
    assert len(acknowledged) >= 50 and set(acknowledged) <= stored


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.TransportError:
        return False
