"""A chat model as the policy (agent.chat_policy): the commands as tools of chat
completions, against loopback servers that answer in the wire formats of llama.cpp's
server and of Ollama's OpenAI route, on the offline test web."""

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.conftest import CROW_QUOTE
from tests.servers import serve
from webgpt.agent.answer import Agent
from webgpt.agent.chat_policy import ANSWER_SYSTEM, BROWSING_SYSTEM, REWRITE_SYSTEM, ChatPolicy
from webgpt.agent.declines import decline_answer
from webgpt.agent.episode import EpisodeConfig
from webgpt.agent.errors import PolicyResponseError
from webgpt.agent.followups import Turn
from webgpt.agent.trace import FollowUpEvent, TraceEvent
from webgpt.browser.web import Web

QUESTION = "What genus are crows?"
ANSWER = "Crows are birds of the genus Corvus [1]."


def tool_call(name: str, arguments: dict[str, Any], dialect: str, n: int = 0) -> dict[str, Any]:
    call: dict[str, Any] = {
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
        "id": f"call_{n}",
    }
    if dialect == "ollama":
        call["index"] = 0
    return call


def chat_response(message: dict[str, Any], dialect: str) -> dict[str, Any]:
    """A chat.completion as each server writes one that calls a tool."""
    common = {
        "object": "chat.completion",
        "created": int(time.time()),
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
    }
    if dialect == "llama.cpp":  # content null beside tool calls; its own timings
        choice = {"finish_reason": "tool_calls", "index": 0, "message": message}
        return {
            **common,
            "choices": [choice],
            "model": "gpt-3.5-turbo",
            "system_fingerprint": "b5000-abcdef",
            "id": "chatcmpl-llama",
            "timings": {"prompt_n": 50, "predicted_n": 10},
        }
    message = {**message, "content": message.get("content") or ""}
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
    return {
        **common,
        "id": "chatcmpl-ollama",
        "model": "qwen3:4b",
        "system_fingerprint": "fp_ollama",
        "choices": [choice],
    }


def chat_server(
    dialect: str,
    requests: list[dict[str, Any]],
    quote: str = CROW_QUOTE,
    declines: bool = False,
    rewrite: str | None = None,
) -> Starlette:
    """Browses as a model would, from the observation: search, open the first result,
    quote, finish; then answers from the quotes (or declines). A follow-up it rewrites as
    `rewrite` (None: it fails, 500). Dialect "vllm" is a vLLM without a tool-call parser:
    it refuses required tool calls and writes the call a response_format asks for."""

    async def completions(request: Request) -> JSONResponse:
        body = await request.json()
        requests.append(body)
        system, user = (m["content"] for m in body["messages"])
        if dialect == "vllm" and "tools" in body:
            refusal = {"message": 'tool_choice="required" requires --tool-call-parser to be set'}
            return JSONResponse({"error": refusal}, status_code=400)
        if system.startswith(REWRITE_SYSTEM):
            if rewrite is None:
                return JSONResponse({"error": {"message": "model crashed"}}, status_code=500)
            name, arguments = "ask", {"question": rewrite}
        elif system.startswith(ANSWER_SYSTEM):
            name, arguments = ("decline", {}) if declines else ("answer", {"text": ANSWER})
        elif "♦Title\n\n" in user:  # a blank page: search
            name, arguments = "search", {"query": "crow corvus"}
        elif "♦Title\nSearch results for:" in user:
            name, arguments = "open_link", {"link": 0}
        elif "♦Quotes\n♦Past actions" in user:  # no quote yet
            name, arguments = "quote", {"text": quote}
        else:
            name, arguments = "finish", {}
        if dialect == "vllm":
            content = json.dumps({"name": name, "arguments": arguments})
            message = {"role": "assistant", "content": content, "tool_calls": []}
        else:
            call = tool_call(name, arguments, dialect)
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return JSONResponse(chat_response(message, dialect))

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


@pytest.fixture(params=["llama.cpp", "ollama"])
def chat_url(request: pytest.FixtureRequest) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    requests: list[dict[str, Any]] = []
    with serve(chat_server(request.param, requests)) as base:
        yield base + "/v1", requests


async def test_a_chat_model_browses_by_tool_calls_and_answers(
    web: Web, chat_url: tuple[str, list[dict[str, Any]]]
) -> None:
    url, requests = chat_url
    policy = ChatPolicy(url, "chat-model", guided=False)
    try:
        result = await Agent(web, policy, episode=EpisodeConfig(guided=False)).answer(QUESTION)
    finally:
        await policy.aclose()
    assert result.answer == ANSWER
    assert [r.extract for r in result.references] == [CROW_QUOTE]
    assert result.candidates[0].actions == 4 and result.candidates[0].invalid_actions == 0
    *browsing, answering = requests
    assert len(browsing) == 4
    offered = []
    for request in browsing:
        assert request["messages"][0] == {"role": "system", "content": BROWSING_SYSTEM}
        assert request["messages"][1]["role"] == "user"
        assert request["messages"][1]["content"].startswith(f"♦Question\n{QUESTION}\n")
        assert request["tool_choice"] == "required" and "structured_outputs" not in request
        offered.append(
            {t["function"]["name"]: t["function"]["parameters"] for t in request["tools"]}
        )
    # the tools of the commands possible at each step, narrowed to what is in view
    assert list(offered[0]) == ["search"]  # a blank page
    assert 0 in offered[1]["open_link"]["properties"]["link"]["enum"]
    assert "quote" not in offered[1] and "finish" not in offered[2]  # results; no quote yet
    assert CROW_QUOTE in offered[2]["quote"]["properties"]["text"]["enum"]
    assert "back" in offered[2] and "finish" in offered[3]
    assert CROW_QUOTE not in offered[3].get("quote", {}).get("properties", {}).get("text", {}).get(
        "enum", []
    )  # quoted already
    assert answering["messages"][0]["content"] == ANSWER_SYSTEM
    assert answering["messages"][1]["content"] == (
        f"Question: {QUESTION}\n\nQuotes:\n\n[1] Crow (en.wikipedia.org)\n{CROW_QUOTE}"
    )
    assert [tool["function"]["name"] for tool in answering["tools"]] == ["answer", "decline"]


async def test_a_tool_call_outside_the_contract_is_refused(web: Web) -> None:
    """A server that cannot constrain tool calls quotes what the page does not show: the
    browser refuses it and says why in the next observation."""
    requests: list[dict[str, Any]] = []
    app = chat_server("llama.cpp", requests, quote="Crows are the largest birds on Earth.")
    with serve(app) as base:
        policy = ChatPolicy(base + "/v1", "chat-model", guided=False)
        try:
            agent = Agent(web, policy, episode=EpisodeConfig(guided=False))
            result = await agent.answer(QUESTION, max_actions=6)
        finally:
            await policy.aclose()
    [candidate] = result.candidates
    assert candidate.invalid_actions == 4 and candidate.end_reason == "action_limit"
    assert result.answer is None and candidate.references == []
    after = requests[3]["messages"][1]["content"]
    assert "Refused: Quote: that text is not on the page" in after


async def test_a_server_without_required_tool_calls_is_asked_for_the_call_as_json(
    web: Web,
) -> None:
    """vLLM refuses tool_choice "required" without a --tool-call-parser: the policy asks
    for the call by a JSON schema instead (response_format), from then on."""
    requests: list[dict[str, Any]] = []
    with serve(chat_server("vllm", requests)) as base:
        policy = ChatPolicy(base + "/v1", "chat-model", guided=False)
        try:
            result = await Agent(web, policy, episode=EpisodeConfig(guided=False)).answer(QUESTION)
        finally:
            await policy.aclose()
    assert result.answer == ANSWER and [r.extract for r in result.references] == [CROW_QUOTE]
    assert policy.calls == "schema" and "tools" in requests[0]  # refused once, then JSON
    for request in requests[1:]:
        assert "tools" not in request
        schema = request["response_format"]["json_schema"]["schema"]
        names = [c["properties"]["name"]["enum"][0] for c in schema.get("anyOf", [schema])]
        assert all(f"- {name}:" in request["messages"][0]["content"] for name in names)
    third = requests[3]["response_format"]["json_schema"]["schema"]["anyOf"]
    quoting = next(c for c in third if c["properties"]["name"]["enum"] == ["quote"])
    assert CROW_QUOTE in quoting["properties"]["arguments"]["properties"]["text"]["enum"]


async def test_the_model_s_decline_is_the_decline(web: Web) -> None:
    requests: list[dict[str, Any]] = []
    with serve(chat_server("ollama", requests, declines=True)) as base:
        policy = ChatPolicy(base + "/v1", "chat-model", guided=False)
        try:
            result = await Agent(web, policy, episode=EpisodeConfig(guided=False)).answer(QUESTION)
        finally:
            await policy.aclose()
    assert result.answer == decline_answer(QUESTION) and result.declined
    assert result.references == []  # a decline cites nothing


@pytest.mark.parametrize("rewrites", [True, False])
async def test_a_chat_model_makes_a_follow_up_standalone_the_rule_its_fallback(
    web: Web, rewrites: bool
) -> None:
    history = [
        Turn("user", "Which birds are of the genus Corvus?"),
        Turn("assistant", "Crows are birds of the genus Corvus [1]."),
    ]
    follow_up = "what genus are they"
    requests: list[dict[str, Any]] = []
    rewrite = "What genus are crows?" if rewrites else None
    events: list[TraceEvent] = []

    async def collect(event: TraceEvent) -> None:
        events.append(event)

    with serve(chat_server("llama.cpp", requests, rewrite=rewrite)) as base:
        policy = ChatPolicy(base + "/v1", "chat-model", guided=False, max_retries=0)
        try:
            agent = Agent(web, policy, episode=EpisodeConfig(guided=False))
            result = await agent.answer(follow_up, history=history, emit=collect)
        finally:
            await policy.aclose()
    [made] = [e for e in events if isinstance(e, FollowUpEvent)]
    if rewrites:  # the model's own rewrite
        assert (made.by, result.question_asked, made.replaced) == ("policy", rewrite, [])
        asked = requests[0]["messages"][1]["content"]
        assert asked == (
            "User: Which birds are of the genus Corvus?\n"
            "Assistant: Crows are birds of the genus Corvus [1].\nUser: what genus are they"
        )
    else:  # the model failed: the rule
        assert (made.by, result.question_asked) == ("rule", "what genus are Crows")
    assert result.answer == ANSWER


def test_every_tool_call_names_its_command() -> None:
    from webgpt.agent.chat_policy import _as_text

    def said(name: str, arguments: dict[str, Any] | str, question: str = QUESTION) -> str:
        args = arguments if isinstance(arguments, str) else json.dumps(arguments)
        message = {"tool_calls": [{"function": {"name": name, "arguments": args}}]}
        return _as_text(message, question)

    assert said("search", {"query": "crow corvus"}) == "Search crow corvus"
    assert said("open_link", {"link": 3}) == "Clicked on link 3"
    assert said("find", {"text": "genus"}) == "Find in page: genus"
    assert said("quote", {"text": CROW_QUOTE}) == f"Quote: {CROW_QUOTE}"
    assert said("scroll", {"direction": "up", "windows": 2}) == "Scrolled up 2"
    assert said("back", "") == "Back" and said("finish", "{}") == "End: Answer"
    assert said("answer", {"text": ANSWER}) == ANSWER
    assert said("decline", {}) == decline_answer(QUESTION)
    # Ollama's native shape: the arguments as an object, not a JSON text
    native = {"tool_calls": [{"function": {"name": "search", "arguments": {"query": "crows"}}}]}
    assert _as_text(native, QUESTION) == "Search crows"
    # no tool call: the text as written, for the browser to take or refuse
    assert _as_text({"content": " Search crows \n"}, QUESTION) == "Search crows"
    assert said("delete_files", {"path": "/"}).startswith("delete_files")  # not a command


def test_the_service_serves_a_chat_model_it_is_pointed_at(
    offline_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """WEBGPT_POLICY_FORMAT=chat through the service's own wiring (build_service)."""
    import httpx

    from webgpt.agent.errors import ConfigurationError
    from webgpt.service.app import create_app
    from webgpt.service.server import build_service
    from webgpt.service.settings import ServiceSettings

    monkeypatch.setenv("WEBGPT_OFFLINE_STORE", str(offline_store))
    monkeypatch.setenv("WEBGPT_JS", "never")
    requests: list[dict[str, Any]] = []
    with serve(chat_server("ollama", requests)) as chat:
        settings = ServiceSettings(
            _env_file=None,  # type: ignore[call-arg]
            policy_url=f"{chat}/v1",
            policy_model="qwen3:4b",
            policy_format="chat",
            feedback_db=tmp_path / "fb.sqlite",
        )
        assert settings.episode_config(0.0).guided is False  # tool calls carry no grammar
        with serve(create_app(build_service(settings))) as base:
            result = httpx.post(f"{base}/answer", json={"question": QUESTION}, timeout=60).json()
    assert result["answer"] == ANSWER and result["versions"]["policy"] == "qwen3:4b"
    assert all(r["tool_choice"] == "required" for r in requests)
    with pytest.raises(ConfigurationError, match="a chat model you bring"):
        build_service(ServiceSettings(_env_file=None, policy_format="chat"))  # type: ignore[call-arg]


async def test_a_broken_tool_call_ends_its_episode_with_a_clear_error(web: Web) -> None:
    """Arguments that are not JSON: the policy's answer is malformed, said as such; the
    episode fails alone and the request reports it, nothing is run."""

    async def broken(request: Request) -> JSONResponse:
        call = {"type": "function", "function": {"name": "search", "arguments": "{query: crows"}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return JSONResponse(chat_response(message, "llama.cpp"))

    app = Starlette(routes=[Route("/v1/chat/completions", broken, methods=["POST"])])
    with serve(app) as base:
        policy = ChatPolicy(base + "/v1", "chat-model", guided=False)
        try:
            with pytest.raises(PolicyResponseError, match="malformed chat completions answer"):
                await Agent(web, policy, episode=EpisodeConfig(guided=False)).answer(QUESTION)
        finally:
            await policy.aclose()
