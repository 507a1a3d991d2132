"""People teach the model over HTTP: browser sessions that record a demonstration (the
same session code as the policy's), and graded comparisons stored as soft labels. Real
service on loopback, real SQLite, the offline web; exports read back by the trainers'
loaders."""

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.agent.fake_policy import Script
from tests.service.answers import record_two_candidates
from webgpt.agent.errors import ConfigurationError
from webgpt.browser.web import Web, WebOptions
from webgpt.learning.demonstrations import load_demonstrations, replay
from webgpt.reward.data import load_comparisons
from webgpt.service.demonstrating import DemonstrationSessions
from webgpt.service.settings import ServiceSettings
from webgpt.service.store import FeedbackStore

CROW_QUOTE = "Crows are birds of the genus Corvus."


def export(db: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "webgpt.service.cli", "feedback", "export", "--db", str(db)]
    return subprocess.run(
        [*command, "--out", str(out), *extra],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow  # starts a process
async def test_a_recorded_demonstration_replays_exactly_and_exports_for_bc(
    service_url, offline_store: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "feedback.sqlite"
    with service_url(feedback_db=str(db)) as base, httpx.Client(base_url=base) as http:
        state = http.post("/sessions", json={"question": "What genus are crows?"}).json()
        session = state["id"]
        assert state["actions_left"] == 100 and state["lines"] == [] and not state["done"]
        shown = [state["observation"]]
        for command in ("Search crow", "Clicked on link 0", f"Quote: {CROW_QUOTE}"):
            state = http.post(f"/sessions/{session}/step", json={"command": command}).json()
            shown.append(state["observation"])
        assert (
            state["title"] == "Crow (en.wikipedia.org)"
            and state["url"] == "https://en.wikipedia.org/wiki/Crow"
        )
        assert state["event"]["type"] == "quote"
        assert [q["extract"] for q in state["quotes"]] == [CROW_QUOTE]
        assert state["past_actions"][-1] == "Quote" and state["actions_left"] == 97
        assert any("Crows are birds" in line for line in state["lines"])

        early = http.post(f"/sessions/{session}/answer", json={"answer": "Corvus [1]."})
        assert early.status_code == 422 and "end browsing first" in early.text
        state = http.post(f"/sessions/{session}/step", json={"command": "End: Answer"}).json()
        assert state["done"] and state["end_reason"] == "answer"
        after = http.post(f"/sessions/{session}/step", json={"command": "Top"})
        assert after.status_code == 422 and "browsing has ended" in after.text
        for answer, problem in [
            ("Crows are in the genus Corvus.", "cite at least one quote"),
            ("Crows are in the genus Corvus [2].", "there is no quote 2"),
        ]:
            refused = http.post(f"/sessions/{session}/answer", json={"answer": answer})
            assert refused.status_code == 422 and problem in refused.text
        receipt = http.post(
            f"/sessions/{session}/answer", json={"answer": "Crows are in the genus Corvus [1]."}
        )
        assert receipt.json() == {"id": 1, "kind": "demonstration"}
        gone = http.post(f"/sessions/{session}/step", json={"command": "Top"})
        assert gone.status_code == 404  # stored and closed

    out = tmp_path / "demos.jsonl"
    exported = export(db, out, "--demonstrations", "--store", str(offline_store))
    assert exported.returncode == 0, exported.stderr
    demos, report = load_demonstrations([out])  # what `webgpt train bc` reads
    assert report.used == 1 and not report.skipped
    demo = demos[0]
    assert demo.source == "person" and demo.answer == "Crows are in the genus Corvus [1]."
    assert [s.command for s in demo.steps] == [
        "Search crow",
        "Clicked on link 0",
        f"Quote: {CROW_QUOTE}",
        "End: Answer",
    ]
    assert [s.observation for s in demo.steps] == shown  # exactly what the person saw
    web = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
    try:
        assert await replay(demo, web.session()) == []
    finally:
        await web.aclose()


def test_sessions_are_bounded_per_key_private_and_expire(service_url) -> None:  # type: ignore[no-untyped-def]
    settings = {"api_keys": "key-one:label,key-two:label", "max_demo_sessions_per_key": 1}
    one = {"authorization": "Bearer key-one"}
    two = {"authorization": "Bearer key-two"}
    # The checks before the expiry span many requests: they run on a service whose sessions
    # never go idle in a test, and the expiry on one whose sessions do in half a second.
    with (
        service_url(**settings) as base,
        httpx.Client(base_url=base) as http,
    ):
        assert http.post("/sessions", json={"question": "q"}).status_code == 401
        mine = http.post("/sessions", json={"question": "crows"}, headers=one).json()["id"]
        # What a person types that is no command costs an action, as it would the policy.
        typo = http.post(f"/sessions/{mine}/step", json={"command": "rm -rf /"}, headers=one)
        assert typo.json()["event"]["type"] == "invalid_action"
        assert typo.json()["actions_left"] == 99
        for body in ({"command": "x" * 2001}, {"command": ""}, {"cmd": "Top"}):
            bad = http.post(f"/sessions/{mine}/step", json=body, headers=one)
            assert bad.status_code == 422
        blank = http.post("/sessions", json={"question": "   "}, headers=two)
        assert blank.status_code == 422 and "empty" in blank.text
        full = http.post("/sessions", json={"question": "ravens"}, headers=one)
        assert full.status_code == 409 and "answer or abandon one" in full.text
        assert "retry-after" not in full.headers  # waiting frees no slot
        # Another key's session is not found, exactly like one that does not exist.
        theirs = http.post(f"/sessions/{mine}/step", json={"command": "Top"}, headers=two)
        assert theirs.status_code == 404
        assert http.delete(f"/sessions/{mine}", headers=two).status_code == 404
        assert http.delete(f"/sessions/{mine}", headers=one).status_code == 204
        both = http.post("/sessions", json={"question": "q", "from_queue": True}, headers=one)
        assert both.status_code == 422 and "either a question or from_queue" in both.text
        no_queue = http.post("/sessions", json={"from_queue": True}, headers=one)
        assert no_queue.status_code == 422 and "no question queue" in no_queue.text
    with (
        service_url(**settings, demo_session_idle_s=0.5) as base,
        httpx.Client(base_url=base) as http,
    ):
        again = http.post("/sessions", json={"question": "ravens"}, headers=one).json()["id"]
        time.sleep(0.6)  # idle past demo_session_idle_s: closed
        expired = http.post(f"/sessions/{again}/step", json={"command": "Top"}, headers=one)
        assert expired.status_code == 404 and "expired" in expired.text
        # Its slot is free again.
        assert http.post("/sessions", json={"question": "rooks"}, headers=one).status_code == 200


@pytest.mark.slow  # starts a process
def test_queued_questions_keep_gold_answers_and_a_refusal_ends_without_answer(
    service_url, offline_store: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    queue = tmp_path / "questions.jsonl"
    rows = [
        {"question": "What genus are crows?", "gold_answers": ["Corvus"], "split": "train"},
        {"question": "What is a raven?", "gold_answers": ["bird"], "split": "dev"},
    ]
    queue.write_text("".join(json.dumps(row) + "\n" for row in rows))
    db = tmp_path / "feedback.sqlite"
    with (
        service_url(feedback_db=str(db), demo_questions=str(queue)) as base,
        httpx.Client(base_url=base) as http,
    ):
        first = http.post("/sessions", json={"from_queue": True}).json()
        second = http.post("/sessions", json={"from_queue": True}).json()
        assert (first["question"], second["question"]) == (rows[0]["question"], rows[1]["question"])
        empty = http.post("/sessions", json={"from_queue": True})
        assert empty.status_code == 422 and "every queued question" in empty.text
        for command in ("Search crow", "Clicked on link 0", f"Quote: {CROW_QUOTE}", "End: Answer"):
            http.post(f"/sessions/{first['id']}/step", json={"command": command})
        answered = http.post(f"/sessions/{first['id']}/answer", json={"answer": "Corvus [1]."})
        assert answered.status_code == 200
        ended = http.post(f"/sessions/{second['id']}/step", json={"command": "End: Nonsense"})
        assert ended.json()["end_reason"] == "nonsense"
        with_answer = http.post(f"/sessions/{second['id']}/answer", json={"answer": "A [1]."})
        assert with_answer.status_code == 422 and "without an answer" in with_answer.text
        assert http.post(f"/sessions/{second['id']}/answer", json={}).status_code == 200
        # The first question is demonstrated: the queue does not hand it out again.
        left = http.post("/sessions", json={"from_queue": True})
        assert left.status_code == 422
    out = tmp_path / "demos.jsonl"
    assert export(db, out, "--demonstrations", "--store", str(offline_store)).returncode == 0
    demos, _ = load_demonstrations([out])
    assert [(d.gold_answers, d.split, d.answer) for d in demos] == [
        (["Corvus"], "train", "Corvus [1]."),
        (["bird"], "dev", None),
    ]


@pytest.mark.slow  # starts a process
def test_a_graded_comparison_lands_as_a_soft_label(
    service_url, script: Script, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "feedback.sqlite"
    with service_url(feedback_db=str(db)) as base:
        answer = httpx.post(f"{base}/answer", json={"question": "crow corvus"}, timeout=60).json()
    two = record_two_candidates(db, answer, "Birds [1].")
    graded = {
        "kind": "graded",
        "answer_id": "ans_two",
        "a": 1,
        "b": 0,
        "grade": "b_better",
        "ratings_a": {"supported": "partly", "coherent": "yes", "useful": "no"},
        "ratings_b": {"supported": "yes"},
    }
    with service_url(feedback_db=str(db)) as base:
        bad = httpx.post(f"{base}/feedback", json={**graded, "grade": "b_somewhat_better"})
        assert bad.status_code == 422 and "grade" in bad.json()["error"]["message"]
        receipt = httpx.post(f"{base}/feedback", json=graded)
        assert receipt.json() == {"id": 1, "kind": "graded"}
    out = tmp_path / "comparisons.jsonl"
    assert export(db, out).returncode == 0
    row = json.loads(out.read_text())
    assert (row["a"]["answer"], row["b"]["answer"]) == ("Birds [1].", two.candidates[0].answer)
    assert (row["preference"], row["label"]) == ("b", 0.25)
    assert row["ratings"] == {
        "grade": "b_better",
        "a": {"supported": "partly", "coherent": "yes", "useful": "no"},
        "b": {"supported": "yes", "coherent": None, "useful": None},
    }
    comparisons, report = load_comparisons([out])  # what `webgpt train rm` reads
    assert report.used == 1 and comparisons[0].label == 0.25
    assert comparisons[0].text_a.endswith("Birds [1].")


def test_an_unreadable_question_queue_is_a_clear_error_at_start(
    offline_store: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "questions.jsonl"
    broken.write_text('{"question": "no gold answers"}\n')
    web = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
    store = FeedbackStore(tmp_path / "feedback.sqlite")
    for path, problem in [
        (broken, "questions.jsonl:1"),
        (tmp_path / "missing.jsonl", "cannot read"),
    ]:
        settings = ServiceSettings(demo_questions=path)
        with pytest.raises(ConfigurationError, match=problem):
            DemonstrationSessions(web, store, settings)
    store.close()
