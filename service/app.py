"""The HTTP surface. Routes only translate HTTP; the logic is in service.serving."""

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel
from sse_starlette import EventSourceResponse
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from webgpt.agent.errors import AgentError
from webgpt.reward.errors import RewardServerError
from webgpt.service.access import Access
from webgpt.service.chat import openai_error
from webgpt.service.errors import (
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    ServiceError,
    invalid_request,
    public_message,
    retry_after,
    status_of,
)
from webgpt.service.mcp_server import McpGate, build_mcp, http_transport
from webgpt.service.metrics import Metrics
from webgpt.service.protocol import (
    AnswerRequest,
    AnswerResponse,
    ChatRequest,
    ErrorBody,
    ErrorDetail,
    Feedback,
    FeedbackReceipt,
    SessionAnswer,
    SessionCreate,
    SessionState,
    SessionStep,
)
from webgpt.service.serving import AnswerService

logger = logging.getLogger("webgpt.service")
STATIC = Path(__file__).parent / "static"
OPENAI_ROUTES = "/v1/"  # where errors take OpenAI's shape (service.chat)
SSE_PING_S = 15  # under the 30-60 s idle timeouts common in proxies and load balancers


def error_response(error: Exception, retry_after_s: int, path: str = "") -> JSONResponse:
    """Our error body, or OpenAI's shape on its routes (/v1/...)."""
    status, kind, retry = status_of(error)
    status = openai_status(status, path)
    body = error_body(status, kind, public_message(error), path)
    # x-should-retry is what the official openai client obeys before its own rule (which
    # retries every 5xx, a 504 deadline included: one slow question would cost three).
    headers = {"x-should-retry": "true" if retry else "false"}
    if retry:
        headers["Retry-After"] = str(retry_after(error, retry_after_s))
    if isinstance(error, MethodNotAllowed):
        headers["Allow"] = error.allow
    return JSONResponse(body, status_code=status, headers=headers)


def routing_error(error: HTTPException, method: str, path: str) -> Exception:
    """The router's own 404 and 405 as our errors, with a message that says what to do."""
    if error.status_code == 404:
        return NotFound(f"nothing is served at {path}")
    if error.status_code == 405:
        allow = (error.headers or {}).get("Allow", "")
        return MethodNotAllowed(f"{path} takes {allow}, not {method}", allow)
    return error


def openai_status(status: int, path: str) -> int:
    """OpenAI answers a request it will not run with 400 `invalid_request_error` (its
    clients raise BadRequestError), where our own routes say 422."""
    return 400 if status == 422 and path.startswith(OPENAI_ROUTES) else status


def error_body(status: int, kind: str, message: str, path: str) -> dict[str, Any]:
    if path.startswith(OPENAI_ROUTES):
        return {"error": openai_error(status, kind, message)}
    return ErrorBody(error=ErrorDetail(type=kind, message=message)).model_dump()


async def until_disconnect(request: Request, work: Awaitable[Any]) -> Any:
    """work's result; cancelled whole (episodes, browser, policy and reward calls) when the
    client goes away first. Starlette does not cancel a JSON handler on a disconnect."""
    task = asyncio.ensure_future(work)

    async def gone() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(gone())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()  # the client left (or this handler was cancelled)
        await asyncio.gather(watcher, return_exceptions=True)
    return await task


class BodyLimit:
    """Reads request bodies up to a limit before the app sees them; beyond it, 413."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        too_large = PayloadTooLarge(f"request body is over {self.max_bytes} bytes")
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await error_response(too_large, 0, scope["path"])(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.max_bytes:
                await error_response(too_large, 0, scope["path"])(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class Observe:
    """Request id, metrics and one JSON log line per request, as plain ASGI: it sees the
    messages go by instead of re-streaming each one through a task and a memory channel, as
    Starlette's @app.middleware("http") would for every event of every stream.
    Latency is to the last byte (a stream's whole duration)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"x-request-id", b"")
        request_id = given.decode("latin-1") if given else uuid.uuid4().hex
        started = time.perf_counter()
        status = 500  # what the client gets if the app fails before it starts a response

        async def observed_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = MutableHeaders(scope=message)
                headers["x-request-id"] = request_id
            await send(message)

        try:
            await self.app(scope, receive, observed_send)
        finally:
            self._record(scope, request_id, status, time.perf_counter() - started)

    def _record(self, scope: Scope, request_id: str, status: int, elapsed: float) -> None:
        # Label by the matched route's template, so paths nobody serves add no series.
        route = getattr(scope.get("route"), "path", "unmatched")
        self.metrics.requests.labels(route, str(status)).inc()
        self.metrics.latency.labels(route).observe(elapsed)
        logger.info(
            json.dumps(
                {
                    "request_id": request_id,
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": status,
                    "seconds": round(elapsed, 4),
                }
            )
        )


def create_app(service: AnswerService) -> FastAPI:
    settings = service.settings
    # Who may call, with which roles, and how often (service.access): every route but the
    # front end and the probes takes a token from its key's bucket; /admin/... routes
    # (exports, registry verbs) take Depends(access.require("admin")).
    access = Access(
        settings.api_key_list(), settings.rate_limit_per_minute, settings.rate_limit_burst
    )
    answerer, labeler = access.require("answer"), access.require("label")
    admin = access.require("admin")

    # MCP over streamable HTTP (service.mcp_server), behind the same keys and buckets.
    mcp_endpoint, mcp_sessions = http_transport(build_mcp(service, access), settings.host)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with service.running(), mcp_sessions():
            yield

    # The error body every route may answer with, in place of the framework's {"detail"}.
    errors: dict[int | str, dict[str, Any]] = {
        "4XX": {"model": ErrorBody, "description": "the request was refused"},
        "5XX": {"model": ErrorBody, "description": "the service failed"},
    }
    app = FastAPI(title="webgpt", version="0.1.0", lifespan=lifespan, responses=errors)
    app.add_middleware(BodyLimit, max_bytes=settings.max_request_bytes)
    app.add_middleware(Observe, metrics=service.metrics)

    async def on_error(request: Request, error: Exception) -> JSONResponse:
        return error_response(error, settings.retry_after_s, request.url.path)

    # Expected failures get their status here; anything else is a logged 500 from
    # Starlette's outermost middleware, with the same error shape.
    app.add_exception_handler(ServiceError, on_error)
    app.add_exception_handler(AgentError, on_error)
    app.add_exception_handler(RewardServerError, on_error)
    app.add_exception_handler(Exception, on_error)

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        return await on_error(request, invalid_request(error.errors(), error.body))

    @app.exception_handler(HTTPException)
    async def on_routing(request: Request, error: HTTPException) -> JSONResponse:
        return await on_error(request, routing_error(error, request.method, request.url.path))

    def once(
        request: Request, caller: str, body: BaseModel, work: Callable[[], Awaitable[Any]]
    ) -> Awaitable[Any]:
        """work until the client disconnects; shared by repeats with its Idempotency-Key."""
        key = request.headers.get("idempotency-key")
        dumped = body.model_dump(mode="json")
        return until_disconnect(request, service.once(caller, key, request.url.path, dumped, work))

    @app.post("/answer", response_model=AnswerResponse)
    async def answer(
        body: AnswerRequest, request: Request, caller: str = Depends(answerer)
    ) -> Response:
        if body.stream:
            return event_stream(service.stream(body))
        result = await once(request, caller, body, lambda: service.answer(body))
        return JSONResponse(result.model_dump(mode="json"))

    @app.post("/v1/chat/completions")
    async def chat_completions(
        body: ChatRequest, request: Request, caller: str = Depends(answerer)
    ) -> Response:
        if body.stream:
            return event_stream(service.chat_stream(body))
        return JSONResponse(await once(request, caller, body, lambda: service.chat(body)))

    @app.post("/feedback", response_model=FeedbackReceipt, dependencies=[Depends(labeler)])
    async def feedback(body: Feedback) -> FeedbackReceipt:
        return await service.feedback(body)

    # Browser sessions a person drives to record a demonstration (service.demonstrating).
    sessions = service.demonstrations

    @app.post("/sessions", response_model=SessionState)
    async def create_session(body: SessionCreate, owner: str = Depends(labeler)) -> SessionState:
        return await sessions.create(owner, body.question, body.from_queue)

    @app.post("/sessions/{session_id}/step", response_model=SessionState)
    async def session_step(
        session_id: str, body: SessionStep, owner: str = Depends(labeler)
    ) -> SessionState:
        return await sessions.step(owner, session_id, body.command)

    @app.post("/sessions/{session_id}/answer", response_model=FeedbackReceipt)
    async def session_answer(
        session_id: str, body: SessionAnswer, owner: str = Depends(labeler)
    ) -> FeedbackReceipt:
        return await sessions.answer(owner, session_id, body.answer)

    @app.delete("/sessions/{session_id}", status_code=204)
    async def abandon_session(session_id: str, owner: str = Depends(labeler)) -> Response:
        await sessions.abandon(owner, session_id)
        return Response(status_code=204)

    def refuse(error: Exception, path: str) -> ASGIApp:
        return error_response(error, settings.retry_after_s, path)

    app.router.routes.append(Route("/mcp", McpGate(mcp_endpoint, access, refuse)))
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    async def front_end() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        """The last background check (service.serving): no work per probe."""
        readiness = service.readiness
        status = 200 if readiness.status == "ready" else 503
        return JSONResponse(
            readiness.model_dump(mode="json", exclude_none=True), status_code=status
        )

    @app.get("/admin/export/comparisons", dependencies=[Depends(admin)])
    async def export_comparisons() -> StreamingResponse:
        """The comparisons as `webgpt train rm` reads them, one JSON line each, streamed."""
        return jsonl_stream(service.store.export_comparisons())

    @app.get("/admin/export/demonstrations", dependencies=[Depends(admin)])
    async def export_demonstrations() -> StreamingResponse:
        """The stored demonstrations, one JSON line each: {id, question, format, record}
        (`webgpt feedback export --demonstrations` also replays the "commands" ones)."""
        rows = (
            {"id": row_id, "question": question, "format": format, "record": stored}
            for row_id, question, format, stored in service.store.export_demonstrations()
        )
        return jsonl_stream(rows)

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(service.metrics.render(), media_type="text/plain; version=0.0.4")

    return app


def jsonl_stream(rows: Iterator[dict[str, Any]]) -> StreamingResponse:
    """Rows from the database as JSON lines, each fetched in a thread as the client reads:
    memory stays flat however many there are (store: a server-side cursor)."""

    async def lines() -> AsyncIterator[bytes]:
        done = object()
        while (row := await asyncio.to_thread(next, rows, done)) is not done:
            yield (json.dumps(row) + "\n").encode()

    return StreamingResponse(lines(), media_type="application/x-ndjson")


def event_stream(events: AsyncIterator[BaseModel | dict[str, Any]]) -> EventSourceResponse:
    """Server-sent events: each event as one JSON `data:` line, then `data: [DONE]`; a
    comment line every SSE_PING_S keeps proxies with idle timeouts from cutting a stream
    that waits on a long policy call."""

    async def encoded() -> AsyncIterator[dict[str, str]]:
        async for event in events:
            data = event.model_dump_json() if isinstance(event, BaseModel) else json.dumps(event)
            yield {"data": data}
        yield {"data": "[DONE]"}

    return EventSourceResponse(
        encoded(), ping=SSE_PING_S, sep="\n", headers={"Cache-Control": "no-cache"}
    )
