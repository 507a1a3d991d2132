"""Typed events a session emits for every step, for traces and live streaming.

They are pydantic models so the service can stream them as they are (`model_dump_json`);
`type` tells them apart.
"""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

EndReason = Literal["answer", "nonsense", "controversial", "action_limit", "quote_budget"]


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)


class CollectedQuote(_Event):
    """A quote the policy collected: what the answer may cite."""

    title: str
    domain: str
    url: str
    extract: str


class SearchResultItem(_Event):
    link_id: int
    title: str
    url: str
    domain: str


class SearchEvent(_Event):
    type: Literal["search"] = "search"
    query: str
    results: list[SearchResultItem]
    error: str | None = None


class PageEvent(_Event):
    """A page was opened by a click, shown again by Back, or opened by its URL (a caller
    browsing through BrowserSession.open_url; the policy's commands cannot)."""

    type: Literal["page"] = "page"
    via: Literal["click", "back", "url"]
    url: str
    title: str
    kind: str
    lines: int


class ScrollEvent(_Event):
    type: Literal["scroll"] = "scroll"
    first_line: int
    last_line: int


class FindEvent(_Event):
    type: Literal["find"] = "find"
    text: str
    found: bool
    line: int | None = None


class QuoteEvent(_Event):
    type: Literal["quote"] = "quote"
    quote: CollectedQuote
    total_chars: int


class EndEvent(_Event):
    type: Literal["end"] = "end"
    reason: EndReason


class InvalidActionEvent(_Event):
    type: Literal["invalid_action"] = "invalid_action"
    text: str
    reason: str


BrowserEvent = Annotated[
    SearchEvent | PageEvent | ScrollEvent | FindEvent | QuoteEvent | EndEvent | InvalidActionEvent,
    Field(discriminator="type"),
]
