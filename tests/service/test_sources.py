"""Quotes from one page are listed under one source, each quote keeping the [n] the answer
cites it by: on /answer (JSON and stream), the OpenAI route and MCP."""

import asyncio
import json
from collections.abc import Callable
from contextlib import AbstractContextManager

import httpx
import openai

from tests.agent.fake_policy import Script
from tests.service.test_mcp import http_client
from webgpt.agent.trace import Reference
from webgpt.service.protocol import sources_of

ServiceUrl = Callable[..., AbstractContextManager[str]]
CROW = "https://en.wikipedia.org/wiki/Crow"
RAVEN = "https://en.wikipedia.org/wiki/Raven"
GENUS = "Crows are birds of the genus Corvus."
FACES = "Crows can recognise individual human faces and remember them for years."
ANSWER = "Crows are corvids [1] that remember faces [2]."


def reference(n: int, url: str, extract: str) -> Reference:
    title = url.rsplit("/", 1)[1]
    return Reference(n=n, title=title, url=url, domain="en.wikipedia.org", extract=extract)


def test_sources_group_quotes_by_page_in_the_order_first_cited() -> None:
    references = [
        reference(1, CROW, GENUS),
        reference(2, RAVEN, "The Raven is a large Corvus species."),
        reference(3, CROW, FACES),
    ]
    sources = sources_of(references)
    assert [(s.url, [(q.n, q.extract) for q in s.quotes]) for s in sources] == [
        (CROW, [(1, GENUS), (3, FACES)]),
        (RAVEN, [(2, "The Raven is a large Corvus species.")]),
    ]


def quote_twice(script: Script) -> None:
    """The policy quotes two sentences of the Crow page and cites both (the service runs
    with relevant_quotes=0, so each quote is kept as the policy took it)."""
    script.oracle_quote = None
    script.commands = ["Search crow", "Clicked on link 0", f"Quote: {GENUS}", f"Quote: {FACES}",
                       "End: Answer"]  # fmt: skip
    script.answers = [ANSWER] * 5


def assert_one_page_two_quotes(body: dict) -> None:  # type: ignore[type-arg]
    assert [(r["n"], r["url"], r["extract"]) for r in body["references"]] == [
        (1, CROW, GENUS),
        (2, CROW, FACES),
    ]  # each [n] still names its own text
    [source] = body["sources"]
    assert source["url"] == CROW and source["title"] == "Crow"
    assert source["quotes"] == [{"n": 1, "extract": GENUS}, {"n": 2, "extract": FACES}]


def test_answer_lists_one_page_quoted_twice_as_one_source(
    service_url: ServiceUrl, script: Script
) -> None:
    quote_twice(script)
    with service_url(relevant_quotes=0) as base:
        body = httpx.post(f"{base}/answer", json={"question": "crow corvus"}, timeout=60).json()
        quote_twice(script)
        with httpx.stream(
            "POST", f"{base}/answer", json={"question": "crow corvus", "stream": True}, timeout=60
        ) as response:
            data = [line[6:] for line in response.iter_lines() if line.startswith("data: {")]
    assert body["answer"] == ANSWER, body
    assert_one_page_two_quotes(body)
    final = json.loads(data[-1])
    assert final["type"] == "final"
    assert_one_page_two_quotes(final["result"])


def test_openai_and_mcp_carry_the_sources(service_url: ServiceUrl, script: Script) -> None:
    quote_twice(script)
    with (
        service_url(relevant_quotes=0) as base,
        openai.OpenAI(base_url=f"{base}/v1", api_key="x", max_retries=0) as client,
    ):
        completion = client.chat.completions.create(
            model="webgpt", messages=[{"role": "user", "content": "crow corvus"}]
        )
        message = completion.choices[0].message
        assert message.content == ANSWER
        assert_one_page_two_quotes(message.model_extra or {})

        async def call() -> dict:  # type: ignore[type-arg]
            async with http_client(base) as mcp:
                result = await mcp.call_tool("answer", {"question": "crow corvus"})
            assert result.structured_content is not None, result.content
            return result.structured_content

        quote_twice(script)
        tool = asyncio.run(call())
    assert_one_page_two_quotes(tool)
