"""Reading server-sent events line by line.

An event stream ends a line at CR, LF or CRLF only (the SSE specification). httpx's
`aiter_lines()` ends one at every Unicode line break as `str.splitlines` does, U+2028 and
U+0085 among them, which a JSON string may hold unescaped: vLLM writes its completions'
text so, and an answer holding one came in two halves that were each no JSON
("malformed stream chunk" on generated dev, 2026-11-27).
"""

import re
from collections.abc import AsyncIterator

import httpx

_LINE_END = re.compile(r"\r\n|\r|\n")


async def sse_lines(response: httpx.Response) -> AsyncIterator[str]:
    """The lines of an event stream as they arrive, without their line ends."""
    pending = ""
    async for text in response.aiter_text():
        *lines, pending = _LINE_END.split(pending + text)
        for line in lines:
            yield line
    if pending:
        yield pending
