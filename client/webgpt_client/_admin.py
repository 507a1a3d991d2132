"""The operator's routes (`/admin/...`): exports of what people recorded, for training.

They need a key with the `admin` role (else PermissionDeniedError). An export is JSON
lines streamed from a server-side cursor; the SDK hands the rows on as they arrive, so
neither end holds the whole export however many rows there are.
"""

from collections.abc import Awaitable, Callable

import httpx

from webgpt_client._streaming import AsyncJSONLines, JSONLines

# Client._open_lines / AsyncClient._open_lines: path -> the streamed response of a GET,
# with the client's retries and typed errors.
OpenLines = Callable[[str], httpx.Response]
AsyncOpenLines = Callable[[str], Awaitable[httpx.Response]]

COMPARISONS = "/admin/export/comparisons"
DEMONSTRATIONS = "/admin/export/demonstrations"


class Admin:
    """`client.admin`: exports, each row a dict. Errors (403, 401, ...) raise when the
    method is called; iterating reads the rows:

        with client.admin.export_comparisons() as rows:
            for row in rows:
                ...
    """

    def __init__(self, open_lines: OpenLines) -> None:
        self._open_lines = open_lines

    def export_comparisons(self) -> JSONLines:
        """The stored comparisons in the format `webgpt train rm` reads: {question, a, b,
        preference, label, ...}, a and b each {answer, quotes}."""
        return JSONLines(self._open_lines(COMPARISONS))

    def export_demonstrations(self) -> JSONLines:
        """The stored demonstrations: {id, question, format, record}; format is
        "demonstration" (recorded in a session) or "commands" (bare commands, which `webgpt
        feedback export --demonstrations` replays)."""
        return JSONLines(self._open_lines(DEMONSTRATIONS))


class AsyncAdmin:
    """`AsyncClient.admin`: the same methods as `Admin`, awaited; `async for` the rows."""

    def __init__(self, open_lines: AsyncOpenLines) -> None:
        self._open_lines = open_lines

    async def export_comparisons(self) -> AsyncJSONLines:
        return AsyncJSONLines(await self._open_lines(COMPARISONS))

    async def export_demonstrations(self) -> AsyncJSONLines:
        return AsyncJSONLines(await self._open_lines(DEMONSTRATIONS))
