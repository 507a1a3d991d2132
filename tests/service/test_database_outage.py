"""The service on a real PostgreSQL server that goes away: answers go on (spooled),
feedback gets 503 with Retry-After, /readyz says so, and when the database is back the
spooled records are written, once each. The service also starts with the database down."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.agent.fake_policy import Script
from tests.postgres import PostgresServer, fresh_database
from tests.servers import serve, wait_until
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.browser.web import Web, WebOptions
from webgpt.service.app import create_app
from webgpt.service.metrics import Metrics
from webgpt.service.serving import AnswerService
from webgpt.service.settings import ServiceSettings
from webgpt.service.store import FeedbackStore

pytestmark = pytest.mark.slow  # each test starts a PostgreSQL server

QUESTION = {"question": "crow corvus"}


@pytest.fixture
def database() -> Iterator[tuple[PostgresServer, str]]:
    server = PostgresServer()
    try:
        server.start()
        yield server, fresh_database(server.url)
    finally:
        server.remove()


@contextmanager
def service_on(
    url: str, offline_store: Path, policy_url: str, spool: Path
) -> Iterator[tuple[str, FeedbackStore]]:
    settings = ServiceSettings(
        policy_url=policy_url,
        policy_model="scripted",
        database_url=url,  # type: ignore[arg-type]
        answer_spool=spool,
        database_retry_s=0.1,
        readiness_check_s=0.1,
        retry_after_s=3,
    )
    web = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
    policy = OpenAIPolicy(policy_url, "scripted", backoff_s=0.01, max_retries=1)
    store = FeedbackStore(url, connect=False)  # as `webgpt serve` opens it
    service = AnswerService(settings, web, policy, None, Metrics(), store)
    with serve(create_app(service)) as base:
        yield base, store


def answers_in(url: str) -> list[str]:
    """The answer ids in the database, read directly (no store: it would migrate it)."""
    with psycopg.connect(url) as connection:
        try:
            rows = connection.execute("SELECT id FROM answers ORDER BY id").fetchall()
        except psycopg.errors.UndefinedTable:
            return []
    return [answer_id for (answer_id,) in rows]


def metric(base: str, name: str) -> float:
    for line in httpx.get(f"{base}/metrics").text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_answers_survive_a_database_outage_and_reach_it_once_it_is_back(
    database: tuple[PostgresServer, str],
    offline_store: Path,
    policy_url: str,
    script: Script,
    tmp_path: Path,
) -> None:
    server, url = database
    with service_on(url, offline_store, policy_url, tmp_path / "spool.jsonl") as (base, _):
        before = httpx.post(f"{base}/answer", json=QUESTION, timeout=60).json()
        wait_until(lambda: answers_in(url) == [before["id"]])

        server.stop()
        during = [httpx.post(f"{base}/answer", json=QUESTION, timeout=60) for _ in range(2)]
        streamed = httpx.post(f"{base}/answer", json={**QUESTION, "stream": True}, timeout=60)
        assert [r.status_code for r in during] == [200, 200]
        assert '"type":"final"' in streamed.text.replace(" ", "")

        feedback = httpx.post(
            f"{base}/feedback", json={"answer_id": before["id"], "better": 0, "worse": 0}
        )
        assert feedback.status_code == 503
        assert feedback.headers["retry-after"] == "3"
        assert feedback.json()["error"]["type"] == "database_unavailable"
        demonstration = httpx.post(
            f"{base}/feedback",
            json={"kind": "demonstration", "question": "q", "commands": ["Top"], "answer": "A."},
        )
        assert demonstration.status_code == 503

        def database_down() -> bool:
            ready = httpx.get(f"{base}/readyz")
            check = ready.json()["checks"]["database"]
            return ready.status_code == 200 and not check["ok"] and check["spooled"] == 3

        wait_until(database_down)  # reported, but answering does not need it
        assert "postgres" not in httpx.get(f"{base}/readyz").text  # no internal address
        assert metric(base, "webgpt_answer_spool_records") == 3

        server.start()
        ids = {before["id"], *(r.json()["id"] for r in during)}
        wait_until(lambda: len(answers_in(url)) == 4)
        assert ids < set(answers_in(url))  # the stream's answer is the fourth
        wait_until(lambda: httpx.get(f"{base}/readyz").json()["checks"]["database"]["ok"])
        # The rows are visible at the database's commit, the replay is counted after the
        # spool forgets them: wait for the count, not the rows.
        replayed = 'webgpt_answer_records_total{outcome="replayed"}'
        wait_until(lambda: metric(base, replayed) >= 4)
        assert metric(base, replayed) == 4
        assert metric(base, 'webgpt_answer_records_total{outcome="spooled"}') == 4
        assert metric(base, "webgpt_answer_spool_records") == 0


def test_the_service_starts_with_its_database_down_and_migrates_when_it_comes_back(
    database: tuple[PostgresServer, str],
    offline_store: Path,
    policy_url: str,
    script: Script,
    tmp_path: Path,
) -> None:
    server, url = database
    server.stop()  # a fresh database, never migrated, unreachable at start
    with service_on(url, offline_store, policy_url, tmp_path / "spool.jsonl") as (base, _):
        assert httpx.get(f"{base}/readyz").json()["status"] == "ready"
        answer = httpx.post(f"{base}/answer", json=QUESTION, timeout=60)
        assert answer.status_code == 200
        server.start()
        wait_until(lambda: answers_in(url) == [answer.json()["id"]])
        # The answer is in: a comparison on it is taken.
        two = httpx.post(
            f"{base}/feedback", json={"answer_id": answer.json()["id"], "better": 0, "worse": 0}
        )
        assert two.status_code == 422  # one candidate: refused for what it says, not 503
