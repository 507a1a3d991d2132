"""A scripted OpenAI-compatible completions server on loopback, with faults on demand.

Browsing prompts (they end with "♦Next action\\n") get the next scripted command; answer
prompts (they end with "■", or with the opening of a decline the policy was held to) get
the next scripted answer. Every request body is recorded.
"""

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


@dataclass
class Script:
    commands: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)  # consumed one per request, "" = none
    requests: list[dict] = field(default_factory=list)  # type: ignore[type-arg]
    model: str = "scripted"
    default_command: str = "End: Nonsense"
    oracle_quote: str | None = None  # with no commands left, browse by reading the page
    cut_answers: set[str] = field(default_factory=set)  # streamed as cut at max_tokens
    delay_s: float = 0.0  # every request waits this long (a slow policy)
    # vLLM's runtime LoRA API: adapters loaded by name (served beside `model`), and the
    # names whose completions are garbage (a version that fails its canaries).
    adapters: dict[str, str] = field(default_factory=dict)  # name -> path
    lora_loads: list[str] = field(default_factory=list)  # every load, in order
    # The next request for this model waits until `released` is set (an answer held in
    # flight, so a test knows a version is still in use).
    hold_model: str | None = None
    released: threading.Event = field(default_factory=threading.Event)
    garbage_models: set[str] = field(default_factory=set)
    # vLLM's return_token_ids: with a tokenizer, each choice's sampled ids (its text and
    # the request's first stop string, which vLLM's ids include) and the prompt's; none
    # without one (a server lacking the extension). `one_token_per_character` samples each
    # character as a token of its own: ids the text, encoded again, does not give back.
    tokenizer: Any = None
    one_token_per_character: bool = False
    sampled_logprob: float = -0.5  # every sampled token's log-prob, when asked

    def sampled_ids(self, text: str) -> list[int]:
        if not self.one_token_per_character:
            return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        return [i for c in text for i in self.tokenizer(c, add_special_tokens=False)["input_ids"]]

    def next_command(self, prompt: str) -> str:
        if self.commands:
            return self.commands.pop(0)
        if self.oracle_quote is None or "♦Question\n" not in prompt:
            return self.default_command
        return self._oracle(prompt)

    def _oracle(self, prompt: str) -> str:
        """Search, open the first result, quote, answer: decided from the observation, so
        concurrent episodes each get the command their own state needs."""
        question = prompt.split("♦Question\n", 1)[1].split("\n", 1)[0]
        title = prompt.rsplit("♦Title\n", 1)[1].split("\n", 1)[0]
        if not title:
            return f"Search {question}"
        if title.startswith("Search results for:"):
            return "Clicked on link 0"
        if "♦Quotes\n♦Past actions" in prompt:
            return f"Quote: {self.oracle_quote}"
        return "End: Answer"

    def next_answer(self) -> str:
        return self.answers.pop(0) if self.answers else "No answer scripted [1]."


def _usage(prompt: str, text: str) -> dict[str, int]:
    prompt_tokens, completion_tokens = len(prompt.split()), len(text.split())
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _unknown_model(script: Script, model: str | None) -> Response | None:
    if model == script.model or model in script.adapters:
        return None
    return JSONResponse(
        {"error": {"message": f"The model `{model}` does not exist.", "code": 404}}, 404
    )


def fake_policy_app(script: Script) -> Starlette:
    async def completions(request: Request) -> Response:
        body = await request.json()
        script.requests.append(body)
        if script.delay_s:
            await asyncio.sleep(script.delay_s)
        fault = script.faults.pop(0) if script.faults else ""
        if fault == "500":
            return JSONResponse(
                {"error": {"message": "engine crashed", "type": "InternalServerError"}}, 500
            )
        if fault == "503":
            return JSONResponse({"error": {"message": "starting up"}}, 503)
        if fault == "429":
            return JSONResponse(
                {"error": {"message": "too many requests"}}, 429, headers={"Retry-After": "0"}
            )
        if fault == "400":
            return JSONResponse(
                {
                    "error": {
                        "message": "prompt is longer than the maximum model length",
                        "type": "BadRequestError",
                        "code": 400,
                    }
                },
                400,
            )
        if fault == "slow":
            await asyncio.sleep(2)
        if fault == "garbage-json":
            return Response(b"{not json", media_type="application/json")
        prompt: str = body["prompt"]
        # an answer's prompt ends "■", or it continues an answer begun (the one retry,
        # agent.episode._write_by_quote), which stops at "■"
        is_answer = prompt.endswith("■") or "■" in (body.get("stop") or [])
        texts = [
            script.next_answer() if is_answer else script.next_command(prompt)
            for _ in range(body.get("n", 1))
        ]
        model = body.get("model")
        if script.hold_model is not None and model == script.hold_model:
            script.hold_model = None
            await asyncio.to_thread(script.released.wait, 120)
        unknown = _unknown_model(script, model)
        if unknown is not None:
            return unknown
        if fault == "garbage" or model in script.garbage_models:
            texts = ["I would like to look around please"] * len(texts)
        if not body.get("stream"):
            choices = [
                {"index": i, "text": t, "finish_reason": "stop", "logprobs": None}
                for i, t in enumerate(texts)
            ]
            if body.get("return_token_ids") and script.tokenizer is not None:
                stop = (body.get("stop") or [""])[0]
                for choice in choices:
                    ids = script.sampled_ids(choice["text"] + stop)
                    choice["token_ids"] = ids
                    choice["prompt_token_ids"] = script.tokenizer(prompt)["input_ids"]
                    if body.get("logprobs") is not None:
                        choice["logprobs"] = {"token_logprobs": [script.sampled_logprob] * len(ids)}
            return JSONResponse(
                {
                    "id": "cmpl-1",
                    "object": "text_completion",
                    "model": script.model,
                    "choices": choices,
                    "usage": _usage(prompt, " ".join(texts)),
                }
            )

        async def events() -> AsyncIterator[bytes]:
            text = texts[0]
            pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
            for piece in pieces:
                chunk = {
                    "id": "cmpl-1",
                    "object": "text_completion",
                    "model": script.model,
                    "choices": [{"index": 0, "text": piece, "finish_reason": None}],
                }
                # as vLLM writes it: the text's non-ASCII characters unescaped, U+2028 too
                yield f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode()
                if fault == "truncated":
                    return  # the connection ends mid-answer, no [DONE]
            final = {
                "id": "cmpl-1",
                "object": "text_completion",
                "model": script.model,
                "choices": [
                    {
                        "index": 0,
                        "text": "",
                        "finish_reason": "length" if text in script.cut_answers else "stop",
                    }
                ],
            }
            yield f"data: {json.dumps(final)}\n\n".encode()
            usage = {
                "id": "cmpl-1",
                "object": "text_completion",
                "model": script.model,
                "choices": [],
                "usage": _usage(prompt, text),
            }
            yield f"data: {json.dumps(usage)}\n\n".encode()
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    async def models(request: Request) -> Response:
        names = [script.model, *script.adapters]
        return JSONResponse(
            {"object": "list", "data": [{"id": n, "object": "model"} for n in names]}
        )

    async def load_lora_adapter(request: Request) -> Response:
        body = await request.json()
        if body["lora_name"] in script.adapters:
            return JSONResponse({"error": {"message": "already loaded", "code": 400}}, 400)
        script.adapters[body["lora_name"]] = body["lora_path"]
        script.lora_loads.append(body["lora_name"])
        return Response(f"Success: LoRA adapter '{body['lora_name']}' added successfully.")

    async def unload_lora_adapter(request: Request) -> Response:
        body = await request.json()
        if script.adapters.pop(body["lora_name"], None) is None:
            return JSONResponse({"error": {"message": "not loaded", "code": 404}}, 404)
        return Response(f"Success: LoRA adapter '{body['lora_name']}' removed successfully.")

    return Starlette(
        routes=[
            Route("/v1/completions", completions, methods=["POST"]),
            Route("/v1/models", models),
            Route("/v1/load_lora_adapter", load_lora_adapter, methods=["POST"]),
            Route("/v1/unload_lora_adapter", unload_lora_adapter, methods=["POST"]),
        ]
    )
