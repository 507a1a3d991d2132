"""Creating demonstration sessions is atomic: creates that arrive together while the
database is being read still keep the per-key limit and never share a queued question.
The interleaving is forced, not hoped for: the store's read waits on a gate the test opens
once every create has started."""

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from webgpt.browser.web import Web, WebOptions
from webgpt.learning.demonstrations import Demonstration
from webgpt.service.demonstrating import DemonstrationSessions
from webgpt.service.errors import Overloaded, TooManySessions
from webgpt.service.protocol import SessionState
from webgpt.service.settings import ServiceSettings
from webgpt.service.store import FeedbackStore

QUESTIONS = [f"What is queued question {n}?" for n in range(6)]


class GatedStore:
    """A real FeedbackStore whose read of the demonstrated questions happens when it is
    called (as a database's does) and returns only once the gate is open."""

    def __init__(self, path: Path) -> None:
        self.store = FeedbackStore(path)
        self.gate = threading.Event()
        self.reading = threading.Event()  # set when a read has started

    def demonstrated_questions(self) -> set[str]:
        done = self.store.demonstrated_questions()
        self.reading.set()
        assert self.gate.wait(timeout=30), "the test never opened the gate"
        return done

    def add_recorded_demonstration(self, demo: Demonstration) -> int:
        return self.store.add_recorded_demonstration(demo)


@pytest.fixture
async def web(offline_store: Path) -> AsyncIterator[Web]:
    web = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
    yield web
    await web.aclose()


@pytest.fixture
def sessions(web: Web, tmp_path: Path) -> Callable[..., DemonstrationSessions]:
    queue = tmp_path / "questions.jsonl"
    rows = [{"question": q, "gold_answers": ["x"], "split": "train"} for q in QUESTIONS]
    queue.write_text("".join(json.dumps(row) + "\n" for row in rows))

    def build(store: GatedStore, **settings: int) -> DemonstrationSessions:
        return DemonstrationSessions(
            web,
            store,
            ServiceSettings(demo_questions=queue, **settings),  # type: ignore[arg-type]
        )

    return build


async def started(*calls: asyncio.Future[SessionState], store: GatedStore) -> None:
    """Return once a read is under way. Every call has started by then: each was scheduled
    before this and ran up to its first wait (the read, or its turn to create) at once."""
    for _ in range(30_000):  # polled, not waited for in a thread: the reads may hold them all
        if store.reading.is_set():
            break
        await asyncio.sleep(0.001)
    assert store.reading.is_set(), "no create reached the database"
    assert not any(call.done() for call in calls)


async def test_concurrent_creates_keep_the_limit_and_take_distinct_questions(
    sessions: Callable[..., DemonstrationSessions], tmp_path: Path
) -> None:
    store = GatedStore(tmp_path / "feedback.sqlite")
    demos = sessions(store, max_demo_sessions_per_key=2)
    calls = [asyncio.ensure_future(demos.create("key-one", None, True)) for _ in range(5)]
    await started(*calls, store=store)
    store.gate.set()
    results = await asyncio.gather(*calls, return_exceptions=True)

    opened = [r for r in results if isinstance(r, SessionState)]
    refused = [r for r in results if isinstance(r, TooManySessions)]
    assert (len(opened), len(refused)) == (2, 3), results
    assert sorted(s.question for s in opened) == QUESTIONS[:2]  # the queue's first two
    assert all("answer or abandon one" in str(error) for error in refused)
    # Another key has its own slots, and the next question.
    other = await demos.create("key-two", None, True)
    assert other.question == QUESTIONS[2]
    await demos.aclose()
    store.store.close()


async def test_the_global_limit_holds_across_keys_under_concurrent_creates(
    sessions: Callable[..., DemonstrationSessions], tmp_path: Path
) -> None:
    store = GatedStore(tmp_path / "feedback.sqlite")
    demos = sessions(store, max_demo_sessions=3)
    calls = [asyncio.ensure_future(demos.create(f"key-{n}", None, True)) for n in range(5)]
    await started(*calls, store=store)
    store.gate.set()
    results = await asyncio.gather(*calls, return_exceptions=True)

    opened = [r for r in results if isinstance(r, SessionState)]
    assert sorted(s.question for s in opened) == QUESTIONS[:3], results
    assert sum(isinstance(r, Overloaded) for r in results) == 2
    await demos.aclose()
    store.store.close()


async def test_a_question_stored_while_another_create_reads_is_not_handed_out_again(
    sessions: Callable[..., DemonstrationSessions], tmp_path: Path
) -> None:
    store = GatedStore(tmp_path / "feedback.sqlite")
    demos = sessions(store)
    store.gate.set()
    first = await demos.create("key-one", None, True)
    store.gate.clear()
    store.reading.clear()
    # The second create's read sees the database before the first is stored; the first's
    # session then closes before the read returns.
    second = asyncio.ensure_future(demos.create("key-two", None, True))
    await started(second, store=store)
    await demos.step("key-one", first.id, "End: Nonsense")
    await demos.answer("key-one", first.id, None)
    store.gate.set()
    assert (first.question, (await second).question) == (QUESTIONS[0], QUESTIONS[1])
    await demos.aclose()
    store.store.close()
