"""Answer records on their way to the feedback database: answering never waits on it.

Every answer is appended to a local spool file (one JSON line, fsynced before the answer
is returned) and a task the service owns writes the spool to the database, at once while
the database answers and every `database_retry_s` while it does not. So a database outage
costs answers nothing: their records wait in the spool, and are written when it is back.

Nothing lost, none written twice:
- a record is in the spool (on disk) before its answer reaches the client;
- the writer first renames the spool to a batch file (new answers go to a new spool), writes
  the batch in one transaction, and only then removes the batch file; a crash in between
  leaves the batch, written again on the next start;
- writing a record again replaces its row (store.record_answers: keyed by answer id).

The spool is bounded (`answer_spool_max_bytes`): past the bound a record is dropped,
counted (`webgpt_answer_records_total{outcome="dropped"}`) and logged, and the answer is
still served. A torn last line (the process died mid-append) is cut at start and logged.
"""

import asyncio
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from webgpt.agent.answer import AnswerResult
from webgpt.infra.settings import webgpt_home
from webgpt.service.errors import DatabaseUnavailable
from webgpt.service.metrics import Metrics
from webgpt.service.store import AnswerRecord, FeedbackStore, answer_record

logger = logging.getLogger("webgpt.service")
WRITE_BATCH_RECORDS = 500  # records one transaction writes (a replay after a long outage)


def default_spool(store: FeedbackStore) -> Path:
    """Beside a SQLite file; for a PostgreSQL database, a file of its own in $WEBGPT_HOME
    (named by the URL's digest: the spool of one database never replays into another)."""
    url = store.engine.url
    if url.get_backend_name() == "sqlite" and url.database:
        database = Path(url.database)
        return database.with_name(database.name + ".answer-spool.jsonl")
    digest = hashlib.sha256(url.render_as_string(hide_password=False).encode()).hexdigest()
    return webgpt_home() / f"answer-spool-{digest[:16]}.jsonl"


class AnswerSpool:
    """An append-only file of answer records, fsynced; safe across threads and across
    processes on one host (a lock file), so replicas may share one."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.batch_path = path.with_name(path.name + ".batch")
        self.lock_path = path.with_name(path.name + ".lock")
        self.max_bytes = max_bytes
        self._threads = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock():
            _cut_torn_line(path)
        self._pending = sum(_count_lines(p) for p in (path, self.batch_path))
        self._batch = 0  # records in the batch file last taken

    def append(self, record: AnswerRecord) -> bool:
        """Append and fsync one record; False (nothing written) when the spool is full."""
        line = (json.dumps(record) + "\n").encode()
        with self._lock():
            if self._pending_bytes() + len(line) > self.max_bytes:
                return False
            with self.path.open("ab") as spool:
                spool.write(line)
                spool.flush()
                os.fsync(spool.fileno())
            self._pending += 1
        return True

    def take(self) -> list[AnswerRecord]:
        """The records to write next: the batch left from before, else the spool moved to a
        new batch (answers appended from now on go to a new spool)."""
        with self._lock():
            if not self.batch_path.exists():
                if not self.path.exists():
                    return []
                os.replace(self.path, self.batch_path)
                _fsync_folder(self.path.parent)
            self._batch = _count_lines(self.batch_path)
        return _read_records(self.batch_path)

    def written(self) -> None:
        """The batch is in the database: remove it."""
        with self._lock():
            self.batch_path.unlink(missing_ok=True)
            _fsync_folder(self.path.parent)
            self._pending -= self._batch
            self._batch = 0

    def pending(self) -> int:
        """Records this process has not yet written to the database (spool and batch)."""
        return self._pending

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        with self._threads, self.lock_path.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _pending_bytes(self) -> int:
        return sum(p.stat().st_size for p in (self.path, self.batch_path) if p.exists())


class AnswerRecorder:
    """Spools answer records and writes them to the database in the background."""

    def __init__(
        self, store: FeedbackStore, spool: AnswerSpool, metrics: Metrics, retry_s: float
    ) -> None:
        self.store = store
        self.spool = spool
        self.metrics = metrics
        self.retry_s = retry_s
        self.database_up: bool | None = None  # None: not tried yet
        self._wake = asyncio.Event()
        self._writing = asyncio.Lock()
        metrics.spooled_answers.set_function(spool.pending)

    async def record(self, result: AnswerResult) -> None:
        """The answer's record on disk; dropped (counted, logged) when the spool is full or
        cannot be written: the answer is served either way."""
        try:
            spooled = await asyncio.to_thread(self.spool.append, answer_record(result))
        except OSError:
            logger.exception("answer %s not recorded: cannot write %s", result.id, self.spool.path)
            spooled = False
        else:
            if not spooled:
                logger.error(
                    "answer %s not recorded: the answer spool %s is full (%d bytes); is the "
                    "feedback database down?",
                    result.id,
                    self.spool.path,
                    self.spool.max_bytes,
                )
        if spooled:
            self.metrics.answer_records.labels("spooled").inc()
            self._wake.set()
        else:
            self.metrics.answer_records.labels("dropped").inc()

    async def flush(self) -> None:
        """Write every spooled record now; DatabaseUnavailable while the database is down.
        Feedback calls this first, so a comparison finds the answer it names."""
        async with self._writing:
            written = 0
            while records := await asyncio.to_thread(self.spool.take):
                try:
                    for start in range(0, len(records), WRITE_BATCH_RECORDS):
                        chunk = records[start : start + WRITE_BATCH_RECORDS]
                        await asyncio.to_thread(self.store.record_answers, chunk)
                except DatabaseUnavailable as error:
                    self._went_down(error)
                    raise
                await asyncio.to_thread(self.spool.written)
                self.metrics.answer_records.labels("replayed").inc(len(records))
                written += len(records)
            if self.database_up is False:
                logger.warning("feedback database back: %d spooled answer records written", written)
            self.database_up = True

    def _went_down(self, error: DatabaseUnavailable) -> None:
        """Log an outage once, when it starts (the cause, which clients never see)."""
        if self.database_up is not False:
            logger.warning(
                "feedback database unavailable (answers are spooled to %s): %s",
                self.spool.path,
                error.__cause__,
            )
        self.database_up = False

    async def run(self) -> None:
        """Until cancelled: migrate the database once it answers, and keep the spool
        written to it."""
        while True:
            self._wake.clear()
            try:
                await asyncio.to_thread(self.store.open)
                await self.flush()
            except DatabaseUnavailable as error:
                self._went_down(error)
                await asyncio.sleep(self.retry_s)
                continue
            except Exception:
                logger.exception("writing answer records failed")
                await asyncio.sleep(self.retry_s)
                continue
            await self._wake.wait()


def _read_records(path: Path) -> list[AnswerRecord]:
    records = []
    for number, line in enumerate(path.read_bytes().splitlines(), 1):
        try:
            records.append(json.loads(line))
        except ValueError:  # not written by append (the torn tail is cut at start)
            logger.error("answer spool %s line %d is not a record; skipped", path, number)
    return records


def _cut_torn_line(path: Path) -> None:
    """Remove a last line without its newline (an append cut by a crash), so the next
    append starts a line of its own."""
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    keep = data.rfind(b"\n") + 1
    logger.error("answer spool %s ends in a torn record (%d bytes); cut", path, len(data) - keep)
    with path.open("r+b") as spool:
        spool.truncate(keep)
        os.fsync(spool.fileno())


def _count_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _fsync_folder(folder: Path) -> None:
    """A rename or unlink is durable once the folder is synced."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
