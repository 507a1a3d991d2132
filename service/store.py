"""Answers and human feedback in SQLite: what the reward model and BC will train on.

Every answer the service gives is recorded (with its candidates' quotes and answers), so a
comparison only names an answer id and two candidates; the export rebuilds the full text
in the reward trainer's JSONL format (reward.data). WAL mode and a commit per write: nothing
accepted is lost across restarts.
"""

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent.answer import AnswerResult
from service.errors import InvalidRequest

SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    id TEXT PRIMARY KEY, question TEXT NOT NULL, created REAL NOT NULL, result TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS comparisons (
    id INTEGER PRIMARY KEY, answer_id TEXT NOT NULL REFERENCES answers(id),
    a INTEGER NOT NULL, b INTEGER NOT NULL,
    preference TEXT NOT NULL CHECK (preference IN ('a', 'b', 'tie')),
    note TEXT, created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS demonstrations (
    id INTEGER PRIMARY KEY, question TEXT NOT NULL, episode TEXT NOT NULL, created REAL NOT NULL
);
"""


class FeedbackStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()

    def record_answer(self, result: AnswerResult) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?)",
                (result.id, result.question, time.time(), result.model_dump_json()),
            )

    def add_comparison(
        self, answer_id: str, better: int, worse: int, tie: bool, note: str | None
    ) -> int:
        result = self._answer(answer_id)
        count = len(result["candidates"])
        if not (0 <= better < count and 0 <= worse < count) or better == worse:
            raise InvalidRequest(f"candidates must be two different indexes below {count}")
        for index in (better, worse):
            if not result["candidates"][index]["answer"]:
                raise InvalidRequest(f"candidate {index} has no answer to compare")
        with self._lock:
            cursor = self._db.execute(
                "INSERT INTO comparisons (answer_id, a, b, preference, note, created) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (answer_id, better, worse, "tie" if tie else "a", note, time.time()),
            )
        return int(cursor.lastrowid or 0)

    def add_demonstration(self, question: str, episode: dict[str, Any]) -> int:
        with self._lock:
            cursor = self._db.execute(
                "INSERT INTO demonstrations (question, episode, created) VALUES (?, ?, ?)",
                (question, json.dumps(episode), time.time()),
            )
        return int(cursor.lastrowid or 0)

    def _answer(self, answer_id: str) -> dict[str, Any]:
        with self._lock:
            row = self._db.execute(
                "SELECT result FROM answers WHERE id = ?", (answer_id,)
            ).fetchone()
        if row is None:
            raise InvalidRequest(f"unknown answer id {answer_id!r}")
        result: dict[str, Any] = json.loads(row[0])
        return result

    def export_comparisons(self) -> Iterator[dict[str, Any]]:
        """Rows in the reward trainer's JSONL format (reward.data, "our own")."""
        with self._lock:
            rows = self._db.execute(
                "SELECT c.a, c.b, c.preference, a.result FROM comparisons c "
                "JOIN answers a ON a.id = c.answer_id ORDER BY c.id"
            ).fetchall()
        for a, b, preference, result_json in rows:
            result = json.loads(result_json)
            sides = []
            for index in (a, b):
                candidate = result["candidates"][index]
                quotes = [
                    {k: r[k] for k in ("title", "domain", "url", "extract")}
                    for r in candidate["references"]
                ]
                sides.append({"quotes": quotes, "answer": candidate["answer"]})
            yield {
                "question": result["question"],
                "a": sides[0],
                "b": sides[1],
                "preference": preference,
                # The models that made the compared answers, so a comparison can be traced.
                "answer_id": result["id"],
                "versions": result["versions"],
            }

    def export_demonstrations(self) -> Iterator[tuple[int, str, dict[str, Any]]]:
        """(id, question, the posted demonstration) for every stored demonstration."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, question, episode FROM demonstrations ORDER BY id"
            ).fetchall()
        for row_id, question, episode in rows:
            yield int(row_id), question, json.loads(episode)

    def close(self) -> None:
        self._db.close()
