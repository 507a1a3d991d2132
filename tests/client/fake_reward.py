"""A reward model on a stand-in vLLM pooling server, so a test service answers best-of-n
(n > 1) without torch.

The service scores through reward.remote, which reads only the checkpoint's manifest and
asks `/classify` for one raw logit per text; this server's logit falls with the text's
length: of candidates to one question, the shortest answer wins.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.servers import serve
from webgpt.agent.model import DEFAULT_REWARD_VERSION
from webgpt.browser.observation import OBSERVATION_FORMAT_VERSION
from webgpt.infra.checkpoints import MANIFEST, Manifest


def reward_checkpoint(folder: Path, version: str) -> Path:
    """A checkpoint folder holding only the manifest, which is all a remote scorer reads."""
    folder.mkdir(parents=True)
    manifest = Manifest("reward", version, "none", OBSERVATION_FORMAT_VERSION, files={})
    (folder / MANIFEST).write_text(manifest.to_json())
    return folder


def shortest_wins_app(version: str) -> Starlette:
    async def classify(request: Request) -> JSONResponse:
        body = await request.json()
        if body.get("model") != version:
            message = f"The model `{body.get('model')}` does not exist."
            return JSONResponse({"error": {"message": message, "code": 404}}, 404)
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        rows = [{"index": i, "probs": [-len(text) / 1000]} for i, text in enumerate(texts)]
        return JSONResponse({"object": "list", "model": version, "data": rows})

    return Starlette(routes=[Route("/classify", classify, methods=["POST"])])


@contextmanager
def shipped_reward_model(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A fresh clone's reward model, already prepared: the shipped version's folder in the
    registry of WEBGPT_HOME=home (a manifest is all a remote scorer reads), scored on the
    stand-in server. Yields the settings for a service with the default reward model, which
    it loads on the first request for more than one episode; nothing is downloaded."""
    monkeypatch.setenv("WEBGPT_HOME", str(home))
    reward_checkpoint(home / "registry" / "reward" / DEFAULT_REWARD_VERSION, DEFAULT_REWARD_VERSION)
    with serve(shortest_wins_app(DEFAULT_REWARD_VERSION)) as base:
        yield {"reward_url": f"{base}/v1"}
