"""Scoring on a vLLM pooling server: the `Scorer` for reward models too large for the service.

A reward checkpoint (reward.model) is a one-label sequence classifier, which vLLM serves as
it is, named by its version:

    vllm serve /registry/reward/rm-0001 --served-model-name rm-0001 --runner pooling

vLLM's `/classify` with `use_activation: false` returns the head's raw logit at the last
token, which is what RewardScorer computes in-process: same tokenizer, truncated from the
left to `max_length` tokens. This scorer reads only the checkpoint's manifest (version and
offset) from the shared registry, asks for the model by its version, so a server serving
another version is an error rather than silently different rewards, and subtracts the
offset. No torch here: the service image stays slim.
"""

import asyncio
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from webgpt.infra.retry import RetryPolicy
from webgpt.reward.data import ScoredText, answer_text
from webgpt.reward.errors import RewardServerError
from webgpt.reward.manifest import load_reward_manifest


class RemoteRewardScorer:
    """Scores n answers with one `/classify` request to a vLLM server (batch_size at most)."""

    def __init__(
        self,
        base_url: str,  # the server's OpenAI-style base URL, e.g. http://reward:8000/v1
        checkpoint: Path,  # the served checkpoint's folder: only its manifest is read
        *,
        api_key: str | None = None,
        max_length: int = 1024,
        batch_size: int = 64,
        timeout_s: float = 60.0,
        retries: int = 2,  # of requests the server did not process (infra.retry)
        backoff_s: float = 0.5,
        transport: httpx.AsyncBaseTransport | None = None,
        role: str = "reward model",  # what errors call it: "the <role> server"
    ) -> None:
        manifest = load_reward_manifest(checkpoint)
        self.version = manifest.version
        self.offset = float(manifest.metrics.get("offset", 0.0))
        self.role = role
        self.url = base_url.rstrip("/").removesuffix("/v1") + "/classify"
        self.max_length = max_length
        self.batch_size = batch_size
        self.retry = RetryPolicy(retries, backoff_s)
        self._client = httpx.AsyncClient(
            headers={"Authorization": f"Bearer {api_key}"} if api_key else {},
            timeout=httpx.Timeout(timeout_s, connect=5.0),
            transport=transport,
            trust_env=False,
        )

    @property
    def name(self) -> str:
        return self.version

    async def score(self, answers: Sequence[ScoredText]) -> list[float]:
        return await self.score_texts([answer_text(a) for a in answers])

    async def score_texts(self, texts: list[str]) -> list[float]:
        """Normalised rewards of texts (answer-phase prompt + answer each)."""
        batches = [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        results = await asyncio.gather(*(self._classify(batch) for batch in batches))
        return [logit - self.offset for batch in results for logit in batch]

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _classify(self, texts: list[str]) -> list[float]:
        body = {
            "model": self.version,
            "input": texts,
            "use_activation": False,  # the raw logit: a reward, not a probability
            "truncate_prompt_tokens": self.max_length,
            "truncation_side": "left",  # keep the answer, lose the start of the prompt
        }
        response = await self._post(body)
        try:
            rows = sorted(response.json()["data"], key=lambda row: row["index"])
            logits = [_single_logit(row["probs"]) for row in rows]
        except (ValueError, KeyError, TypeError) as error:
            raise RewardServerError(f"malformed answer from {self.url}: {error!r}") from error
        if [row["index"] for row in rows] != list(range(len(texts))):
            raise RewardServerError(f"{self.url} scored {len(rows)} of {len(texts)} texts")
        return logits

    async def _post(self, body: dict[str, Any]) -> httpx.Response:
        """POST, again for a server that is restarting or busy (the shared retry rule)."""
        try:
            response = await self.retry.send(
                lambda: self._client.post(self.url, json=body), self.url
            )
        except (httpx.ReadTimeout, httpx.WriteTimeout):
            raise RewardServerError(f"{self.url} did not answer in time") from None
        except httpx.HTTPError as error:
            raise RewardServerError(
                f"cannot reach the {self.role} server at {self.url}: {error}"
            ) from None
        if response.status_code != 200:
            raise RewardServerError(
                f"the {self.role} server answered {response.status_code}: {_message(response)}"
            )
        return response


def _single_logit(probs: Any) -> float:
    if not isinstance(probs, list) or len(probs) != 1:
        raise ValueError(f"expected one logit per text (a one-label model), got {probs!r}")
    logit = float(probs[0])
    if not math.isfinite(logit):
        raise ValueError(f"the reward is {logit}")
    return logit


def _message(response: httpx.Response) -> str:
    """vLLM says {"error": {"message": ...}}; anything else is shown as text."""
    try:
        error = response.json().get("error")
        return str(error["message"])[:300]
    except (ValueError, AttributeError, KeyError, TypeError):
        return response.text[:300] or response.reason_phrase
