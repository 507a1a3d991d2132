"""Answers and human feedback: what the reward model and BC will train on.

Every answer the service gives is recorded (with its candidates' quotes and answers), so a
comparison only names an answer id and two candidates; the export rebuilds the full text
in the reward trainer's JSONL format (reward.data).

One schema on two databases (docs/deploy.md, "Feedback database"): a SQLite file, the
embedded default for one process, or PostgreSQL (WEBGPT_DATABASE_URL) shared by every
replica. SQLAlchemy Core writes the same statements for both; Alembic migrations in
service/migrations bring any database to the current schema when a store opens it. Each
write commits before it returns (SQLite: WAL with synchronous=FULL; PostgreSQL: its default
synchronous commit), so nothing acknowledged is lost when the process dies.

The service opens its store without connecting (`connect=False`): it starts while the
database is down and migrates when it first answers. A write or read that cannot reach the
database raises DatabaseUnavailable (503 with Retry-After); answers reach the database
through service.recording, never waiting on it. Exports stream rows from a server-side
cursor in batches, so their memory does not grow with the table.
"""

import contextlib
import json
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypedDict

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlalchemy.dialects import postgresql, sqlite

from webgpt.agent.answer import AnswerResult
from webgpt.agent.errors import ConfigurationError
from webgpt.learning.demonstrations import Demonstration
from webgpt.reward.data import PREFERENCE_LABELS
from webgpt.service.errors import DatabaseUnavailable, InvalidRequest

logger = logging.getLogger("webgpt.service")
MIGRATIONS = Path(__file__).parent / "migrations"
# Replicas starting together take turns migrating (PostgreSQL advisory lock id).
MIGRATION_LOCK = 0x77656267  # "webg"
CONNECT_TIMEOUT_S = 5  # an unreachable PostgreSQL host fails a write, it does not hang it
EXPORT_BATCH_ROWS = 500  # rows an export holds in memory at once

METADATA = sa.MetaData()
ANSWERS = sa.Table(
    "answers",
    METADATA,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("question", sa.Text, nullable=False),
    sa.Column("created", sa.Float, nullable=False),
    sa.Column("result", sa.Text, nullable=False),  # the AnswerResult as JSON
)
COMPARISONS = sa.Table(
    "comparisons",
    METADATA,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("answer_id", sa.Text, sa.ForeignKey("answers.id"), nullable=False),
    # Two candidate indexes of the answer; preference and label say which is better.
    sa.Column("a", sa.Integer, nullable=False),
    sa.Column("b", sa.Integer, nullable=False),
    sa.Column("preference", sa.Text, nullable=False),
    sa.Column("note", sa.Text),
    sa.Column("created", sa.Float, nullable=False),
    # Probability that a is the better answer (a graded comparison's soft label); NULL in
    # rows written before graded comparisons: their preference says it.
    sa.Column("label", sa.Float),
    sa.Column("ratings", sa.Text),  # JSON: the grade and each answer's ratings
    sa.CheckConstraint("preference IN ('a', 'b', 'tie')", name="preference_kind"),
)
DEMONSTRATIONS = sa.Table(
    "demonstrations",
    METADATA,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("question", sa.Text, nullable=False),
    # "commands": the posted commands and answer (replayed on export to record what each
    # showed); "demonstration": a whole record of learning.demonstrations, recorded as shown.
    sa.Column("format", sa.Text, nullable=False, server_default="commands"),
    sa.Column("episode", sa.Text, nullable=False),  # JSON of either
    sa.Column("created", sa.Float, nullable=False),
)


def is_url(database: str) -> bool:
    return "://" in database


def database_url(database: str | Path) -> str:
    """A SQLAlchemy URL: a path is a SQLite file (its folder created), a URL is kept."""
    if isinstance(database, Path):
        database.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{database}"
    if database.startswith(("postgresql://", "postgres://")):
        # The psycopg 3 driver; "postgres://" is the form many hosting services hand out.
        return "postgresql+psycopg://" + database.split("://", 1)[1]
    return database


class AnswerRecord(TypedDict):
    """One row of the answers table, as the answer spool keeps it (service.recording)."""

    id: str
    question: str
    created: float
    result: str  # the AnswerResult as JSON


def answer_record(result: AnswerResult) -> AnswerRecord:
    return {
        "id": result.id,
        "question": result.question,
        "created": time.time(),
        "result": result.model_dump_json(),
    }


class FeedbackStore:
    def __init__(self, database: str | Path, *, connect: bool = True) -> None:
        """connect: migrate now, and raise ConfigurationError if the database cannot be
        reached (the command line); without, the first use migrates (the service)."""
        try:
            url = sa.make_url(database_url(database))
        except sa.exc.ArgumentError:
            raise ConfigurationError("the feedback database URL cannot be parsed") from None
        if url.get_backend_name() not in ("sqlite", "postgresql"):
            shown = url.render_as_string(hide_password=True)
            raise ConfigurationError(f"the feedback database must be SQLite or PostgreSQL: {shown}")
        connect_args = {"connect_timeout": CONNECT_TIMEOUT_S} if url.drivername != "sqlite" else {}
        self.engine = sa.create_engine(url, pool_pre_ping=True, connect_args=connect_args)
        if self.engine.dialect.name == "sqlite":
            sa.event.listen(self.engine, "connect", _durable_sqlite)
        self._migrated = False
        self._migrating = threading.Lock()
        if connect:
            try:
                self.open()
            except DatabaseUnavailable as error:
                self.engine.dispose()
                raise ConfigurationError(
                    f"cannot open the feedback database {self.description}: {error.__cause__}"
                ) from None

    def open(self) -> None:
        """Bring the database to the current schema, once; DatabaseUnavailable while it
        cannot be reached (call again later)."""
        with self._migrating:
            if self._migrated:
                return
            with self._reached():
                self._migrate()
            self._migrated = True

    def ping(self) -> None:
        """DatabaseUnavailable unless the database answers (and is migrated)."""
        self.open()
        with self._reached(), self.engine.connect() as connection:
            connection.execute(sa.text("SELECT 1"))

    @contextlib.contextmanager
    def _reached(self) -> Iterator[None]:
        """Database outages as DatabaseUnavailable, the cause kept for logs (not clients)."""
        try:
            yield
        except (sa.exc.OperationalError, sa.exc.InterfaceError, sa.exc.TimeoutError) as error:
            cause = error.orig if isinstance(error, sa.exc.DBAPIError) else error
            raise DatabaseUnavailable(
                "the feedback database is unavailable; retry later"
            ) from cause

    @contextlib.contextmanager
    def _connection(self, write: bool) -> Iterator[sa.Connection]:
        """A connection to the migrated database: a transaction committed on exit to write."""
        self.open()
        with self._reached(), self.engine.begin() if write else self.engine.connect() as connection:
            yield connection

    @property
    def description(self) -> str:
        """The URL without its password, for logs and errors."""
        return self.engine.url.render_as_string(hide_password=True)

    def _migrate(self) -> None:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        with self.engine.begin() as connection:
            if connection.dialect.name == "postgresql":
                connection.execute(sa.select(sa.func.pg_advisory_xact_lock(MIGRATION_LOCK)))
            config.attributes["connection"] = connection
            command.upgrade(config, "head")

    def record_answer(self, result: AnswerResult) -> None:
        self.record_answers([answer_record(result)])

    def record_answers(self, records: Sequence[AnswerRecord]) -> None:
        """Write answer records in one transaction. A record written again (a spool replayed
        after a crash) replaces its row: never two rows for one answer."""
        if not records:
            return
        insert = (postgresql if self.engine.dialect.name == "postgresql" else sqlite).insert
        statement = insert(ANSWERS)
        statement = statement.on_conflict_do_update(
            index_elements=[ANSWERS.c.id],
            set_={"question": statement.excluded.question, "result": statement.excluded.result},
        )
        with self._connection(write=True) as connection:
            connection.execute(statement, [dict(record) for record in records])

    def add_comparison(
        self,
        answer_id: str,
        a: int,
        b: int,
        *,
        label: float,
        note: str | None = None,
        ratings: dict[str, Any] | None = None,
    ) -> int:
        """Candidates a and b of an answer compared; label = probability that a is better."""
        result = self._answer(answer_id)
        count = len(result["candidates"])
        if not (0 <= a < count and 0 <= b < count) or a == b:
            raise InvalidRequest(f"candidates must be two different indexes below {count}")
        for index in (a, b):
            if not result["candidates"][index]["answer"]:
                raise InvalidRequest(f"candidate {index} has no answer to compare")
        row = {
            "answer_id": answer_id,
            "a": a,
            "b": b,
            "preference": "a" if label > 0.5 else "b" if label < 0.5 else "tie",
            "label": label,
            "ratings": json.dumps(ratings) if ratings is not None else None,
            "note": note,
            "created": time.time(),
        }
        with self._connection(write=True) as connection:
            inserted = connection.execute(
                COMPARISONS.insert().values(row).returning(COMPARISONS.c.id)
            )
            return int(inserted.scalar_one())

    def add_demonstration(self, question: str, episode: dict[str, Any]) -> int:
        """Posted commands and answer (replayed into a record on export)."""
        return self._add_demonstration(question, "commands", json.dumps(episode))

    def add_recorded_demonstration(self, demo: Demonstration) -> int:
        """A whole record, recorded as it was shown."""
        return self._add_demonstration(demo.question, "demonstration", demo.to_json())

    def _add_demonstration(self, question: str, format: str, episode: str) -> int:
        row = {"question": question, "format": format, "episode": episode, "created": time.time()}
        with self._connection(write=True) as connection:
            inserted = connection.execute(
                DEMONSTRATIONS.insert().values(row).returning(DEMONSTRATIONS.c.id)
            )
            return int(inserted.scalar_one())

    def demonstrated_questions(self) -> set[str]:
        with self._connection(write=False) as connection:
            rows = connection.execute(sa.select(DEMONSTRATIONS.c.question).distinct()).all()
        return {question for (question,) in rows}

    def _answer(self, answer_id: str) -> dict[str, Any]:
        with self._connection(write=False) as connection:
            found = connection.execute(
                sa.select(ANSWERS.c.result).where(ANSWERS.c.id == answer_id)
            ).scalar_one_or_none()
        if found is None:
            raise InvalidRequest(f"unknown answer id {answer_id!r}")
        result: dict[str, Any] = json.loads(found)
        return result

    def export_comparisons(self) -> Iterator[dict[str, Any]]:
        """Rows in the reward trainer's JSONL format (reward.data, "our own")."""
        columns = COMPARISONS.c
        query = (
            sa.select(
                columns.a,
                columns.b,
                columns.preference,
                columns.label,
                columns.ratings,
                ANSWERS.c.result,
            )
            .join(ANSWERS, ANSWERS.c.id == COMPARISONS.c.answer_id)
            .order_by(COMPARISONS.c.id)
        )
        for a, b, preference, label, ratings, result_json in self._stream(query):
            result = json.loads(result_json)
            sides = []
            for index in (a, b):
                candidate = result["candidates"][index]
                quotes = [
                    {k: r[k] for k in ("title", "domain", "url", "extract")}
                    for r in candidate["references"]
                ]
                sides.append({"quotes": quotes, "answer": candidate["answer"]})
            row = {
                # what the compared answers answer: a follow-up as it was made standalone
                "question": result.get("question_asked") or result["question"],
                "a": sides[0],
                "b": sides[1],
                "preference": preference,
                "label": PREFERENCE_LABELS[preference] if label is None else label,
                # The models that made the compared answers, so a comparison can be traced.
                "answer_id": result["id"],
                "versions": result["versions"],
            }
            if ratings is not None:
                row["ratings"] = json.loads(ratings)
            yield row

    def export_demonstrations(self) -> Iterator[tuple[int, str, str, dict[str, Any]]]:
        """(id, question, format, the stored JSON) for every stored demonstration."""
        columns = DEMONSTRATIONS.c
        query = sa.select(columns.id, columns.question, columns.format, columns.episode)
        for row_id, question, format, episode in self._stream(query.order_by(columns.id)):
            yield int(row_id), question, format, json.loads(episode)

    def _stream(self, query: sa.Select[Any]) -> Iterator[Any]:
        """The rows of a query from a server-side cursor (PostgreSQL; SQLite steps its own
        cursor), EXPORT_BATCH_ROWS at a time: memory stays flat however many rows there are."""
        with self._connection(write=False) as connection:
            result = connection.execution_options(
                stream_results=True, yield_per=EXPORT_BATCH_ROWS
            ).execute(query)
            yield from result

    def close(self) -> None:
        self.engine.dispose()


def _durable_sqlite(connection: Any, _record: Any) -> None:
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=FULL")
    connection.execute("PRAGMA foreign_keys=ON")
    connection.execute("PRAGMA busy_timeout=10000")  # another process or replica writing
