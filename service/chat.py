"""OpenAI chat completions over our answers: the translation both ways.

The route keeps OpenAI's meanings (docs/service.md, "OpenAI chat completions"):
- `n` choices, each its own browsing episode, in episode order; no reranking;
- `best_of` (an extra body field, OpenAI's name for server-side reranking) runs that many
  episodes and returns the `n` the reward model scores highest;
- the messages before the last user message are the conversation: a follow-up ("When did
  he die?") is browsed made standalone from it (agent.followups), and each choice's message
  says what was browsed (`question_asked`);
- each choice's message carries our `references` (and `sources`, the same by page) and
  `declined`, and `annotations` in the shape OpenAI's web search uses (`url_citation`
  with the cited sentence's span);
- `stream_options.include_usage` adds the usage chunk; errors come in OpenAI's shape.
"""

import re
from collections.abc import AsyncIterator
from typing import Any

from webgpt.agent.answer import AnswerResult, Candidate
from webgpt.agent.answer_rules import CITATION
from webgpt.agent.trace import Reference
from webgpt.service.errors import InvalidRequest, status_of_kind
from webgpt.service.protocol import (
    AnswerRequest,
    ChatRequest,
    FinalEvent,
    StreamErrorEvent,
    StreamEvent,
    sources_of,
)

SENTENCE_BREAK = re.compile(r"[.!?]\s+")
# OpenAI's error `type` for our statuses; our own error kind goes in `code`.
OPENAI_ERROR_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    429: "rate_limit_error",
    504: "timeout_error",
}


def answer_request(chat: ChatRequest) -> tuple[AnswerRequest, bool]:
    """The answer a chat request asks for, and whether the reward model reranks its episodes."""
    try:
        question, history = chat.question(), chat.history()
    except ValueError as error:
        raise InvalidRequest(str(error)) from None
    if chat.best_of is not None and chat.best_of < chat.n:
        raise InvalidRequest("best_of must be greater than or equal to n")
    request = AnswerRequest.model_validate(
        {
            "question": question,
            "history": history,
            "n": chat.best_of or chat.n,
            "temperature": chat.temperature,
            "deadline_s": chat.deadline_s,
        }
    )
    return request, chat.best_of is not None


def chosen(result: AnswerResult, n: int, reranked: bool) -> list[Candidate]:
    """The candidates that become the n choices: in episode order, or the reward model's
    best first (answered ones before those that did not answer)."""
    if not reranked:
        return result.candidates[:n]
    ranked = sorted(
        result.candidates,
        key=lambda c: (c.answer is None, -(c.reward if c.reward is not None else float("-inf"))),
    )
    return ranked[:n]


def url_citations(text: str, references: list[Reference]) -> list[dict[str, Any]]:
    """OpenAI's `url_citation` annotations for the [n] of text: each spans the sentence it
    ends, its marker included."""
    by_n = {reference.n: reference for reference in references}
    annotations = []
    for marker in CITATION.finditer(text):
        reference = by_n.get(int(marker[1]))
        if reference is None:
            continue
        breaks = [b.end() for b in SENTENCE_BREAK.finditer(text, 0, marker.start())]
        annotations.append(
            {
                "type": "url_citation",
                "url_citation": {
                    "start_index": breaks[-1] if breaks else 0,
                    "end_index": marker.end(),
                    "url": reference.url,
                    "title": reference.title,
                },
            }
        )
    return annotations


def citations(candidate: Candidate, result: AnswerResult) -> dict[str, Any]:
    """What a choice's message carries beside its text: its quotes, and what was browsed
    (`question_asked`: a follow-up made standalone from the conversation)."""
    extras: dict[str, Any] = {
        "question_asked": result.question_asked,
        "references": [r.model_dump(mode="json") for r in candidate.references],
        "sources": [s.model_dump(mode="json") for s in sources_of(candidate.references)],
        "declined": candidate.declined,
        "annotations": url_citations(candidate.answer or "", candidate.references),
    }
    if candidate.error is not None:
        extras["error"] = candidate.error  # the episode failed: this choice has no answer
    return extras


def usage(result: AnswerResult) -> dict[str, int]:
    return {
        "prompt_tokens": result.usage.prompt_tokens,
        "completion_tokens": result.usage.completion_tokens,
        "total_tokens": result.usage.prompt_tokens + result.usage.completion_tokens,
    }


def completion(
    result: AnswerResult, chat: ChatRequest, reranked: bool, created: int
) -> dict[str, Any]:
    """The chat.completion of an answer."""
    choices = [
        {
            "index": index,
            "finish_reason": "stop",
            "logprobs": None,
            "message": {
                "role": "assistant",
                "content": candidate.answer or "",
                **citations(candidate, result),
            },
        }
        for index, candidate in enumerate(chosen(result, chat.n, reranked))
    ]
    return {
        "id": "chatcmpl-" + result.id.removeprefix("ans_"),
        "object": "chat.completion",
        "created": created,
        "model": str(result.versions["policy"] or model_of(chat)),
        "choices": choices,
        "usage": usage(result),
    }


async def chunks(
    events: AsyncIterator[StreamEvent],
    chat: ChatRequest,
    reranked: bool,
    chat_id: str,
    created: int,
    model: str,
) -> AsyncIterator[dict[str, Any]]:
    """chat.completion.chunk objects of an answer stream: a role chunk per choice, each
    choice's answer once the episodes have ended (the chosen ones once the reward model
    scored them, with best_of), then a finishing chunk per choice with its references, and
    the usage chunk if asked. An answer is not streamed as the policy writes it: under the
    answer rules a first draft may be written again or completed (agent.episode.write_answer),
    and a delta once sent cannot be taken back; /answer's events show every draft."""
    include_usage = chat.stream_options is not None and chat.stream_options.include_usage

    def chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        body = {
            "id": chat_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": choices,
            **extra,
        }
        if include_usage and "usage" not in body:
            body["usage"] = None  # as OpenAI: every chunk but the last has usage null
        return body

    def delta(index: int, content: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"index": index, "delta": content, "finish_reason": finish, "logprobs": None}

    yield chunk([delta(i, {"role": "assistant", "content": ""}) for i in range(chat.n)])
    async for event in events:
        if isinstance(event, FinalEvent):
            result = event.result
            # the version the answer started on; a reply to small talk was written by none
            model = str(result.versions["policy"] or model)
            picked = chosen(result, chat.n, reranked)
            for index, candidate in enumerate(picked):
                if candidate.answer:
                    yield chunk([delta(index, {"content": candidate.answer})])
            yield chunk([delta(i, citations(c, result), "stop") for i, c in enumerate(picked)])
            if include_usage:
                yield chunk([], usage=usage(result))
        elif isinstance(event, StreamErrorEvent):
            status = status_of_kind(event.error_type)
            yield {"error": openai_error(status, event.error_type, event.message)}


def model_of(chat: ChatRequest) -> str:
    """The model a completion names when no policy wrote it: the one the request named."""
    return chat.model or "webgpt"


def openai_error(status: int, kind: str, message: str) -> dict[str, Any]:
    """An error in OpenAI's shape (the value of its `error` key); our kind is its `code`."""
    fallback = "server_error" if status >= 500 else "invalid_request_error"
    error_type = OPENAI_ERROR_TYPES.get(status, fallback)
    return {"message": message, "type": error_type, "param": None, "code": kind}
