"""vLLM's `/classify` endpoint on loopback, computing with a real reward checkpoint.

It speaks vLLM 0.32's wire format (entrypoints/pooling/classify/protocol.py): a request
`{model, input: str | [str], use_activation, truncate_prompt_tokens, truncation_side}`, an
answer `{id, object: "list", created, model, data: [{index, label, probs, num_classes}],
usage}`, errors as `{"error": {message, type, param, code}}`, 404 for an unknown model.
Faults on demand: a status code per request, or a body that is not what vLLM sends.
tests/reward/test_remote.py checks the real vLLM against the same scorer once.
"""

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from webgpt.reward.model import RewardModel, tokenize


@dataclass
class ClassifyScript:
    checkpoint: Path
    served_name: str
    faults: list[int | str] = field(default_factory=list)  # per request: a status or "garbage"
    requests: list[dict[str, Any]] = field(default_factory=list)


def _error(status: int, message: str, kind: str) -> JSONResponse:
    body = {"error": {"message": message, "type": kind, "param": None, "code": status}}
    return JSONResponse(body, status_code=status)


def fake_vllm_classify_app(script: ClassifyScript) -> Starlette:
    from transformers import AutoTokenizer

    model = RewardModel.load(script.checkpoint).eval()
    tokenizer = AutoTokenizer.from_pretrained(script.checkpoint)

    async def classify(request: Request) -> JSONResponse:
        body = await request.json()
        script.requests.append(body)
        fault = script.faults.pop(0) if script.faults else None
        if fault == "garbage":
            return JSONResponse({"data": [{"index": 0, "probs": [0.1, 0.9]}]})
        if isinstance(fault, int):
            return _error(fault, "simulated failure", "ServiceUnavailableError")
        if body.get("model") != script.served_name:
            return _error(404, f"The model `{body.get('model')}` does not exist.", "NotFoundError")
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        if body.get("truncation_side") != "left":
            return _error(400, "this fake only truncates from the left", "BadRequestError")
        batch = tokenize(tokenizer, texts, body.get("truncate_prompt_tokens") or 10**6)
        with torch.no_grad():
            logits = model(**batch)
        if body.get("use_activation") is not False:  # vLLM's default for one label
            logits = torch.sigmoid(logits)
        tokens = int(batch["attention_mask"].sum())
        return JSONResponse(
            {
                "id": "classify-fake",
                "object": "list",
                "created": int(time.time()),
                "model": script.served_name,
                "data": [
                    {"index": i, "label": "LABEL_0", "probs": [float(x)], "num_classes": 1}
                    for i, x in enumerate(logits)
                ],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    return Starlette(routes=[Route("/classify", classify, methods=["POST"])])
