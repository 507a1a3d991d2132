"""A chat model as the policy: the browser's commands as tools of OpenAI's chat completions.

`--policy-format chat` for a model someone brings (an instruct model on vLLM, llama.cpp's
server, Ollama's OpenAI route, a hosted API): each browsing step is one request to
`{base_url}/chat/completions` with a system message that states the task and the answer
style, the observation as the user's message (it holds the question, the quotes so far,
the past actions and the page in view, so no earlier turn is needed), and the browser's
commands possible now as tools, one of which must be called (`tool_choice: "required"`),
a link's id and a quote's sentence narrowed to those in view (`enum`); the server applies
the model's own chat template. A server that refuses required tool calls (vLLM started
without a --tool-call-parser) is asked for the call as JSON instead, by the same schemas as
OpenAI's `response_format`, which vLLM, llama.cpp and Ollama hold the output to. The call is
turned into the command it stands for and the browser holds it to the command contract
(browser.session): a server that cannot constrain the call gets a refusal that says why,
not a wrong command run.
The answer is one more request: the question and the numbered quotes, and the tools
`answer` (the text, citing quotes as [n]) and `decline` (the quotes do not answer).

The trained default keeps the completion format (agent.openai_policy), which it was
trained on; this format carries no grammar, so episodes of a chat policy run unguided.
"""

import json
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from webgpt.agent.declines import decline_answer
from webgpt.agent.errors import PolicyResponseError
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.policy import Completion, Completions, Offered, Sampling, StreamChunk, Usage
from webgpt.agent.prompts import BROWSING_HEADER
from webgpt.browser.observation import ANSWER_SEPARATOR

logger = logging.getLogger(__name__)

BROWSING_SYSTEM = (
    "You answer questions by browsing the web with a text browser and collecting quotes "
    "that answer them. Each message shows the question, the quotes collected so far, your "
    "past actions and the page in view (links are written 【id†text】). Call exactly one tool "
    "a turn. Search, open a result, find the answer in the page and quote the sentences "
    "that state it, word for word as the page in view shows them; then call finish. Quote "
    "only what answers the question."
)
ANSWER_SYSTEM = (
    "You write the answer to a question from numbered quotes of web pages. Call answer with "
    "a short paragraph in your own words that states only what the quotes say, each "
    "sentence ending with the number of the quote it comes from in square brackets, like "
    "[1]. If the quotes do not answer the question, call decline."
)


def _tool(name: str, description: str, **properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": list(properties),
                "additionalProperties": False,
            },
            # OpenAI's strict function calling: a server that supports it (vLLM with a
            # tool-call parser, OpenAI) holds the call's arguments to this schema.
            "strict": True,
        },
    }


_TEXT = {"type": "string"}
_SEARCH = _tool("search", "Search the web.", query=_TEXT)
_FIND = _tool("find", "Move the view to the next place the text occurs on the page.", text=_TEXT)
_SCROLL = _tool(
    "scroll",
    "Scroll the page by one to three windows.",
    direction={"type": "string", "enum": ["down", "up"]},
    windows={"type": "integer", "minimum": 1, "maximum": 3},
)
_BACK = _tool("back", "Go back to the previous page.")
_FINISH = _tool("finish", "Stop browsing and answer from the quotes collected.")


def _open_link(ids: Sequence[int] | None = None) -> dict[str, Any]:
    link: dict[str, Any] = {"type": "integer"} | ({"enum": list(ids)} if ids else {})
    return _tool("open_link", "Open the link with this id on the page in view.", link=link)


def _quote(quotes: Sequence[str] | None = None) -> dict[str, Any]:
    text: dict[str, Any] = {"type": "string"} | ({"enum": list(quotes)} if quotes else {})
    return _tool("quote", "Quote a sentence of the page in view, word for word.", text=text)


# Every browsing tool, for a step whose possible commands are not known.
BROWSING_TOOLS = [_SEARCH, _open_link(), _FIND, _quote(), _SCROLL, _BACK, _FINISH]


def browsing_tools(offered: Offered | None) -> list[dict[str, Any]]:
    """The tools of the commands possible now, their arguments narrowed to the links and
    sentences in view (enums, which vLLM and llama.cpp hold a required tool call to)."""
    if offered is None:
        return BROWSING_TOOLS
    tools = [_SEARCH]
    if offered.link_ids:
        tools.append(_open_link(offered.link_ids))
    if offered.page:
        tools.append(_FIND)
    if offered.quotes:
        tools.append(_quote(offered.quotes))
    if offered.page:
        tools.append(_SCROLL)
    if offered.back:
        tools.append(_BACK)
    if offered.finish:
        tools.append(_FINISH)
    return tools


ANSWER_TOOLS = [
    _tool("answer", "The answer, citing quotes as [n].", text=_TEXT),
    _tool("decline", "The quotes do not answer the question."),
]
REWRITE_SYSTEM = (
    "You rewrite the user's last question so that it can be understood without the "
    "conversation before it: put what each pronoun or short reference points to in its "
    "place, and change nothing else. Call ask with the question. A question that already "
    "stands alone is asked as it is."
)
REWRITE_TOOLS = [_tool("ask", "The question as it reads alone.", question=_TEXT)]
# A tool call's JSON around the text it carries: what max_tokens must leave room for.
TOOL_CALL_TOKENS = 64
# Browsing: a quote's text is at most grammar.MAX_QUOTE_CHARS (300) characters.
COMMAND_TOKENS = 192


@dataclass
class ChatPolicy(OpenAIPolicy):
    """Commands and answers from `{base_url}/chat/completions` as tool calls."""

    endpoint: str = "/chat/completions"
    # How a call is asked for: "tools" (tool_choice "required"), or "schema" (a JSON schema
    # as response_format, the call as the message's content) for a server that takes no
    # required tool calls (vLLM without a --tool-call-parser): switched to on its refusal.
    calls: Literal["tools", "schema"] = "tools"

    async def complete(self, prompt: str, sampling: Sampling) -> Completions:
        if prompt.endswith(ANSWER_SEPARATOR):
            question, quotes = _parse_answer_prompt(prompt)
            system, user = ANSWER_SYSTEM, _answer_request(question, quotes)
            tools, max_tokens = ANSWER_TOOLS, sampling.max_tokens + TOOL_CALL_TOKENS
        else:
            system, user = BROWSING_SYSTEM, prompt.removeprefix(BROWSING_HEADER).rstrip("\n")
            tools = browsing_tools(sampling.offered)
            max_tokens = max(sampling.max_tokens, COMMAND_TOKENS)
            question = ""
        request = {"n": sampling.n, "temperature": sampling.temperature, "max_tokens": max_tokens}
        body = await self._call(system, user, tools, request)
        try:
            choices = sorted(body["choices"], key=lambda c: c.get("index", 0))
            texts = [_as_text(c["message"], question) for c in choices]
            usage = body.get("usage") or {}
            used = Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))
        except (KeyError, TypeError, AttributeError, ValueError) as error:
            raise PolicyResponseError(f"malformed chat completions answer: {error!r}") from error
        if len(texts) != sampling.n:
            raise PolicyResponseError(f"asked for {sampling.n} samples, got {len(texts)}")
        finishes = [c.get("finish_reason") or "" for c in choices]
        return Completions([Completion(t, f) for t, f in zip(texts, finishes, strict=True)], used)

    async def stream(self, prompt: str, sampling: Sampling) -> AsyncIterator[StreamChunk]:
        """The answer as one chunk: a tool call's text is whole only once it is parsed."""
        done = await self.complete(prompt, sampling)
        [choice] = done.choices
        yield StreamChunk(choice.text, done.usage, choice.finish_reason or "stop")

    async def rewrite_follow_up(self, question: str, history: Sequence[tuple[str, str]]) -> str:
        """The follow-up as it reads alone (agent.followups.made_standalone), greedy."""
        said = "\n".join(f"{role.capitalize()}: {content}" for role, content in history)
        request = {"temperature": 0.0, "max_tokens": COMMAND_TOKENS}
        body = await self._call(REWRITE_SYSTEM, f"{said}\nUser: {question}", REWRITE_TOOLS, request)
        try:
            called = _called(body["choices"][0]["message"])
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as error:
            raise PolicyResponseError(f"malformed chat completions answer: {error!r}") from error
        return str(called[1].get("question", "")) if called else ""

    async def _call(
        self, system: str, user: str, tools: list[dict[str, Any]], request: dict[str, Any]
    ) -> Any:
        """One request that must call one of tools, in the way this server takes."""
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        payload = {"model": self.model, "messages": messages, **request}
        if self.calls == "tools":
            try:
                return await self._request({**payload, "tools": tools, "tool_choice": "required"})
            except PolicyResponseError as error:
                if error.status_code != 400 or "tool" not in str(error):
                    raise
                logger.warning(
                    "%s takes no required tool calls (%s): asking for JSON", self.base_url, error
                )
                self.calls = "schema"
        messages[0] = {"role": "system", "content": f"{system}\n\n{_tool_list(tools)}"}
        return await self._request({**payload, "response_format": _call_schema(tools)})


def _parse_answer_prompt(prompt: str) -> tuple[str, list[tuple[str, str]]]:
    """(question, [(source, extract)]) of browser.observation.answer_prompt's text."""
    question, *parts = prompt.split(ANSWER_SEPARATOR)
    quotes = []
    for part in parts:
        if not part:
            continue
        head, _, extract = part.partition("\n\n")
        source = head.split("] ", 1)[1] if "] " in head else head
        quotes.append((source, extract))
    return question, quotes


def _answer_request(question: str, quotes: list[tuple[str, str]]) -> str:
    numbered = "\n\n".join(
        f"[{n}] {source}\n{extract}" for n, (source, extract) in enumerate(quotes, start=1)
    )
    return f"Question: {question}\n\nQuotes:\n\n{numbered}"


def _called(message: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(name, arguments) of a message's first tool call, or of the call its content writes
    as JSON (`{"name": ..., "arguments": {...}}`, the "schema" way); None: no call."""
    calls = message.get("tool_calls") or []
    if calls:
        return calls[0]["function"]["name"], _arguments(calls[0]["function"])
    try:
        written = json.loads(message.get("content") or "")
    except ValueError:
        return None
    if isinstance(written, dict) and isinstance(written.get("name"), str):
        return written["name"], _arguments(written)
    return None


def _as_text(message: dict[str, Any], question: str) -> str:
    """The command or answer a message's tool call stands for; a message with no call is
    taken as written (the browser or the citation check then judges it)."""
    called = _called(message)
    if called is None:
        return str(message.get("content") or "").strip()
    name, arguments = called
    text = str(arguments.get("text", "")).strip()
    match name:
        case "search":
            return f"Search {arguments.get('query', '')}".strip()
        case "open_link":
            return f"Clicked on link {arguments.get('link', '')}"
        case "find":
            return f"Find in page: {text}"
        case "quote":
            return f"Quote: {text}"
        case "scroll":
            return f"Scrolled {arguments.get('direction', 'down')} {arguments.get('windows', 1)}"
        case "back":
            return "Back"
        case "finish":
            return "End: Answer"
        case "answer":
            return text
        case "decline":
            return decline_answer(question)
    return f"{name} {json.dumps(arguments)}"  # a tool it was not offered: refused as such


def _tool_list(tools: list[dict[str, Any]]) -> str:
    """The tools as the system message states them where the server is not sent them."""
    lines = [
        f"- {t['function']['name']}: {t['function']['description']}"
        f" Arguments: {json.dumps(t['function']['parameters']['properties'])}"
        for t in tools
    ]
    return 'Reply with one call as JSON, {"name": ..., "arguments": {...}}, of:\n' + "\n".join(
        lines
    )


def _call_schema(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenAI's response_format for one call of one of tools."""
    calls = [
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": [t["function"]["name"]]},
                "arguments": t["function"]["parameters"],
            },
            "required": ["name", "arguments"],
        }
        for t in tools
    ]
    schema = {"anyOf": calls} if len(calls) > 1 else calls[0]
    return {"type": "json_schema", "json_schema": {"name": "call", "schema": schema}}


def _arguments(function: dict[str, Any]) -> dict[str, Any]:
    """A tool call's arguments: a JSON text (OpenAI, vLLM, llama.cpp; Ollama's OpenAI
    route) or an object (Ollama's own API)."""
    arguments = function.get("arguments") or {}
    if isinstance(arguments, str):
        arguments = json.loads(arguments) if arguments.strip() else {}
    if not isinstance(arguments, dict):
        raise ValueError(f"tool call arguments are not an object: {arguments!r}")
    return arguments
