"""The HTTP surface. Routes only translate HTTP; the logic is in service.serving."""

import hashlib
import hmac
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel
from sse_starlette import EventSourceResponse
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from webgpt.agent.errors import AgentError
from webgpt.reward.errors import RewardServerError
from webgpt.service.errors import (
    PayloadTooLarge,
    ServiceError,
    Unauthorized,
    public_message,
    status_of,
)
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
SSE_PING_S = 15  # under the 30-60 s idle timeouts common in proxies and load balancers


def error_response(error: Exception, retry_after_s: int) -> JSONResponse:
    status, kind, retry = status_of(error)
    body = ErrorBody(error=ErrorDetail(type=kind, message=public_message(error)))
    headers = {"Retry-After": str(retry_after_s)} if retry else None
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


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
            await error_response(too_large, 0)(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.max_bytes:
                await error_response(too_large, 0)(scope, receive, send)
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
    keys = [key.encode() for key in settings.api_key_list()]

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with service.running():
            yield

    app = FastAPI(title="webgpt", version="0.1.0", lifespan=lifespan)
    app.add_middleware(BodyLimit, max_bytes=settings.max_request_bytes)
    app.add_middleware(Observe, metrics=service.metrics)

    async def authorize(request: Request) -> str:
        """Who is calling: the matched key's fingerprint (what per-key limits count by)."""
        if not keys:
            return "local"  # local-only development mode (serve refuses non-loopback hosts)
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        given = token.strip().encode()
        # Compare with every key in constant time; no early exit reveals which matched.
        matched = [hmac.compare_digest(given, key) for key in keys]
        if scheme.lower() != "bearer" or not any(matched):
            raise Unauthorized("a valid API key is needed: Authorization: Bearer <key>")
        return hashlib.sha256(given).hexdigest()[:16]

    async def on_error(request: Request, error: Exception) -> JSONResponse:
        return error_response(error, settings.retry_after_s)

    # Expected failures get their status here; anything else is a logged 500 from
    # Starlette's outermost middleware, with the same error shape.
    app.add_exception_handler(ServiceError, on_error)
    app.add_exception_handler(AgentError, on_error)
    app.add_exception_handler(RewardServerError, on_error)
    app.add_exception_handler(Exception, on_error)

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0] if error.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        message = (
            f"{where}: {first.get('msg', 'invalid request')}" if where else str(first.get("msg"))
        )
        body = ErrorBody(error=ErrorDetail(type="invalid_request", message=message))
        return JSONResponse(body.model_dump(), status_code=422)

    @app.post("/answer", response_model=AnswerResponse, dependencies=[Depends(authorize)])
    async def answer(body: AnswerRequest) -> Response:
        if body.stream:
            return event_stream(service.stream(body))
        result = await service.answer(body)
        return JSONResponse(result.model_dump(mode="json"))

    @app.post("/v1/chat/completions", dependencies=[Depends(authorize)])
    async def chat_completions(body: ChatRequest) -> Response:
        if body.stream:
            return event_stream(service.chat_stream(body))
        return JSONResponse(await service.chat(body))

    @app.post("/feedback", response_model=FeedbackReceipt, dependencies=[Depends(authorize)])
    async def feedback(body: Feedback) -> FeedbackReceipt:
        return await service.feedback(body)

    # Browser sessions a person drives to record a demonstration (service.demonstrating).
    sessions = service.demonstrations

    @app.post("/sessions", response_model=SessionState)
    async def create_session(body: SessionCreate, owner: str = Depends(authorize)) -> SessionState:
        return await sessions.create(owner, body.question, body.from_queue)

    @app.post("/sessions/{session_id}/step", response_model=SessionState)
    async def session_step(
        session_id: str, body: SessionStep, owner: str = Depends(authorize)
    ) -> SessionState:
        return await sessions.step(owner, session_id, body.command)

    @app.post("/sessions/{session_id}/answer", response_model=FeedbackReceipt)
    async def session_answer(
        session_id: str, body: SessionAnswer, owner: str = Depends(authorize)
    ) -> FeedbackReceipt:
        return await sessions.answer(owner, session_id, body.answer)

    @app.delete("/sessions/{session_id}", status_code=204)
    async def abandon_session(session_id: str, owner: str = Depends(authorize)) -> Response:
        await sessions.abandon(owner, session_id)
        return Response(status_code=204)

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    async def front_end() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        problems = await service.ready()
        if problems:
            return JSONResponse({"status": "not ready", "problems": problems}, status_code=503)
        return JSONResponse({"status": "ready"})

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(service.metrics.render(), media_type="text/plain; version=0.0.4")

    return app


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
