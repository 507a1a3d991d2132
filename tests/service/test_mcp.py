"""The MCP server through the official `mcp` client: streamable HTTP at /mcp of the real
app, and stdio through `webgpt mcp` in its own process; the scripted policy on the offline
web (service.mcp_server)."""

import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.agent.fake_policy import Script
from tests.browser.fixture_site import HitCounter
from tests.conftest import CROW_QUOTE
from tests.servers import COMMAND_ENV, serve
from webgpt.agent.episode import ANSWER_MAX_ACTIONS
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.browser.web import Web, WebOptions
from webgpt.service.app import create_app
from webgpt.service.metrics import Metrics
from webgpt.service.serving import AnswerService
from webgpt.service.settings import ServiceSettings
from webgpt.service.store import FeedbackStore

TOOLS = {"answer", "search", "open", "find", "scroll", "back", "quote", "answer_from_quotes"}
ANSWER = "Crows are corvids [1]."
CROW_URL = "https://en.wikipedia.org/wiki/Crow"


@asynccontextmanager
async def http_client(base: str, key: str | None = None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
    ):
        yield client


@contextmanager
def live_web_service(
    offline_store: Path, policy_url: str, tmp_path: Path, **overrides: Any
) -> Iterator[str]:
    """The app on a Web that may fetch live URLs (through its SSRF guard), unlike the
    offline-only one of the service_url fixture."""
    settings = ServiceSettings(policy_url=policy_url, policy_model="scripted", **overrides)
    web = Web(WebOptions(offline_store=offline_store, offline_only=False, js_mode="never"))
    policy = OpenAIPolicy(policy_url, "scripted", backoff_s=0.01, max_retries=1)
    store = FeedbackStore(tmp_path / "fb.sqlite")
    service = AnswerService(settings, web, policy, None, Metrics(), store)
    with serve(create_app(service)) as base:
        yield base


async def test_tools_are_listed_and_answer_is_cited_with_progress(service_url) -> None:  # type: ignore[no-untyped-def]
    progress: list[tuple[float, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message))

    with service_url(api_keys="mcp-key") as base:
        async with http_client(base, "mcp-key") as client:
            listed = await client.list_tools()
            assert {tool.name for tool in listed.tools} == TOOLS
            schema = next(t for t in listed.tools if t.name == "answer").input_schema
            assert schema["required"] == ["question"]
            assert schema["properties"]["max_actions"]["default"] == ANSWER_MAX_ACTIONS
            result = await client.call_tool(
                "answer", {"question": "crow corvus"}, progress_callback=on_progress
            )
    assert not result.is_error, result.content
    answer = result.structured_content
    assert answer is not None
    assert answer["answer"] == ANSWER and answer["declined"] is False
    assert answer["references"][0]["url"] == CROW_URL
    assert answer["references"][0]["extract"] == CROW_QUOTE
    assert answer["id"].startswith("ans_")
    # One notification per browsing action, in order: search, click, quote, end.
    assert [done for done, _ in progress] == [1, 2, 3, 4]
    assert progress[0][1] == "episode 0: Search crow corvus"


async def test_a_host_browses_quotes_and_gets_the_answer_written(  # type: ignore[no-untyped-def]
    service_url, script: Script
) -> None:
    with service_url() as base:
        async with http_client(base) as client:
            searched = await client.call_tool("search", {"query": "crow corvus"})
            state = searched.structured_content
            assert state is not None and state["title"] == "Search results for: crow corvus"
            session = state["id"]
            assert any("Crow" in line for line in state["lines"])
            opened = await client.call_tool("open", {"session": session, "link": 0})
            assert opened.structured_content["url"] == CROW_URL  # type: ignore[index]
            found = await client.call_tool("find", {"session": session, "text": "genus"})
            assert found.structured_content["event"]["found"] is True  # type: ignore[index]
            quoted = await client.call_tool("quote", {"session": session, "text": CROW_QUOTE})
            assert quoted.structured_content["quotes"][0]["url"] == CROW_URL  # type: ignore[index]
            back = await client.call_tool("back", {"session": session})
            assert back.structured_content["title"].startswith("Search results")  # type: ignore[index]
            written = await client.call_tool("answer_from_quotes", {"session": session})
            assert not written.is_error, written.content
            assert written.structured_content["answer"] == ANSWER  # type: ignore[index]
            assert written.structured_content["references"][0]["url"] == CROW_URL  # type: ignore[index]
            # one answer, written greedily (agent.episode.answer_temperature)
            assert {r["temperature"] for r in script.requests} == {0.0}


async def test_bad_arguments_and_unknown_sessions_are_tool_errors(service_url) -> None:  # type: ignore[no-untyped-def]
    with service_url() as base:
        async with http_client(base) as client:
            state = (await client.call_tool("search", {"query": "crow"})).structured_content
            session = state["id"]  # type: ignore[index]
            too_far = await client.call_tool("scroll", {"session": session, "windows": 9})
            assert too_far.is_error and "windows" in too_far.content[0].text  # type: ignore[union-attr]
            neither = await client.call_tool("open", {"session": session})
            assert neither.is_error and "either link or url" in neither.content[0].text  # type: ignore[union-attr]
            unknown = await client.call_tool("back", {"session": "nope"})
            assert unknown.is_error and "no open browser session" in unknown.content[0].text  # type: ignore[union-attr]
            nothing = await client.call_tool("answer_from_quotes", {"session": session})
            assert nothing.is_error and "quote something first" in nothing.content[0].text  # type: ignore[union-attr]
            missing = await client.call_tool("answer", {})
            assert missing.is_error and "question" in missing.content[0].text  # type: ignore[union-attr]
            nowhere = await client.call_tool("back", {"session": session})
            assert nowhere.is_error and "no page to go back to" in nowhere.content[0].text  # type: ignore[union-attr]
            # The server is still there after all of them.
            assert (
                await client.call_tool("find", {"session": session, "text": "Crow"})
            ).structured_content


async def test_a_hostile_url_is_refused_before_any_request(
    offline_store: Path, policy_url: str, tmp_path: Path, internal: tuple[str, HitCounter]
) -> None:
    internal_url, counter = internal
    with live_web_service(offline_store, policy_url, tmp_path) as base:
        async with http_client(base) as client:
            state = (await client.call_tool("search", {"query": "crow"})).structured_content
            session = state["id"]  # type: ignore[index]
            for url in (f"{internal_url}/admin", "file:///etc/passwd"):
                opened = await client.call_tool("open", {"session": session, "url": url})
                assert not opened.is_error
                assert opened.structured_content["event"]["kind"] == "error"  # type: ignore[index]
                assert "root:" not in str(opened.structured_content)
    assert counter.hits == 0


async def test_http_transport_takes_the_api_keys_and_roles(service_url) -> None:  # type: ignore[no-untyped-def]
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    with service_url(api_keys="asker,labeler:label") as base:
        anonymous = httpx.post(f"{base}/mcp", json=initialize, headers=headers)
        assert anonymous.status_code == 401
        assert anonymous.json()["error"]["type"] == "unauthorized"
        labeler = httpx.post(
            f"{base}/mcp", json=initialize, headers={**headers, "Authorization": "Bearer labeler"}
        )
        assert labeler.status_code == 403
        async with http_client(base, "asker") as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS


@pytest.mark.slow  # starts a process
async def test_stdio_server_answers_with_citations(offline_store: Path, policy_url: str) -> None:
    env = {
        **COMMAND_ENV,
        "WEBGPT_HOME": str(offline_store.parent),
        "WEBGPT_OFFLINE_STORE": str(offline_store),
        "WEBGPT_OFFLINE_ONLY": "true",
        "WEBGPT_JS_MODE": "never",
    }
    command = [
        "-m",
        "webgpt.service.cli",
        "mcp",
        "--policy-url",
        policy_url,
        "--policy-model",
        "scripted",
    ]
    server = StdioServerParameters(command=sys.executable, args=command, env=env)
    async with Client(server) as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        result = await client.call_tool("answer", {"question": "crow corvus"})
        assert not result.is_error, result.content
        assert result.structured_content["answer"] == ANSWER  # type: ignore[index]
        state = (await client.call_tool("search", {"query": "crow corvus"})).structured_content
        assert state["title"] == "Search results for: crow corvus"  # type: ignore[index]


async def test_the_docs_table_lists_every_tool_with_its_arguments(service_url) -> None:  # type: ignore[no-untyped-def]
    docs = (Path(__file__).parents[2] / "docs" / "mcp.md").read_text()
    rows = {
        line.split("|")[1].strip(" `"): line.split("|")[2]
        for line in docs.splitlines()
        if line.startswith("| `")
    }
    with service_url() as base:
        async with http_client(base) as client:
            tools = (await client.list_tools()).tools
    assert set(rows) == {tool.name for tool in tools}
    for tool in tools:
        for argument in tool.input_schema["properties"]:
            assert f"`{argument}`" in rows[tool.name], (tool.name, argument)
