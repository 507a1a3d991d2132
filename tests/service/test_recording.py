"""Answer records through the spool (service.recording): on disk before the answer returns,
in the database once it answers, nothing lost across an outage or a crash, none twice."""

import asyncio
import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.postgres import PostgresServer, fresh_database
from tests.service.test_store import two_candidates
from webgpt.service.errors import DatabaseUnavailable
from webgpt.service.metrics import Metrics
from webgpt.service.recording import AnswerRecorder, AnswerSpool, default_spool
from webgpt.service.store import ANSWERS, FeedbackStore, answer_record


def answer_rows(store: FeedbackStore) -> list[str]:
    with store.engine.connect() as connection:
        return list(connection.execute(sa.select(ANSWERS.c.id).order_by(ANSWERS.c.id)).scalars())


def metric(metrics: Metrics, outcome: str) -> float:
    value = metrics.registry.get_sample_value("webgpt_answer_records_total", {"outcome": outcome})
    return value or 0.0


def test_the_spool_keeps_records_until_their_batch_is_written(tmp_path: Path) -> None:
    spool = AnswerSpool(tmp_path / "spool.jsonl", max_bytes=1 << 20)
    assert spool.append(answer_record(two_candidates("ans_1")))
    assert spool.append(answer_record(two_candidates("ans_2")))
    batch = spool.take()
    assert [r["id"] for r in batch] == ["ans_1", "ans_2"]
    assert spool.append(answer_record(two_candidates("ans_3")))  # goes to a new spool
    assert spool.pending() == 3
    assert [r["id"] for r in spool.take()] == ["ans_1", "ans_2"]  # not written: taken again
    spool.written()
    assert spool.pending() == 1
    assert [r["id"] for r in spool.take()] == ["ans_3"]
    spool.written()
    assert spool.take() == [] and spool.pending() == 0


def test_a_full_spool_refuses_a_record_and_keeps_the_others(tmp_path: Path) -> None:
    record = answer_record(two_candidates("ans_1"))
    size = len(json.dumps(record)) + 1
    spool = AnswerSpool(tmp_path / "spool.jsonl", max_bytes=2 * size + 10)
    assert spool.append(record)
    assert spool.append(answer_record(two_candidates("ans_2")))
    assert not spool.append(answer_record(two_candidates("ans_3")))
    assert [r["id"] for r in spool.take()] == ["ans_1", "ans_2"]


def test_a_torn_last_line_is_cut_at_start_and_the_next_record_is_whole(tmp_path: Path) -> None:
    path = tmp_path / "spool.jsonl"
    whole = json.dumps(answer_record(two_candidates("ans_1"))) + "\n"
    path.write_text(whole + '{"id": "ans_torn", "quest')  # the process died mid-append
    spool = AnswerSpool(path, max_bytes=1 << 20)
    assert spool.pending() == 1
    assert spool.append(answer_record(two_candidates("ans_2")))
    assert [r["id"] for r in spool.take()] == ["ans_1", "ans_2"]


def test_the_default_spool_belongs_to_its_database(tmp_path: Path) -> None:
    sqlite_store = FeedbackStore(tmp_path / "feedback.sqlite", connect=False)
    assert default_spool(sqlite_store) == tmp_path / "feedback.sqlite.answer-spool.jsonl"
    one = default_spool(FeedbackStore("postgresql://u:pw@db-a/feedback", connect=False))
    other = default_spool(FeedbackStore("postgresql://u:pw@db-b/feedback", connect=False))
    assert one != other
    assert "db-a" not in one.name and "pw" not in one.name  # no host nor password in a name


async def test_a_batch_left_by_a_crash_is_written_once(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.sqlite")
    spool = AnswerSpool(tmp_path / "spool.jsonl", max_bytes=1 << 20)
    spool.append(answer_record(two_candidates("ans_1")))
    spool.take()  # the batch file exists; the process "dies" before it is removed
    store.record_answer(two_candidates("ans_1"))  # ... after the batch reached the database

    restarted = AnswerSpool(tmp_path / "spool.jsonl", max_bytes=1 << 20)
    recorder = AnswerRecorder(store, restarted, Metrics(), retry_s=0.05)
    await recorder.flush()
    assert answer_rows(store) == ["ans_1"]  # written again: replaced, not duplicated
    assert restarted.pending() == 0 and not restarted.batch_path.exists()


async def test_answers_are_spooled_while_the_database_is_down_and_written_when_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = PostgresServer()
    try:
        server.start()
        url = fresh_database(server.url)
        server.stop()  # down before the service ever migrated it
        store = FeedbackStore(url, connect=False)
        metrics = Metrics()
        recorder = AnswerRecorder(
            store, AnswerSpool(tmp_path / "spool.jsonl", 1 << 20), metrics, retry_s=0.05
        )
        writer = asyncio.create_task(recorder.run())
        try:
            for i in range(3):
                await recorder.record(two_candidates(f"ans_{i}"))  # returns: on disk
            with pytest.raises(DatabaseUnavailable):
                await recorder.flush()
            assert recorder.database_up is False
            assert recorder.spool.pending() == 3
            assert metric(metrics, "spooled") == 3 and metric(metrics, "replayed") == 0

            await asyncio.to_thread(server.start)
            # The writer retries every 0.05 s; it migrates, writes, and says the database is
            # up once the spool is empty (not the moment the last batch leaves it). A minute
            # bounds a hang on a loaded machine, it times nothing.
            for _ in range(1200):
                if recorder.database_up:
                    break
                await asyncio.sleep(0.05)
            assert recorder.spool.pending() == 0
            assert answer_rows(store) == ["ans_0", "ans_1", "ans_2"]
            assert metric(metrics, "replayed") == 3
            assert recorder.database_up is True
            logged = [r.getMessage() for r in caplog.records]
            assert sum("feedback database unavailable" in m for m in logged) == 1  # once
            assert any("feedback database back: 3 spooled" in m for m in logged)

            await recorder.record(two_candidates("ans_3"))
            await recorder.flush()
            assert answer_rows(store) == ["ans_0", "ans_1", "ans_2", "ans_3"]
        finally:
            writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)
            store.close()
    finally:
        server.remove()


def test_store_writes_raise_database_unavailable_while_it_is_down(tmp_path: Path) -> None:
    server = PostgresServer()
    try:
        server.start()
        store = FeedbackStore(fresh_database(server.url))
        store.record_answer(two_candidates("ans_1"))
        server.stop()
        with pytest.raises(DatabaseUnavailable) as raised:
            store.add_comparison("ans_1", 0, 1, label=1.0)
        assert "postgres" not in str(raised.value)  # no URL for a client
        with pytest.raises(DatabaseUnavailable):
            store.ping()
        server.start()
        assert store.add_comparison("ans_1", 0, 1, label=1.0) == 1  # the pool reconnects
        store.close()
    finally:
        server.remove()
