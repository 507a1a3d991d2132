"""One browsing episode: `reset(question)`, then `step(command_text)` until it is done.

The session is the environment of WebGPT (Table 1, Appendix A). It never raises for
anything the policy writes or any page the web returns: unreachable pages become error
pages, and a command outside the browser's contract is refused. The contract is what the
guided-decoding grammar (agent.grammar) lets a policy write, checked here again so that it
holds for any driver: a server that ignores the grammar, a chat model's tool call, an MCP
host, a person at `webgpt browse`. A link is clicked only where the page has it; a quote is
text found in the current page (in view or not, as in WebGPT's Table 1) and not quoted
already; Back needs a page to go back to; `End: Answer` needs a quote. A refused command
changes nothing but the actions left, and the next observation's past actions say why
("Refused: ...").
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from webgpt.browser import commands as cmd
from webgpt.browser.censor import Censor
from webgpt.browser.errors import EpisodeOver, InvalidCommand, SearchError
from webgpt.browser.events import (
    BrowserEvent,
    CollectedQuote,
    EndEvent,
    EndReason,
    FindEvent,
    InvalidActionEvent,
    PageEvent,
    QuoteEvent,
    ScrollEvent,
    SearchEvent,
    SearchResultItem,
)
from webgpt.browser.loader import PageCache
from webgpt.browser.observation import answer_prompt, render_observation, scrollbar
from webgpt.browser.page import Page
from webgpt.browser.render import RenderOptions, error_page, is_blocked, search_results_page
from webgpt.browser.search.base import SearchEngine, SearchResult
from webgpt.browser.text_fragments import passage_line, split_text_fragment

BLANK_PAGE = Page(url="", title="", lines=(), kind="blank")
# Orders a search's results before the results page shows them (agent.result_order).
ResultOrder = Callable[[list[SearchResult]], Awaitable[list[SearchResult]]]
_END_REASONS: dict[str, EndReason] = {
    "Answer": "answer",
    "Nonsense": "nonsense",
    "Controversial": "controversial",
}


@dataclass(frozen=True)
class SessionConfig:
    max_actions: int = 100  # WebGPT's limit; invalid actions count too
    quote_budget_chars: int = 2000  # browsing ends when the quotes reach this length
    window_lines: int = 20  # lines of page text shown at once; scrolling moves by windows
    search_results: int = 10
    censor: bool = True  # hide pages that contain the question (10-gram overlap)
    render: RenderOptions = field(default_factory=RenderOptions)


@dataclass(frozen=True)
class StepResult:
    observation: str
    event: BrowserEvent
    done: bool


@dataclass
class _View:
    page: Page
    cursor: int = 0
    opened_at: int = 0  # the cursor the page opened at: its top, or a deep link's passage


class BrowserSession:
    """The browser of one episode; pages come from a cache shared by the request's episodes."""

    def __init__(
        self, engine: SearchEngine, cache: PageCache, config: SessionConfig | None = None
    ) -> None:
        self.engine = engine
        self.cache = cache
        self.config = config or SessionConfig()
        self.question = ""
        self.quotes: list[CollectedQuote] = []
        # the pages quoted from, by URL: what a question's names are looked for on
        # (agent.answer_rules.unshown_names)
        self.quoted_pages: dict[str, Page] = {}
        self.past_actions: list[str] = []
        self.actions_taken = 0
        self.end_reason: EndReason | None = None
        self._history: list[_View] = []
        self._view = _View(BLANK_PAGE)
        self._censor = Censor(())
        # the page views shown, each with the number of quotes then held (see looping)
        self._views_shown: set[tuple[str, int, int]] = set()
        self.looping = False
        # set by the episode's driver: every search's results pass through it
        self.result_order: ResultOrder | None = None

    # -- public surface -------------------------------------------------------------

    def reset(self, question: str, reference_answer: str | None = None) -> str:
        """Start a new episode on a blank page; returns the first observation."""
        self.question = question.strip()
        self.quotes = []
        self.quoted_pages = {}
        self.past_actions = []
        self.actions_taken = 0
        self.end_reason = None
        self._history = []
        self._view = _View(BLANK_PAGE)
        self._views_shown = set()
        self.looping = False
        self.result_order = None
        texts = [self.question] + ([reference_answer] if reference_answer else [])
        self._censor = Censor(texts if self.config.censor else ())
        return self.observation()

    @property
    def done(self) -> bool:
        return self.end_reason is not None

    @property
    def actions_left(self) -> int:
        return max(0, self.config.max_actions - self.actions_taken)

    @property
    def page(self) -> Page:
        return self._view.page

    @property
    def at_opening_view(self) -> bool:
        """Whether the view is where the page opened (its top, or the passage a search
        result linked to), not where a Find, scroll or Top of the driver's brought it."""
        return self._view.cursor == self._view.opened_at

    @property
    def can_go_back(self) -> bool:
        return bool(self._history)

    def window(self) -> tuple[int, int, list[str]]:
        """(first, last, lines) of the window in view: the lines as the observation shows
        them, link markers included."""
        first, last = scrollbar(self._view.page, self._view.cursor, self.config.window_lines)
        return first, last, list(self._view.page.lines[first : last + 1])

    def window_text(self) -> list[str]:
        """The lines in view, links reduced to their text."""
        first, last = scrollbar(self._view.page, self._view.cursor, self.config.window_lines)
        return self.page_text()[first : last + 1]

    def page_text(self) -> list[str]:
        """The page's lines, links reduced to their text (what a quote can match)."""
        if not self._view.page.lines:
            return []
        return self._view.page.text_index.text.split("\n")

    def observation(self) -> str:
        return render_observation(
            self.question,
            self.quotes,
            self.past_actions,
            self._view.page,
            self._view.cursor,
            self.config.window_lines,
            self.actions_left,
        )

    async def step(self, command_text: str) -> StepResult:
        """Apply one command written by the policy."""
        if self.done:
            raise EpisodeOver(f"the episode already ended ({self.end_reason})")
        self.actions_taken += 1
        try:
            command = cmd.parse_command(command_text)
            event = await self._apply(command)
        except InvalidCommand as error:
            event = InvalidActionEvent(text=command_text[:500], reason=str(error))
            self.past_actions.append(f"Refused: {error}")
        self._note_view()
        if not self.done and self.actions_left == 0:
            self.end_reason = "action_limit"
        return StepResult(self.observation(), event, self.done)

    async def open_url(self, url: str) -> StepResult:
        """Open url as if a link to it had been clicked: an action, through the same fetch
        guard, blocked domains and censoring. For callers that browse themselves (MCP
        hosts); the policy's commands open pages by clicking links only."""
        if self.done:
            raise EpisodeOver(f"the episode already ended ({self.end_reason})")
        self.actions_taken += 1
        page = await self._load(url)
        self._open(page)
        self.past_actions.append(f"Open {page.url or url}")
        event = self._page_event(page, "url")
        self._note_view()
        if not self.done and self.actions_left == 0:
            self.end_reason = "action_limit"
        return StepResult(self.observation(), event, self.done)

    async def peek(self, url: str) -> Page:
        """url's page as a click would open it (blocked or censored: the error page), read
        without opening it: no action, the view stays."""
        return await self._load(split_text_fragment(url)[0])

    def answer_prompt(self) -> str:
        """The answer-phase prompt; needs at least one quote."""
        if not self.quotes:
            raise EpisodeOver("the answer phase needs at least one quote")
        return answer_prompt(self.question, self.quotes)

    @property
    def quote_chars(self) -> int:
        return sum(len(q.extract) for q in self.quotes)

    # -- commands -------------------------------------------------------------------

    async def _apply(self, command: cmd.Command) -> BrowserEvent:
        match command:
            case cmd.Search(query=query):
                return await self._search(query)
            case cmd.Click(link_id=link_id):
                return await self._click(link_id)
            case cmd.Find(text=text):
                return self._find(text)
            case cmd.Quote():
                return self._quote(command)
            case cmd.Scroll(direction=direction, amount=amount):
                return self._scroll(direction, amount)
            case cmd.Top():
                self._view.cursor = 0
                self.past_actions.append("Top")
                return self._scroll_event()
            case cmd.Back():
                return self._back()
            case cmd.End(reason=reason):
                if reason == "Answer" and not self.quotes:
                    raise InvalidCommand("End: Answer needs a quote to answer from")
                self.end_reason = _END_REASONS[reason]
                self.past_actions.append(f"End: {reason}")
                return EndEvent(reason=self.end_reason)
        raise InvalidCommand(f"unsupported command {command!r}")  # unreachable: parse is total

    async def _search(self, query: str) -> SearchEvent:
        options = self.config.render
        error: str | None = None
        try:
            results = await self.engine.search(query, self.config.search_results)
            if self.result_order is not None:
                results = await self.result_order(results)
            page = search_results_page(query, results, options)
        except SearchError as failure:
            error = str(failure)
            page = Page(
                url="",
                title=f"Search results for: {query}",
                lines=(f"Search failed: {error}",),
                kind="search",
            )
        self._open(page)
        self.past_actions.append(f"Search {query}")
        items = [
            SearchResultItem(link_id=link.id, title=link.text, url=link.url, domain=link.domain)
            for link in page.links.values()
        ]
        return SearchEvent(query=query, results=items, error=error)

    async def _click(self, link_id: int) -> PageEvent:
        link = self._view.page.links.get(link_id)
        if link is None:
            raise InvalidCommand(f"there is no link {link_id} on this page")
        url, passage = split_text_fragment(link.url)
        page = await self._load(url)
        self._open(page)
        if passage is not None:  # a deep link opens where its passage starts, as browsers do
            self._view.cursor = self._view.opened_at = passage_line(page.text_index, passage) or 0
        self.past_actions.append(f"Click {link.text} {link.domain}".rstrip())
        return self._page_event(page, "click")

    async def _load(self, url: str) -> Page:
        """url's page (fetched through the cache and its guard), or the error page that
        says it is blocked or censored."""
        page = await self.cache.get(url)
        if page.kind != "error" and is_blocked(page.domain, self.config.render.blocked_domains):
            return error_page(page.url, f"Pages on {page.domain} are blocked.")
        if page.kind != "error" and self._censor.hits(page):
            return error_page(page.url, "This page was censored because it contains the question.")
        return page

    def _find(self, text: str) -> FindEvent:
        line = self._view.page.text_index.find_next(text, self._view.cursor)
        if line is None:
            self.past_actions.append(f"Find in page: {text} (not found)")
            return FindEvent(text=text, found=False)
        self._view.cursor = line
        self.past_actions.append(f"Find in page: {text}")
        return FindEvent(text=text, found=True, line=line)

    def _quote(self, command: cmd.Quote) -> QuoteEvent:
        page = self._view.page
        if page.kind in ("blank", "search", "error"):
            raise InvalidCommand("there is no page to quote from")
        # As in WebGPT's browser (its Table 1): text found in the current page, in view or not.
        extract = page.text_index.extract(command.text, command.range)
        if not extract:
            raise InvalidCommand("Quote: that text is not on the page")
        if any(q.extract == extract and q.url == page.url for q in self.quotes):
            raise InvalidCommand("Quote: that text is quoted already")
        extract = extract[: self.config.quote_budget_chars - self.quote_chars]
        quote = CollectedQuote(title=page.title, domain=page.domain, url=page.url, extract=extract)
        self.quotes.append(quote)
        self.quoted_pages[page.url] = page
        self.past_actions.append("Quote")
        if self.quote_chars >= self.config.quote_budget_chars:
            self.end_reason = "quote_budget"
        return QuoteEvent(quote=quote, total_chars=self.quote_chars)

    def _scroll(self, direction: str, amount: int) -> ScrollEvent:
        lines, window = len(self._view.page.lines), self.config.window_lines
        cursor = self._view.cursor
        if direction == "down":
            cursor = min(cursor + amount * window, max(cursor, lines - window, 0))
        else:
            cursor = max(0, cursor - amount * window)
        self._view.cursor = cursor
        self.past_actions.append(f"Scrolled {direction} {amount}")
        return self._scroll_event()

    def _back(self) -> PageEvent:
        if not self._history:
            raise InvalidCommand("there is no page to go back to")
        self._view = self._history.pop()
        self.past_actions.append("Back")
        return self._page_event(self._view.page, "back")

    # -- helpers --------------------------------------------------------------------

    def _note_view(self) -> None:
        """Whether the view now in front of the browser is one it showed before with as
        many quotes held (looping): the browser is deterministic, so the commands that led
        from that view back to it would lead round again. A command that left the view as
        it was (a Find that found nothing, a scroll past the end) shows it again too.
        Results, blank and error pages do not count: nothing on them can be quoted, and a
        search may come back to them to open another result."""
        page = self._view.page
        if page.kind in ("blank", "search", "error"):
            self.looping = False
            return
        view = (page.url, self._view.cursor, len(self.quotes))
        self.looping = view in self._views_shown
        self._views_shown.add(view)

    def _open(self, page: Page) -> None:
        if self._view.page.kind != "blank":
            self._history.append(self._view)
        self._view = _View(page)

    def _scroll_event(self) -> ScrollEvent:
        first, last = scrollbar(self._view.page, self._view.cursor, self.config.window_lines)
        return ScrollEvent(first_line=first, last_line=last)

    def _page_event(self, page: Page, via: Literal["click", "back", "url"]) -> PageEvent:
        return PageEvent(
            via=via,
            url=page.url,
            title=page.display_title,
            kind=page.kind,
            lines=len(page.lines),
        )
