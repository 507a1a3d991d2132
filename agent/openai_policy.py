"""The production policy client: the OpenAI-compatible completions API of a vLLM server.

The same code talks to vLLM's CUDA build on a GPU, its CPU build here, or any other
OpenAI-compatible server. Failures are bounded: a request the server did not process
(connection refused, 429, 503) is retried a few times by the shared rule (infra.retry;
never a timeout, which would multiply the load on a slow server), then a clear
PolicyError; after a server is found down, calls fail fast for a cool-down instead of
piling retries on it (no retry storm).
"""

import json
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from webgpt.agent.errors import PolicyError, PolicyResponseError, PolicyTimeout, PolicyUnavailable
from webgpt.agent.policy import Completion, Completions, Sampling, StreamChunk, Usage
from webgpt.infra.pools import SpreadTransport
from webgpt.infra.retry import RetryPolicy, retry_after
from webgpt.infra.sse import sse_lines

logger = logging.getLogger(__name__)


@dataclass
class OpenAIPolicy:
    """Completions from `{base_url}/completions`, e.g. base_url="http://127.0.0.1:8300/v1"."""

    base_url: str
    model: str
    api_key: str | None = None
    guided: bool = True  # send regex constraints as vLLM structured outputs
    endpoint: str = "/completions"  # the route under base_url requests go to
    timeout_s: float = 120.0
    connect_timeout_s: float = 5.0
    max_retries: int = 3
    backoff_s: float = 0.5
    cooldown_s: float = 5.0
    transport: httpx.AsyncBaseTransport | None = None
    # Called when the server answers 404 for this model (an adapter a restarted vLLM no
    # longer has): it loads the model again, and the request is sent once more.
    on_missing_model: Callable[[], Awaitable[None]] | None = None
    _client: httpx.AsyncClient | None = field(default=None, init=False, repr=False)
    _down_until: float = field(default=0.0, init=False, repr=False)

    @property
    def name(self) -> str:
        return self.model

    async def complete(self, prompt: str, sampling: Sampling) -> Completions:
        body = await self._request(self._body(prompt, sampling, stream=False))
        try:
            choices = sorted(body["choices"], key=lambda c: c.get("index", 0))
            completions = [_completion(c, sampling.token_ids) for c in choices]
            usage = body.get("usage") or {}
            used = Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))
            prompt_ids = _ids(choices[0].get("prompt_token_ids")) if choices else None
        except (KeyError, TypeError, AttributeError, ValueError) as error:
            raise PolicyResponseError(f"malformed completions answer: {error!r}") from error
        if len(completions) != sampling.n:
            raise PolicyResponseError(f"asked for {sampling.n} samples, got {len(completions)}")
        return Completions(completions, used, prompt_ids if sampling.token_ids else None)

    async def stream(self, prompt: str, sampling: Sampling) -> AsyncIterator[StreamChunk]:
        if sampling.n != 1:
            raise ValueError("stream() produces one sample")
        payload = self._body(prompt, sampling, stream=True)
        response = await self._send(payload, stream=True)
        finished = False
        try:
            async for line in sse_lines(response):
                if not line.startswith("data:"):
                    continue
                data = line[len("data:") :].strip()
                if data == "[DONE]":
                    finished = True
                    break
                try:
                    chunk = json.loads(data)
                    choice = chunk["choices"][0] if chunk.get("choices") else {}
                    delta, finish = choice.get("text", ""), choice.get("finish_reason")
                    usage = chunk.get("usage")
                    used = (
                        Usage(usage["prompt_tokens"], usage["completion_tokens"]) if usage else None
                    )
                except (ValueError, KeyError, IndexError, TypeError, AttributeError) as error:
                    raise PolicyResponseError(f"malformed stream chunk: {data[:200]}") from error
                if delta or used is not None or finish:
                    yield StreamChunk(delta, used, finish)
        except httpx.TimeoutException as error:
            raise PolicyTimeout("the policy server stopped sending mid-stream") from error
        except httpx.HTTPError as error:
            raise PolicyResponseError(f"the answer stream broke: {error!r}") from error
        finally:
            await response.aclose()
        if not finished:
            raise PolicyResponseError("the answer stream ended before [DONE] (truncated)")

    async def ready(self) -> bool:
        """True when the server answers and lists this model (no retries)."""
        try:
            response = await self._http().get("/models", timeout=5.0)
            names = {m.get("id") for m in response.json().get("data", [])}
        except (httpx.HTTPError, ValueError, AttributeError):
            return False
        return self.model in names

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # -- plumbing -------------------------------------------------------------------

    def _body(self, prompt: str, sampling: Sampling, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": prompt,
            "n": sampling.n,
            "temperature": sampling.temperature,
            "max_tokens": sampling.max_tokens,
            "stream": stream,
        }
        if stream:
            body["stream_options"] = {"include_usage": True}
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        if sampling.token_ids:
            # vLLM's extension: each choice's `token_ids` (and the prompt's), and `logprobs`
            # 0 for the log-prob of each sampled token without alternatives
            body["return_token_ids"] = True
            body["logprobs"] = 0
        if sampling.regex is not None and self.guided:
            # vLLM's structured outputs; the older `guided_regex` field is ignored now.
            body["structured_outputs"] = {"regex": sampling.regex}
        return body

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = httpx.AsyncClient(
                base_url=self.base_url.rstrip("/"),
                headers=headers,
                timeout=httpx.Timeout(self.timeout_s, connect=self.connect_timeout_s),
                transport=self.transport or SpreadTransport(),
                trust_env=False,
            )
        return self._client

    async def _request(self, payload: dict[str, Any]) -> Any:
        response = await self._send(payload, stream=False)
        try:
            return response.json()
        except ValueError as error:
            raise PolicyResponseError("the policy server answered with non-JSON") from error

    async def _send(self, payload: dict[str, Any], stream: bool) -> httpx.Response:
        """POST with bounded retries; returns a successful response (open, when streaming)."""
        try:
            return await self._send_once(payload, stream)
        except PolicyResponseError as error:
            if error.status_code != 404 or self.on_missing_model is None:
                raise
            await self.on_missing_model()
            return await self._send_once(payload, stream)

    async def _send_once(self, payload: dict[str, Any], stream: bool) -> httpx.Response:
        if time.monotonic() < self._down_until:
            raise PolicyUnavailable(f"the policy server at {self.base_url} is down (cooling down)")
        client = self._http()
        rule = RetryPolicy(self.max_retries, self.backoff_s)
        request = client.build_request("POST", self.endpoint, json=payload)
        try:
            response = await rule.send(lambda: client.send(request, stream=stream), self.base_url)
        except httpx.HTTPError as error:
            failure = self._failure(error)
            if isinstance(failure, PolicyUnavailable):
                self._down_until = time.monotonic() + self.cooldown_s
            raise failure from error
        if response.status_code < 400:
            return response
        if stream:
            await response.aread()
            await response.aclose()
        raise PolicyResponseError(
            f"policy server answered {response.status_code}: {_error_message(response)}",
            response.status_code,
            retry_after(response),
        )

    def _failure(self, error: httpx.HTTPError) -> PolicyError:
        if isinstance(error, httpx.ConnectError):
            return PolicyUnavailable(f"cannot connect to {self.base_url}: {error}")
        if isinstance(error, httpx.TimeoutException):
            return PolicyTimeout(f"no answer from {self.base_url} in time: {error!r}")
        return PolicyResponseError(f"request to {self.base_url} failed: {error!r}")


def _completion(choice: dict[str, Any], token_ids: bool) -> Completion:
    """One choice; with `token_ids`, the sampled ids a server that cannot give them fails."""
    completion = Completion(choice["text"], choice.get("finish_reason") or "")
    if not token_ids:
        return completion
    ids = _ids(choice.get("token_ids"))
    if ids is None:
        raise ValueError("no token_ids in a choice: the server lacks vLLM's return_token_ids")
    logprobs = (choice.get("logprobs") or {}).get("token_logprobs")
    floats = (
        tuple(math.nan if p is None else float(p) for p in logprobs)
        if isinstance(logprobs, list)
        else None
    )  # vLLM sends null for a NaN log-prob
    return replace(completion, token_ids=ids, logprobs=floats)


def _ids(value: Any) -> tuple[int, ...] | None:
    return None if value is None else tuple(int(token) for token in value)


def _error_message(response: httpx.Response) -> str:
    """vLLM says {"error": {"message": ...}} (older: {"message": ...}); others send text."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
        if body.get("message"):
            return str(body["message"])[:300]
    return str(body)[:300]
