"""The MCP server: our answers and our text browser as tools for agent hosts and IDEs, on
the official `mcp` SDK (docs/mcp.md).

- `answer` browses and answers as POST /answer does (best_of reranked by the reward model),
  with a progress notification per browsing step;
- `search`, `open`, `find`, `scroll`, `back`, `quote` and `answer_from_quotes` let a host
  browse itself, through the same BrowserSession as the policy (SSRF guard, fetch limits,
  censoring), in sessions of service.browsing. MCP's 2026 protocol keeps no connection
  state, so a session is named by the id `search` returns, passed back to the others.

Transports: stdio (`webgpt mcp`, one local user) and streamable HTTP at /mcp of the
service (service.app), behind its API keys (role `answer`) and rate limits.
"""

from collections.abc import Awaitable, Callable, Mapping
from contextlib import aclosing
from typing import Annotated, Any, Literal, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from pydantic import BaseModel, Field, ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from webgpt.agent.episode import ANSWER_MAX_ACTIONS
from webgpt.agent.errors import AgentError
from webgpt.agent.trace import ActionEvent, Reference
from webgpt.browser.errors import BrowserError
from webgpt.browser.events import InvalidActionEvent
from webgpt.evals.questions import Question
from webgpt.reward.errors import RewardServerError
from webgpt.service.access import LOCAL, Access
from webgpt.service.errors import (
    Forbidden,
    InvalidRequest,
    ServiceError,
    public_message,
    validation_message,
)
from webgpt.service.protocol import (
    MAX_HISTORY_TURNS,
    AnswerRequest,
    FinalEvent,
    HistoryTurn,
    SessionState,
    Source,
    StreamErrorEvent,
    sources_of,
)
from webgpt.service.serving import AnswerService

T = TypeVar("T")
INSTRUCTIONS = (
    "Answers open questions by browsing the web, with every claim cited to a quote. "
    "Call `answer` for a cited answer; or browse yourself: `search` starts a session "
    "(keep its `id`), then `open`, `find`, `scroll`, `back` and `quote`, and "
    "`answer_from_quotes` writes the cited answer from what you quoted."
)
# The failures a tool reports to the host as a tool error; anything else is a bug, logged
# by the SDK, reported without its details.
EXPECTED = (ServiceError, AgentError, BrowserError, RewardServerError)

SessionId = Annotated[str, Field(description="the `id` that `search` returned")]


class ToolAnswer(BaseModel):
    """A cited answer: `answer` cites `references` as [n]."""

    answer: str | None = Field(description="None when no browsing found anything to quote")
    declined: bool = Field(description="the answer says the pages found do not answer")
    references: list[Reference]
    sources: list[Source] = Field(description="the references listed under the page of each")
    versions: dict[str, str | int | None]
    id: str | None = Field(None, description="the answer's id for POST /feedback")
    question_asked: str | None = Field(
        None, description="what was browsed: the question, or a follow-up made standalone"
    )


def build_mcp(service: AnswerService, access: Access | None) -> MCPServer:
    """The server and its tools; access None: one local user (stdio)."""
    sessions = service.mcp_sessions
    mcp: MCPServer = MCPServer(
        "webgpt", instructions=INSTRUCTIONS, version="0.1.0", log_level="WARNING"
    )

    def owner(ctx: Context) -> str:
        """Whose sessions these are: the API key the HTTP gate let through."""
        headers: Mapping[str, str] | None = ctx.headers
        if access is None or headers is None:
            return LOCAL.id
        return access.identify(headers.get("authorization", "")).id

    async def reported(work: Awaitable[T]) -> T:
        try:
            return await work
        except EXPECTED as error:
            raise ToolError(public_message(error)) from None

    async def browse(caller: str, session: str, command: str) -> SessionState:
        """The session after command; a command the page cannot take (no link 7, nothing
        to go back to) is a tool error saying why (it still counts as an action)."""
        state = await reported(sessions.step(caller, session, command))
        if isinstance(state.event, InvalidActionEvent):
            raise ToolError(state.event.reason)
        return state

    @mcp.tool(structured_output=True)
    async def answer(
        question: Annotated[str, Field(min_length=1, description="the question, as typed")],
        ctx: Context,
        best_of: Annotated[
            int,
            Field(
                ge=1,
                description="episodes to browse; the reward model picks the best of them "
                "(as /answer's n)",
            ),
        ] = 1,
        max_actions: Annotated[
            int, Field(ge=1, description="browsing actions per episode")
        ] = ANSWER_MAX_ACTIONS,
        engine: Annotated[
            str | None, Field(description="search engine; default the service's")
        ] = None,
        history: Annotated[
            list[HistoryTurn],
            Field(
                max_length=MAX_HISTORY_TURNS,
                description="the conversation before the question, oldest first "
                "([{role: user|assistant, content}]): a follow-up such as 'When did he die?' "
                "is browsed made standalone from it (question_asked)",
            ),
        ] = [],  # noqa: B006 (a tool's schema default; never mutated)
    ) -> ToolAnswer:
        """Answer a question by browsing the web: a long-form answer whose every claim
        cites a quote ([n] -> references[n-1]). Reports progress per browsing action."""
        try:
            request = AnswerRequest.model_validate(
                {
                    "question": question,
                    "n": best_of,
                    "max_actions": max_actions,
                    "engine": engine,
                    "history": history,
                }
            )
        except ValidationError as error:
            raise ToolError(validation_message(error.errors())) from None

        async def run() -> ToolAnswer:
            actions = 0
            # Closed on the way out: a host that cancels the call cancels the episodes.
            async with aclosing(service.stream(request)) as events:
                async for event in events:
                    if isinstance(event, ActionEvent):
                        actions += 1
                        await ctx.report_progress(
                            actions, None, f"episode {event.episode}: {event.command}"
                        )
                    elif isinstance(event, FinalEvent):
                        result = event.result
                        return ToolAnswer(
                            answer=result.answer,
                            declined=result.declined,
                            references=result.references,
                            sources=result.sources,
                            versions=result.versions,
                            id=result.id,
                            question_asked=result.question_asked,
                        )
                    elif isinstance(event, StreamErrorEvent):
                        raise ToolError(event.message)
            raise ToolError("the answer stream ended without an answer")

        return await reported(run())

    @mcp.tool(structured_output=True)
    async def search(
        query: Annotated[str, Field(min_length=1, max_length=200)],
        ctx: Context,
        session: Annotated[
            str | None, Field(description="a session to search in; none: start one")
        ] = None,
        question: Annotated[
            str | None,
            Field(description="when starting: the question you browse for (default: query)"),
        ] = None,
    ) -> SessionState:
        """Search the web. Without `session`, starts a browsing session: keep its `id` for
        the other browsing tools. Results are links [n] that `open` takes."""
        caller = owner(ctx)

        async def run() -> SessionState:
            session_id = session
            if session_id is None:

                async def pick() -> tuple[str, Question | None]:
                    return question or query, None

                session_id = await sessions.create(caller, pick)
            return await browse(caller, session_id, f"Search {query}")

        return await reported(run())

    @mcp.tool(structured_output=True)
    async def open(
        session: SessionId,
        ctx: Context,
        link: Annotated[int | None, Field(ge=0, description="a link number [n] in view")] = None,
        url: Annotated[str | None, Field(description="an http(s) URL")] = None,
    ) -> SessionState:
        """Open a search result or a link on the page by its number, or a URL."""
        if (link is None) == (url is None):
            raise ToolError("give either link or url")
        caller = owner(ctx)
        if url is not None:
            return await reported(sessions.open_url(caller, session, url))
        return await browse(caller, session, f"Clicked on link {link}")

    @mcp.tool(structured_output=True)
    async def find(
        session: SessionId,
        text: Annotated[str, Field(min_length=1, max_length=200)],
        ctx: Context,
    ) -> SessionState:
        """Scroll to the next occurrence of text on the page."""
        return await browse(owner(ctx), session, f"Find in page: {text}")

    @mcp.tool(structured_output=True)
    async def scroll(
        session: SessionId,
        ctx: Context,
        direction: Literal["down", "up"] = "down",
        windows: Annotated[int, Field(ge=1, le=3, description="windows to move")] = 1,
    ) -> SessionState:
        """Scroll the page by whole windows."""
        command = f"Scrolled {direction} {windows}"
        return await browse(owner(ctx), session, command)

    @mcp.tool(structured_output=True)
    async def back(session: SessionId, ctx: Context) -> SessionState:
        """Go back to the previous page."""
        return await browse(owner(ctx), session, "Back")

    @mcp.tool(structured_output=True)
    async def quote(
        session: SessionId,
        text: Annotated[
            str,
            Field(
                min_length=1,
                max_length=500,
                description="text on the page, in view or not, verbatim; or 'start━end'",
            ),
        ],
        ctx: Context,
    ) -> SessionState:
        """Save an extract of the page as a quote an answer can cite."""
        return await browse(owner(ctx), session, f"Quote: {text}")

    @mcp.tool(structured_output=True)
    async def answer_from_quotes(session: SessionId, ctx: Context) -> ToolAnswer:
        """Write the session's question's answer from its quotes, citing them as [n]."""
        caller = owner(ctx)

        async def run() -> ToolAnswer:
            opened = await sessions.get(caller, session)
            async with opened.lock:
                if not opened.session.quotes:
                    raise InvalidRequest("quote something first: the answer cites quotes")
                result, policy = await service.answer_from_quotes(opened.session)
            return ToolAnswer(
                answer=result.answer,
                declined=result.declined,
                references=result.references,
                sources=sources_of(result.references),
                versions={"policy": policy},
                id=None,  # not recorded: no answer record for feedback to name
                question_asked=opened.session.question,
            )

        return await reported(run())

    return mcp


class McpGate:
    """/mcp behind the service's API keys and rate limits: every HTTP request of the
    transport pays a token of its key's bucket, and the key needs the `answer` role."""

    def __init__(
        self,
        app: ASGIApp,
        access: Access,
        refuse: Callable[[Exception, str], ASGIApp],
    ) -> None:
        self.app = app
        self.access = access
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            caller = self.access.identify(headers.get("authorization", ""))
            self.access.admit(caller)
            if not caller.may("answer"):
                raise Forbidden("this API key does not have the 'answer' role")
        except ServiceError as error:
            await self.refuse(error, scope["path"])(scope, receive, send)
            return
        await self.app(scope, receive, send)


def http_transport(mcp: MCPServer, host: str) -> tuple[ASGIApp, Callable[[], Any]]:
    """The streamable HTTP endpoint of mcp, and the context manager that runs its session
    manager (entered in the app's lifespan). On a loopback host the SDK checks Host and
    Origin against DNS rebinding; elsewhere the API keys the service then requires do."""
    mcp.streamable_http_app(host=host)  # builds the session manager
    manager = mcp.session_manager
    return StreamableHTTPASGIApp(manager), manager.run


async def run_stdio(service: AnswerService) -> None:
    """`webgpt mcp`: the tools on stdin/stdout while the service runs."""
    async with service.running():
        await build_mcp(service, None).run_stdio_async()
