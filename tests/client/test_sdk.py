"""The SDK against the real app on loopback (and httpx.MockTransport for transport faults)."""

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from webgpt_client import (
    APIConnectionError,
    APITimeoutError,
    AsyncClient,
    AuthenticationError,
    Client,
    ConflictError,
    DeadlineExceededError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
    UnprocessableEntityError,
)
from webgpt_client.types import Readiness

from tests.agent.fake_policy import Script
from tests.client.fake_reward import reward_checkpoint, shipped_reward_model, shortest_wins_app
from tests.servers import free_port, serve

EXAMPLES = Path(__file__).parent.parent.parent / "client" / "examples"
QUESTION = "crow corvus"
ANSWER = "Crows are corvids [1]."
REFERENCE = "[1] Crow — https://en.wikipedia.org/wiki/Crow"
CROW_QUOTE = "Crows are birds of the genus Corvus."
# A person's demonstration on the test web: search, open the first result, quote it.
BROWSING = ("Search crow corvus", "Clicked on link 0", f"Quote: {CROW_QUOTE}")


def test_sync_answer_and_stream(service_url) -> None:  # type: ignore[no-untyped-def]
    with service_url(api_keys="sdk-key") as base, Client(base, api_key="sdk-key") as client:
        result = client.answer(QUESTION, include_trace=True)
        assert result.answer == "Crows are corvids [1]."
        assert result.references[0].url == "https://en.wikipedia.org/wiki/Crow"
        assert result.usage.actions == 4 and result.trace
        with client.stream(QUESTION) as events:
            kinds = [event.type for event in events]
        assert kinds[0] == "episode_start" and kinds[-1] == "final" and "action" in kinds


async def test_async_answer_and_stream(service_url) -> None:  # type: ignore[no-untyped-def]
    with service_url() as base:
        async with AsyncClient(base) as client:
            result = await client.answer(QUESTION)
            assert result.answer == "Crows are corvids [1]."
            finals = []
            async with await client.stream(QUESTION) as events:
                async for event in events:
                    if event.type == "final":
                        finals.append(event.result.answer)  # type: ignore[attr-defined]
            assert finals == ["Crows are corvids [1]."]


def test_typed_errors_carry_status_and_request_id(service_url) -> None:  # type: ignore[no-untyped-def]
    with service_url(api_keys="right") as base:
        with Client(base, api_key="wrong") as client, pytest.raises(AuthenticationError) as caught:
            client.answer(QUESTION)
        assert caught.value.status_code == 401 and caught.value.type == "unauthorized"
        assert caught.value.request_id
        with Client(base, api_key="right") as client:
            for blank in ("", "  "):
                with pytest.raises(UnprocessableEntityError, match="question"):
                    client.answer(blank)
    with (
        service_url(reward_model="none") as base,
        Client(base) as client,
        pytest.raises(UnprocessableEntityError, match="one episode"),
    ):
        client.answer(QUESTION, n=2)


def test_best_of_n_with_the_shipped_reward_model_sync_and_async(
    service_url,  # type: ignore[no-untyped-def]
    script: Script,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A service with no reward model configured picks the best of n with the shipped one
    (loaded on first use), named in the result, for both clients and for a stream."""
    from webgpt.agent.model import DEFAULT_REWARD_VERSION

    longer = "Crows, birds that remember faces for years, are corvids [1]."
    script.answers = [longer, ANSWER] * 20
    with (
        shipped_reward_model(tmp_path / "home", monkeypatch) as reward,
        service_url(**reward) as base,
    ):
        with Client(base) as client:
            result = client.answer(QUESTION, n=4)
            with client.stream(QUESTION, n=2) as events:
                final = [e for e in events if e.type == "final"]

        async def best_of_two() -> str:
            async with AsyncClient(base) as client:
                return str((await client.answer(QUESTION, n=2)).versions["reward"])

        async_reward = asyncio.run(best_of_two())
    assert result.answer == ANSWER and len(result.candidates) == 4
    assert result.versions["reward"] == DEFAULT_REWARD_VERSION
    assert final[0].result.answer == ANSWER  # type: ignore[attr-defined]
    assert final[0].result.versions["reward"] == DEFAULT_REWARD_VERSION  # type: ignore[attr-defined]
    assert async_reward == DEFAULT_REWARD_VERSION


def test_base_url_and_key_from_the_environment(
    service_url, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    with service_url(api_keys="env-key") as base:
        monkeypatch.setenv("WEBGPT_BASE_URL", base)
        monkeypatch.setenv("WEBGPT_API_KEY", "env-key")
        with Client() as client:
            assert client.answer(QUESTION).answer == "Crows are corvids [1]."


def test_retries_on_429_and_503_honour_retry_after() -> None:
    answers = iter(
        [
            httpx.Response(
                503,
                json={"error": {"type": "policy_unavailable", "message": "down"}},
                headers={"Retry-After": "0"},
            ),
            httpx.Response(
                429,
                json={"error": {"type": "overloaded", "message": "busy"}},
                headers={"Retry-After": "0"},
            ),
            httpx.Response(
                200,
                json={
                    "id": "ans_1",
                    "question": "q",
                    "answer": "a [1]",
                    "references": [],
                    "candidates": [],
                    "best": None,
                    "versions": {},
                    "timings": {},
                    "usage": {
                        "prompt_tokens": 1,
                        "completion_tokens": 1,
                        "actions": 1,
                        "pages_fetched": 0,
                    },
                },
            ),
        ]
    )
    transport = httpx.MockTransport(lambda request: next(answers))
    with Client("http://service.test", http_client=httpx.Client(transport=transport)) as client:
        assert client.answer("q").answer == "a [1]"

    busy = httpx.MockTransport(
        lambda request: httpx.Response(
            429,
            json={"error": {"type": "overloaded", "message": "busy"}},
            headers={"Retry-After": "0", "x-request-id": "r1"},
        )
    )
    with (
        Client(
            "http://service.test", max_retries=1, http_client=httpx.Client(transport=busy)
        ) as client,
        pytest.raises(RateLimitError) as caught,
    ):
        client.answer("q")
    assert caught.value.request_id == "r1"


def test_roles_and_rate_limits_are_typed_errors_and_a_rate_limit_is_waited_out(
    service_url,  # type: ignore[no-untyped-def]
) -> None:
    # A token every 5 s: the steps below that must land before the next one (the third
    # request's 429, the retrying client's first send) have 5 s, not 1, on a slow machine.
    limits = {"rate_limit_per_minute": 12, "rate_limit_burst": 2}
    with service_url(api_keys="asker", **limits) as base:
        with Client(base, api_key="asker", max_retries=0) as client:
            with pytest.raises(PermissionDeniedError) as denied:  # a bare key may only answer
                client.feedback("ans_1", better=0, worse=1)
            assert denied.value.status_code == 403 and denied.value.type == "forbidden"
            with pytest.raises(UnprocessableEntityError):
                client.answer("")  # the burst's second token
            with pytest.raises(RateLimitError) as limited:
                client.answer("")
            assert limited.value.type == "rate_limited"
            # Whole seconds until the next token: at most the 5 s between two tokens.
            assert 1 <= int(limited.value.response.headers["retry-after"]) <= 5
        sent: list[float] = []
        http = httpx.Client(
            event_hooks={"request": [lambda request: sent.append(time.monotonic())]}
        )
        with (
            Client(base, api_key="asker", max_retries=1, http_client=http) as client,
            pytest.raises(UnprocessableEntityError),
        ):
            client.answer("")  # refused with a Retry-After, then sent again and served
    assert len(sent) == 2 and sent[1] - sent[0] >= 0.9


def test_a_post_that_may_have_been_processed_is_never_sent_twice() -> None:
    def sent_and_timed_out(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        raise httpx.ReadTimeout("no response in time", request=request)

    def never_connected(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        raise httpx.ConnectError("connection refused", request=request)

    calls: list[str] = []
    timing_out = httpx.Client(transport=httpx.MockTransport(sent_and_timed_out))
    with Client("http://service.test", max_retries=3, http_client=timing_out) as client:
        with pytest.raises(APITimeoutError):
            client.feedback("ans_1", better=0, worse=1)
        with pytest.raises(APITimeoutError):
            client.answer("q")
        with pytest.raises(APITimeoutError):
            client.sessions.step("s1", "Scrolled down 1")
        with pytest.raises(APITimeoutError):
            client.sessions.abandon("s1")
    # One try each: the server may have acted (a step sent again would scroll twice).
    assert calls == ["/feedback", "/answer", "/sessions/s1/step", "/sessions/s1"]

    calls.clear()
    refusing = httpx.Client(transport=httpx.MockTransport(never_connected))
    with (
        Client("http://service.test", max_retries=2, http_client=refusing) as client,
        pytest.raises(APIConnectionError),
    ):
        client.feedback("ans_1", better=0, worse=1)
    assert calls == ["/feedback"] * 3  # never reached the server: safe to send again


async def test_an_answer_with_an_idempotency_key_is_retried_after_a_timeout_as_one(
    service_url,  # type: ignore[no-untyped-def]
    script: Script,
) -> None:
    """A read timeout is retried when the request carries an Idempotency-Key: the service
    answers the repeat with the first request's answer (one episode), sync and async."""
    script.hold_model = "scripted"
    keys: list[str | None] = []

    def sent(request: httpx.Request) -> None:
        keys.append(request.headers.get("idempotency-key"))
        if len(keys) == 2:  # the first try timed out: let its answer finish now
            script.released.set()

    with service_url() as base:
        http = httpx.Client(timeout=1.0, event_hooks={"request": [sent]})
        with Client(base, max_retries=10, http_client=http) as client:
            result = client.answer(QUESTION, idempotency_key="sdk-1")
        assert result.answer == "Crows are corvids [1]."
        assert len(keys) >= 2 and set(keys) == {"sdk-1"}
        answers = sum(1 for r in script.requests if r["prompt"].endswith("■"))
        assert answers == 1

        async with AsyncClient(base) as client:
            again = await client.answer(QUESTION, idempotency_key="sdk-1")
            assert again.id == result.id  # the first request's outcome
            with pytest.raises(DeadlineExceededError) as late:
                script.hold_model, script.released = "scripted", threading.Event()
                try:
                    await client.answer(QUESTION, deadline_s=0.5)
                finally:
                    script.released.set()
        assert late.value.status_code == 504 and late.value.type == "deadline_exceeded"


async def test_a_stream_cut_before_done_is_an_error_not_a_silent_end() -> None:
    def truncated(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=b": ping\n\n"
        )

    transport = httpx.MockTransport(truncated)
    with (
        Client("http://service.test", http_client=httpx.Client(transport=transport)) as client,
        pytest.raises(APIConnectionError, match="ended before \\[DONE\\]"),
    ):
        list(client.stream("q"))
    async with AsyncClient(
        "http://service.test", http_client=httpx.AsyncClient(transport=transport)
    ) as async_client:
        with pytest.raises(APIConnectionError, match="ended before \\[DONE\\]"):
            async for _ in await async_client.stream("q"):
                pass


def test_unreachable_service() -> None:
    with (
        Client(f"http://127.0.0.1:{free_port()}", max_retries=0) as client,
        pytest.raises(APIConnectionError, match="cannot reach"),
    ):
        client.answer("q")


def _a_graded_comparison(client: Client) -> None:
    """Something for the export example to export: a best-of-2 answer's candidates, graded."""
    result = client.answer(QUESTION, n=2)
    client.compare(result.id, a=0, b=1, grade="b_better")


@dataclass(frozen=True)
class ExampleRun:
    """How one example is run: its arguments, what it reads on stdin, what it must print
    (stdout, and stderr where it reports there), the roles of its key, and what is recorded
    on the service before it runs."""

    prints: tuple[str, ...]
    args: tuple[str, ...] = (QUESTION,)
    stdin: str = ""
    reports: tuple[str, ...] = ()
    roles: str = "answer+label"
    before: Callable[[Client], None] | None = None


EXAMPLE_RUNS = {
    "answer.py": ExampleRun(prints=(ANSWER, REFERENCE)),
    "stream_async.py": ExampleRun(prints=("episode 0: Search crow corvus", ANSWER, REFERENCE)),
    "chat_openai.py": ExampleRun(prints=(ANSWER, REFERENCE)),
    "feedback.py": ExampleRun(
        stdin="2\n",  # A better
        prints=("--- A\n" + ANSWER, "--- B\n" + ANSWER, "recorded graded comparison 1"),
    ),
    "session.py": ExampleRun(
        # An answer without a citation is refused, and the person asked again.
        stdin="\n".join([*BROWSING, "End: Answer", "Crows are corvids.", ANSWER, ""]),
        prints=(
            f"From Crow (en.wikipedia.org)\n> {CROW_QUOTE}",
            "cite at least one quote",
            "stored as demonstration 1",
        ),
    ),
    "mcp_tools.py": ExampleRun(
        prints=(
            "tools: answer, answer_from_quotes, back, find, open, quote, scroll, search",
            ANSWER,
            REFERENCE,
        )
    ),
    "export.py": ExampleRun(
        args=("comparisons",),
        roles="admin",
        before=_a_graded_comparison,
        # stdout: the rows as `webgpt train rm` reads them; the count goes to stderr.
        prints=(f'"question": "{QUESTION}"', '"label": 0.25', '"answer": "Crows are corvids [1]."'),
        reports=("1 comparison exported to stdout",),
    ),
}


@pytest.fixture
def reward_model(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Service settings for a reward model (so n > 1 is served), on a stand-in server."""
    checkpoint = reward_checkpoint(tmp_path / "rm-short", "rm-short")
    with serve(shortest_wins_app("rm-short")) as base:
        yield {"reward_model": str(checkpoint), "reward_url": f"{base}/v1"}


@pytest.mark.slow  # starts a process
@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.py")), ids=lambda path: path.name)
def test_examples_run(
    example: Path,
    service_url,  # type: ignore[no-untyped-def]
    reward_model: dict[str, str],
    tmp_path: Path,
) -> None:
    """Every example runs against the real service with a label key and a reward model."""
    run = EXAMPLE_RUNS.get(example.name)
    assert run is not None, f"say in EXAMPLE_RUNS how to run {example.name} and what it prints"
    settings = {"api_keys": f"example-key:{run.roles}", "feedback_db": str(tmp_path / "fb.db")}
    with service_url(**settings, **reward_model) as base:
        if run.before is not None:
            with Client(base, api_key="example-key") as client:
                run.before(client)
        env = {**os.environ, "WEBGPT_BASE_URL": base, "WEBGPT_API_KEY": "example-key"}
        done = subprocess.run(
            [sys.executable, str(example), *run.args],
            input=run.stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    for expected in run.prints:
        assert expected in done.stdout, f"{expected!r} not in:\n{done.stdout}"
    for expected in run.reports:
        assert expected in done.stderr, f"{expected!r} not in:\n{done.stderr}"


def test_a_whole_demonstration_session(service_url, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Create, step, answer: stored as the demonstration record; the session is closed."""
    keys = "labeler:label,asker,admin:admin"
    with service_url(api_keys=keys, feedback_db=str(tmp_path / "fb.db")) as base:
        with Client(base, api_key="labeler") as client:
            state = client.sessions.create(QUESTION)
            assert state.question == QUESTION and state.lines == [] and state.event is None
            for command in BROWSING:
                state = client.sessions.step(state.id, command)
            assert state.title == "Crow (en.wikipedia.org)" and state.actions_left == 97
            assert state.event is not None and state.event.type == "quote"
            assert [quote.extract for quote in state.quotes] == [CROW_QUOTE]
            assert f"> {CROW_QUOTE}" in state.observation
            with pytest.raises(UnprocessableEntityError, match="end browsing first"):
                client.sessions.answer(state.id, ANSWER)
            state = client.sessions.step(state.id, "End: Answer")
            assert state.done and state.end_reason == "answer"
            receipt = client.sessions.answer(state.id, ANSWER)
            assert (receipt.kind, receipt.id) == ("demonstration", 1)
            with pytest.raises(NotFoundError) as closed:  # stored and closed
                client.sessions.step(state.id, "Top")
            assert closed.value.status_code == 404 and closed.value.type == "not_found"
            posted = client.demonstrate(
                QUESTION, commands=[*BROWSING, "End: Answer"], answer=ANSWER
            )
            assert (posted.kind, posted.id) == ("demonstration", 2)
        with (
            Client(base, api_key="asker") as client,
            pytest.raises(PermissionDeniedError) as denied,  # a bare key may only answer
        ):
            client.sessions.create(QUESTION)
        assert denied.value.status_code == 403 and denied.value.type == "forbidden"
        with (
            Client(base, api_key="admin") as client,
            client.admin.export_demonstrations() as export,
        ):
            rows = list(export)
    assert [(row["id"], row["format"]) for row in rows] == [(1, "demonstration"), (2, "commands")]
    recorded = rows[0]["record"]
    assert [step["command"] for step in recorded["steps"]] == [*BROWSING, "End: Answer"]
    assert recorded["answer"] == ANSWER and recorded["source"] == "person"


async def test_an_abandoned_session_is_gone_and_stores_nothing(
    service_url,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    with service_url(feedback_db=str(tmp_path / "fb.db")) as base:
        async with AsyncClient(base) as client:
            state = await client.sessions.create(QUESTION)
            state = await client.sessions.step(state.id, "Search crow corvus")
            assert state.event is not None and state.event.type == "search"
            assert state.event.results[0]["title"] == "Crow"  # type: ignore[attr-defined]
            typo = await client.sessions.step(state.id, "open the first one")
            assert typo.event is not None and typo.event.type == "invalid_action"
            assert typo.actions_left == 98  # it costs an action, as it would the policy
            await client.sessions.abandon(state.id)
            with pytest.raises(NotFoundError, match="no open browser session"):
                await client.sessions.step(state.id, "Clicked on link 0")
            with pytest.raises(NotFoundError):
                await client.sessions.abandon(state.id)
            with pytest.raises(UnprocessableEntityError, match="no question queue"):
                await client.sessions.create(from_queue=True)
            ended = await client.sessions.create("colorless green ideas")
            ended = await client.sessions.step(ended.id, "End: Nonsense")
            assert ended.done and ended.end_reason == "nonsense"
            receipt = await client.sessions.answer(ended.id, None)  # nonsense has no answer
            assert (receipt.kind, receipt.id) == ("demonstration", 1)  # the abandoned: none
            posted = await client.demonstrate(
                QUESTION, commands=[*BROWSING, "End: Answer"], answer=ANSWER
            )
            assert (posted.kind, posted.id) == ("demonstration", 2)


def test_a_503_is_typed_with_its_retry_after_and_waited_out(
    service_url,  # type: ignore[no-untyped-def]
    script: Script,
) -> None:
    """The policy server fails (the service's own client retries once): 503
    policy_unavailable with Retry-After, which the SDK waits out before sending again."""
    with service_url(retry_after_s=1) as base:
        script.faults = ["503", "503"]
        with (
            Client(base, max_retries=0) as client,
            pytest.raises(ServiceUnavailableError) as down,
        ):
            client.answer(QUESTION)
        assert down.value.status_code == 503 and down.value.type == "policy_unavailable"
        assert down.value.retry_after_s == 1.0 and down.value.request_id

        script.faults = ["503", "503"]
        sent: list[float] = []
        http = httpx.Client(
            event_hooks={"request": [lambda request: sent.append(time.monotonic())]}
        )
        with Client(base, max_retries=1, http_client=http) as client:
            assert client.answer(QUESTION).answer == ANSWER
    assert len(sent) == 2 and sent[1] - sent[0] >= 0.9


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("2", 2.0), ("0.5", 0.5), ("-3", 0.0), ("nan", None), ("Wed, 21 Oct 2037 07:28:00 GMT", None)],
)
def test_retry_after_is_read_as_seconds(header: str, seconds: float | None) -> None:
    """Only seconds are honoured: anything else leaves the wait to the client's backoff."""
    refused = httpx.Response(503, headers={"Retry-After": header})
    assert ServiceUnavailableError(refused).retry_after_s == seconds


def test_a_session_id_is_one_path_segment() -> None:
    paths: list[bytes] = []

    def record(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.raw_path)
        return httpx.Response(204)

    http = httpx.Client(transport=httpx.MockTransport(record))
    with Client("http://service.test", http_client=http) as client:
        client.sessions.abandon("../answer")
    assert paths == [b"/sessions/..%2Fanswer"]


def _two_candidate_answer(db: Path, service_url) -> str:  # type: ignore[no-untyped-def]
    """Record an answer with two candidates, as the service records best-of-2 answers."""
    from webgpt.agent.answer import AnswerResult
    from webgpt.service.store import FeedbackStore

    with service_url(feedback_db=str(db)) as base, Client(base) as client:
        one = client.answer(QUESTION)
    result = AnswerResult.model_validate(one.model_dump())
    second = result.candidates[0].model_copy(update={"episode": 1, "answer": "Crows [1]."})
    two = result.model_copy(update={"id": "ans_two", "candidates": [result.candidates[0], second]})
    store = FeedbackStore(db)
    store.record_answer(two)
    store.close()
    return one.id


async def test_feedback_sync_and_async(service_url, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "fb.sqlite"
    single = _two_candidate_answer(db, service_url)
    with service_url(feedback_db=str(db)) as base:
        with Client(base) as client:
            receipt = client.feedback("ans_two", better=1, worse=0, note="shorter is better")
            assert receipt.kind == "comparison" and receipt.id == 1
            with pytest.raises(UnprocessableEntityError, match="below 1"):
                client.feedback(single, better=0, worse=1)
        async with AsyncClient(base) as client:
            tie = await client.feedback("ans_two", better=0, worse=1, tie=True)
            assert tie.id == 2
            graded = await client.compare(
                "ans_two", a=0, b=1, grade="a_much_better", ratings_b={"supported": "no"}
            )
            assert graded.kind == "graded" and graded.id == 3
        with Client(base) as client:
            graded = client.compare("ans_two", a=1, b=0, grade="b_better", note="longer")
            assert graded.id == 4
            with pytest.raises(UnprocessableEntityError, match="grade"):
                client.compare("ans_two", a=1, b=0, grade="better")  # type: ignore[arg-type]
    from webgpt.service.store import FeedbackStore

    store = FeedbackStore(db)
    labels = [row["label"] for row in store.export_comparisons()]
    store.close()
    assert labels == [1.0, 0.5, 1.0, 0.25]


def test_a_key_at_its_session_limit_gets_a_conflict_at_once(service_url) -> None:  # type: ignore[no-untyped-def]
    with (
        service_url(api_keys="k:answer+label", max_demo_sessions_per_key=1) as base,
        Client(base, api_key="k") as client,
    ):
        first = client.sessions.create("crow corvus")
        with pytest.raises(ConflictError, match="answer or abandon one") as caught:
            client.sessions.create("ravens")
        assert caught.value.status_code == 409 and caught.value.retry_after_s is None
        client.sessions.abandon(first.id)
        client.sessions.abandon(client.sessions.create("ravens").id)  # the slot is free again


async def test_the_probes_sync_and_async(service_url) -> None:  # type: ignore[no-untyped-def]
    """/healthz and /readyz need no key, even where the service requires one."""
    with service_url(api_keys="some-key") as base:
        with Client(base) as client:
            health = client.health()
            ready = client.ready()
        async with AsyncClient(base) as async_client:
            assert (await async_client.health()).ok
            assert await async_client.ready() == ready
    assert health.ok and health.status == "ok"
    assert ready.ok and ready.status == "ready"
    assert set(ready.checks) == {"policy", "database"}
    assert ready.checks["policy"].ok and ready.checks["policy"].detail is None
    assert ready.checks["database"].ok and ready.checks["database"].spooled == 0


async def test_not_ready_is_the_probes_answer_not_an_error(
    service_url,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """A reward model nobody serves: /readyz answers 503 "not ready", which ready() returns
    (a probe is asked exactly that) and does not send again as a refused request."""
    checkpoint = reward_checkpoint(tmp_path / "rm", "rm-gone")
    down = {"reward_model": str(checkpoint), "reward_url": f"http://127.0.0.1:{free_port()}/v1"}
    sent: list[str] = []
    with service_url(**down) as base:
        http = httpx.Client(event_hooks={"request": [lambda r: sent.append(r.url.path)]})
        with Client(base, max_retries=2, http_client=http) as client:
            ready = client.ready()
            assert client.health().ok  # alive, though not ready
        async with AsyncClient(base) as async_client:
            assert await async_client.ready() == ready
    assert sent == ["/readyz", "/healthz"]
    assert not ready.ok and ready.status == "not ready"
    assert not ready.checks["reward"].ok and ready.checks["reward"].detail
    assert ready.checks["policy"].ok


def test_a_503_that_is_no_readiness_is_the_typed_error() -> None:
    """A proxy's own page in front of a service it cannot reach is no "not ready"."""
    page = httpx.MockTransport(
        lambda request: httpx.Response(503, text="<html>Service Unavailable</html>")
    )
    with (
        Client(
            "http://service.test", max_retries=0, http_client=httpx.Client(transport=page)
        ) as client,
        pytest.raises(ServiceUnavailableError) as caught,
    ):
        client.ready()
    assert caught.value.status_code == 503
    not_ready = {"status": "not ready", "checks": {"policy": {"ok": False, "detail": "down"}}}
    probe = httpx.MockTransport(lambda request: httpx.Response(503, json=not_ready))
    with Client("http://service.test", http_client=httpx.Client(transport=probe)) as client:
        assert client.ready() == Readiness.model_validate(not_ready)


async def test_admin_exports_sync_and_async_need_the_admin_role(
    service_url,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    db = tmp_path / "fb.sqlite"
    _two_candidate_answer(db, service_url)
    with service_url(api_keys="labeler:label,admin:admin", feedback_db=str(db)) as base:
        with Client(base, api_key="admin") as client, client.admin.export_comparisons() as rows:
            assert list(rows) == []  # nothing recorded yet: no rows, no error
        with Client(base, api_key="labeler") as client:
            client.compare("ans_two", a=0, b=1, grade="b_better")
            client.feedback("ans_two", better=1, worse=0)
            client.demonstrate(QUESTION, commands=[*BROWSING, "End: Answer"], answer=ANSWER)
            with pytest.raises(PermissionDeniedError) as denied:  # raised at the call
                client.admin.export_comparisons()
            assert denied.value.status_code == 403 and denied.value.type == "forbidden"
        with Client(base, api_key="admin") as client:
            with client.admin.export_comparisons() as export:
                comparisons = list(export)
            demonstrations = list(client.admin.export_demonstrations())
        async with AsyncClient(base, api_key="admin") as async_client:
            async with await async_client.admin.export_comparisons() as rows:
                assert [row async for row in rows] == comparisons
            rows = await async_client.admin.export_demonstrations()
            assert [row async for row in rows] == demonstrations
        async with AsyncClient(base, api_key="labeler") as async_client:
            with pytest.raises(PermissionDeniedError):
                await async_client.admin.export_demonstrations()
    assert [row["label"] for row in comparisons] == [0.25, 1.0]
    first = comparisons[0]
    assert first["question"] == QUESTION and first["answer_id"] == "ans_two"
    assert first["a"]["answer"] == ANSWER and first["b"]["answer"] == "Crows [1]."
    assert first["a"]["quotes"][0]["extract"] == CROW_QUOTE
    assert [(row["id"], row["format"]) for row in demonstrations] == [(1, "commands")]
    assert demonstrations[0]["record"]["answer"] == ANSWER


class _Chunks(httpx.SyncByteStream):
    """A response body sent a chunk at a time, counting the chunks the client has taken;
    `fault` is raised after the last one (a connection that broke)."""

    def __init__(self, chunks: list[bytes], fault: Exception | None = None) -> None:
        self.chunks, self.fault, self.sent = chunks, fault, 0

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.chunks:
            self.sent += 1
            yield chunk
        if self.fault is not None:
            raise self.fault


class _AsyncChunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes], fault: Exception | None = None) -> None:
        self.chunks, self.fault, self.sent = chunks, fault, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.sent += 1
            yield chunk
        if self.fault is not None:
            raise self.fault


# Rows split across chunks as the network may split them: the second row arrives in two.
ROW_CHUNKS = [b'{"n": 1}\n{"n"', b": 2}\n", b'{"n": 3}\n\n']


async def test_an_export_hands_on_each_row_as_it_arrives() -> None:
    """Each row is yielded once its line is in, before the next chunk is read: the client
    holds a row at a time, never the whole export."""
    accepts: list[str | None] = []
    body = _Chunks(ROW_CHUNKS)

    def export(request: httpx.Request) -> httpx.Response:
        accepts.append(request.headers.get("accept"))
        return httpx.Response(200, stream=body, headers={"content-type": "application/x-ndjson"})

    http = httpx.Client(transport=httpx.MockTransport(export))
    with (
        Client("http://service.test", http_client=http) as client,
        client.admin.export_comparisons() as rows,
    ):
        seen = [(row["n"], body.sent) for row in rows]
    assert seen == [(1, 1), (2, 2), (3, 3)]
    assert accepts == ["application/x-ndjson"]

    async_body = _AsyncChunks(ROW_CHUNKS)
    transport = httpx.MockTransport(lambda request: httpx.Response(200, stream=async_body))
    async with (
        AsyncClient(
            "http://service.test", http_client=httpx.AsyncClient(transport=transport)
        ) as async_client,
        await async_client.admin.export_demonstrations() as async_rows,
    ):
        async_seen = [(row["n"], async_body.sent) async for row in async_rows]
    assert async_seen == [(1, 1), (2, 2), (3, 3)]


@pytest.mark.parametrize(
    ("chunks", "fault", "message"),
    [
        ([b'{"n": 1}\n{"n": '], None, "line 2 of the export is not a JSON object"),
        ([b'{"n": 1}\n'], httpx.RemoteProtocolError("peer closed connection"), "broke off"),
    ],
    ids=["a cut row", "a broken connection"],
)
async def test_an_export_cut_off_is_an_error_not_a_short_export(
    chunks: list[bytes], fault: Exception | None, message: str
) -> None:
    """JSON lines have no end marker: a last line that is no whole row, or a connection
    that broke, raises after the rows that did arrive."""
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, stream=_Chunks(chunks, fault))
    )
    rows: list[dict[str, object]] = []
    with (
        Client("http://service.test", http_client=httpx.Client(transport=transport)) as client,
        pytest.raises(APIConnectionError, match=message),
    ):
        rows.extend(client.admin.export_comparisons())
    assert rows == [{"n": 1}]
    async_rows: list[dict[str, object]] = []
    async_transport = httpx.MockTransport(
        lambda request: httpx.Response(200, stream=_AsyncChunks(chunks, fault))
    )
    async with AsyncClient(
        "http://service.test", http_client=httpx.AsyncClient(transport=async_transport)
    ) as async_client:
        with pytest.raises(APIConnectionError, match=message):
            async for row in await async_client.admin.export_comparisons():
                async_rows.append(row)
    assert async_rows == [{"n": 1}]
