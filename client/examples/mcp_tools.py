"""List the service's MCP tools and call `answer` through the official `mcp` package (pip
install mcp): the service speaks MCP over streamable HTTP at its base URL + /mcp, behind
the same API keys as every route (docs/mcp.md). Each browsing action arrives as a
progress notification while the answer is worked out.

WEBGPT_BASE_URL=http://127.0.0.1:8080 python client/examples/mcp_tools.py "Why crows?"
"""

import asyncio
import os
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def on_progress(progress: float, total: float | None, message: str | None) -> None:
    print(f"  {message}")  # "episode 0: Search ..."


async def main() -> None:
    question = " ".join(sys.argv[1:]) or "How do crows recognise faces?"
    base_url = os.environ.get("WEBGPT_BASE_URL", "http://127.0.0.1:8080").rstrip("/")
    api_key = os.environ.get("WEBGPT_API_KEY")  # none: a service without keys (loopback)
    # The key goes in the HTTP client's headers: MCP itself carries no credentials.
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=600) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as client,
    ):
        listed = await client.list_tools()
        print("tools:", ", ".join(sorted(tool.name for tool in listed.tools)))
        result = await client.call_tool(
            "answer", {"question": question}, progress_callback=on_progress
        )
    if result.is_error:  # the tool's error text says why (overloaded, a deadline, ...)
        sys.exit(f"error: {result.content}")
    # The answer as structured content, as its JSON Schema in the listing describes it.
    answer = result.structured_content or {}
    print(answer.get("answer") or "(no answer)")
    for reference in answer.get("references", []):
        print(f"[{reference['n']}] {reference['title']} — {reference['url']}")


if __name__ == "__main__":
    asyncio.run(main())
