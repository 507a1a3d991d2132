"""One error shape on every route, the framework's own errors included, and the same
status for the same input fault: a table over the routes, on a real uvicorn."""

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

JSON = {"content-type": "application/json"}
# Routes that take a JSON body, and a body each accepts (a bad one is made from it).
BODY_ROUTES: dict[str, dict[str, Any]] = {
    "/answer": {"question": "crow corvus"},
    "/v1/chat/completions": {"messages": [{"role": "user", "content": "crow corvus"}]},
    "/feedback": {"answer_id": "ans_x", "better": 0, "worse": 1},
    "/sessions": {"question": "crow corvus"},
    "/sessions/no-such-id/step": {"command": "Search crow"},
    "/sessions/no-such-id/answer": {"answer": "Crows [1]."},
}
# Where a question is typed, and the body that carries one.
QUESTION_ROUTES: dict[str, Callable[[str], dict[str, Any]]] = {
    "/answer": lambda q: {"question": q},
    "/v1/chat/completions": lambda q: {"messages": [{"role": "user", "content": q}]},
    "/sessions": lambda q: {"question": q},
    "/feedback": lambda q: {
        "kind": "demonstration",
        "question": q,
        "commands": ["Search crow"],
        "answer": "Crows [1].",
    },
}


def invalid_status(path: str) -> int:
    """A request the service will not run: 422 on our routes, 400 on the OpenAI route (as
    OpenAI answers it, so its clients raise BadRequestError)."""
    return 400 if path.startswith("/v1/") else 422


def assert_error(response: httpx.Response, status: int, kind: str, needle: str = "") -> None:
    assert response.status_code == status, (response.request.url, response.text)
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert isinstance(error["message"], str) and error["message"], body
    assert needle in error["message"], (needle, body)
    # OpenAI's shape on its route names our kind as `code`; ours names it as `type`.
    assert error.get("code" if response.request.url.path.startswith("/v1/") else "type") == kind


def cases() -> list[tuple[str, str, str, dict[str, Any], int, str, str]]:
    """(name, method, path, request arguments, status, kind, words of the message)."""
    table: list[tuple[str, str, str, dict[str, Any], int, str, str]] = [
        ("unknown path", "GET", "/no/such/path", {}, 404, "not_found", "/no/such/path"),
        ("unknown POST", "POST", "/answers", {"json": {}}, 404, "not_found", "/answers"),
        ("missing file", "GET", "/static/none.js", {}, 404, "not_found", "/static/none.js"),
        ("wrong method", "GET", "/answer", {}, 405, "method_not_allowed", "takes POST"),
        ("wrong method", "PUT", "/healthz", {}, 405, "method_not_allowed", "takes GET"),
        ("wrong method", "GET", "/v1/chat/completions", {}, 405, "method_not_allowed", "POST"),
    ]
    for path, good in BODY_ROUTES.items():
        status = invalid_status(path)
        if not path.startswith("/v1/"):  # OpenAI's route accepts fields it does not use
            table.append(("unknown field", "POST", path, {"json": {**good, "surprise": 1}},
                          status, "invalid_request", "surprise"))  # fmt: skip
        table += [
            ("bad JSON", "POST", path, {"content": b'{"question": ', "headers": JSON},
             status, "invalid_request", "not valid JSON"),
            ("empty body", "POST", path, {"content": b"", "headers": JSON},
             status, "invalid_request", "no body"),
            ("no body", "POST", path, {}, status, "invalid_request", "no body"),
            ("not an object", "POST", path, {"json": [good]},
             status, "invalid_request", "JSON object"),
            ("oversize", "POST", path, {"json": {**good, "pad": "x" * 5000}},
             413, "payload_too_large", "over 2048 bytes"),
        ]  # fmt: skip
    for path, body in QUESTION_ROUTES.items():
        for name, question in (("empty question", ""), ("blank question", " \n\t ")):
            table.append((name, "POST", path, {"json": body(question)},
                          invalid_status(path), "invalid_request", ""))  # fmt: skip
    return table


CASES = cases()


@pytest.fixture(scope="module")
def base(offline_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One service for the whole table (no request in it runs an answer)."""
    from tests.servers import serve
    from webgpt.agent.openai_policy import OpenAIPolicy
    from webgpt.browser.web import Web, WebOptions
    from webgpt.service.app import create_app
    from webgpt.service.metrics import Metrics
    from webgpt.service.serving import AnswerService
    from webgpt.service.settings import ServiceSettings
    from webgpt.service.store import FeedbackStore

    nowhere = "http://127.0.0.1:9/v1"  # nothing here needs the policy
    settings = ServiceSettings(policy_url=nowhere, policy_model="m", max_request_bytes=2048)
    web = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
    store = FeedbackStore(tmp_path_factory.mktemp("errors") / "fb.sqlite")
    service = AnswerService(settings, web, OpenAIPolicy(nowhere, "m"), None, Metrics(), store)
    with serve(create_app(service)) as url:
        yield url


@pytest.mark.parametrize(
    ("name", "method", "path", "arguments", "status", "kind", "needle"),
    CASES,
    ids=[f"{c[0]} {c[1]} {c[2]}" for c in CASES],
)
def test_every_error_has_one_shape_and_the_same_fault_the_same_status(
    base: str,
    name: str,
    method: str,
    path: str,
    arguments: dict[str, Any],
    status: int,
    kind: str,
    needle: str,
) -> None:
    response = httpx.request(method, base + path, timeout=30, **arguments)
    assert_error(response, status, kind, needle)
    assert response.headers["x-request-id"]
    if status == 405:
        assert response.headers["allow"]


def test_an_empty_and_a_blank_question_read_the_same(base: str) -> None:
    for path, body in QUESTION_ROUTES.items():
        messages = {
            httpx.post(base + path, json=body(q), timeout=30).json()["error"]["message"]
            for q in ("", "   ")
        }
        assert len(messages) == 1, (path, messages)


def test_invalid_json_names_no_field(base: str) -> None:
    """pydantic reports a JSON syntax error at a character position; it must not read as
    a field called by that number."""
    bad = b'{"question": "crows", "n": 2,,}'
    message = httpx.post(base + "/answer", content=bad, headers=JSON).json()["error"]["message"]
    assert message.startswith("the body is not valid JSON") and "at character 29" in message
    assert not message.startswith("29")


def test_the_openapi_schema_documents_no_detail_body(base: str) -> None:
    """The framework's default error body is gone, and the schema does not promise it."""
    schema = httpx.get(base + "/openapi.json").text
    assert "HTTPValidationError" not in schema
