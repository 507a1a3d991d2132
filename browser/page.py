"""A rendered page: display lines with link markers, its links, and text search over it."""

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal
from urllib.parse import urlsplit

# Characters with a meaning in observations, answer prompts or commands, and the
# look-alikes that replace them when they occur in page text (docs/design.md: page text is data).
_LOOKALIKES = str.maketrans(
    {
        "【": "〖",
        "】": "〗",
        "†": "‡",
        "♦": "◆",
        "■": "□",
        "━": "─",
    }
)
# Chat-template and tokenizer control strings, e.g. <|im_start|>, <|endoftext|>.
_SPECIAL_TOKEN = re.compile(r"<(\|[^<>|\n]{0,64}\|)>|<(/?s)>|\[(/?INST)\]")
_MARKER = re.compile(r"【(\d+)†([^†】]*)(?:†[^】]*)?】")

PageKind = Literal["blank", "html", "text", "pdf", "search", "error"]


def neutralize(text: str) -> str:
    """Make untrusted page text unable to imitate our markers or special tokens."""
    text = text.translate(_LOOKALIKES)
    return _SPECIAL_TOKEN.sub(_defang_special_token, text)


def _defang_special_token(match: re.Match[str]) -> str:
    if match.group(1) is not None:
        return f"‹{match.group(1)}›"
    if match.group(2) is not None:
        return f"‹{match.group(2)}›"
    return f"⟦{match.group(3)}⟧"


def domain_of(url: str) -> str:
    """The host name of a URL, lower-case, without port ("" when there is none)."""
    return (urlsplit(url).hostname or "").lower()


def link_marker(link_id: int, text: str, destination_domain: str, page_domain: str) -> str:
    """`【id†text†domain】`, or `【id†text】` when the link stays on the page's domain."""
    text = " ".join(text.split())
    if destination_domain and destination_domain != page_domain:
        return f"【{link_id}†{text}†{destination_domain}】"
    return f"【{link_id}†{text}】"


@dataclass(frozen=True)
class Link:
    id: int
    url: str
    text: str
    domain: str


@dataclass(frozen=True)
class Page:
    """What the browser shows for one URL (or search); immutable and shared by episodes."""

    url: str
    title: str
    lines: tuple[str, ...]
    links: Mapping[int, Link] = field(default_factory=dict)
    kind: PageKind = "html"
    scripted: bool = False  # HTML with scripts that run: worth rendering in Chromium

    @property
    def domain(self) -> str:
        return domain_of(self.url)

    @property
    def display_title(self) -> str:
        """Title as the policy sees it: `<page title> (<domain>)` for pages from the web."""
        if self.kind in ("blank", "search") or not self.domain:
            return self.title
        return f"{self.title} ({self.domain})"

    @cached_property
    def text_index(self) -> "TextIndex":
        return TextIndex(tuple(_MARKER.sub(r"\2", line) for line in self.lines))

    @cached_property
    def total_chars(self) -> int:
        return sum(len(line) + 1 for line in self.lines)


@dataclass(frozen=True)
class Match:
    start: int  # offsets into TextIndex.text
    end: int


class TextIndex:
    """Case- and whitespace-insensitive search over page text with links reduced to text."""

    def __init__(self, plain_lines: tuple[str, ...]) -> None:
        self.text = "\n".join(plain_lines)
        self._line_starts = [0]
        for line in plain_lines[:-1]:
            self._line_starts.append(self._line_starts[-1] + len(line) + 1)
        # squeezed[i] is text[positions[i]] lower-cased, whitespace removed.
        kept = [(i, ch) for i, ch in enumerate(self.text.lower()) if not ch.isspace()]
        self._positions = [i for i, _ in kept]
        self._squeezed = "".join(ch for _, ch in kept)

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self._line_starts, offset) - 1

    def find(self, needle: str, from_offset: int = 0) -> Match | None:
        """First match starting at or after from_offset, else None."""
        squeezed_needle = _squeeze(needle)
        if not squeezed_needle:
            return None
        start_at = bisect.bisect_left(self._positions, from_offset)
        hit = self._squeezed.find(squeezed_needle, start_at)
        if hit < 0:
            return None
        return Match(self._positions[hit], self._positions[hit + len(squeezed_needle) - 1] + 1)

    def find_next(self, needle: str, after_line: int) -> int | None:
        """Line of the next match after after_line, wrapping to the top; None if absent."""
        if after_line + 1 < len(self._line_starts):
            match = self.find(needle, self._line_starts[after_line + 1])
            if match is not None:
                return self.line_of(match.start)
        match = self.find(needle)
        return None if match is None else self.line_of(match.start)

    def extract(
        self, text: str, range_: tuple[str, str] | None, lines: tuple[int, int] | None = None
    ) -> str | None:
        """The page's own text for a quote (`text`, or `start━end` when range_ is set);
        with lines (first, last), only text that lies wholly within those lines."""
        start, stop = 0, len(self.text)
        if lines is not None:
            start = self._line_starts[lines[0]]
            after = lines[1] + 1
            stop = self._line_starts[after] - 1 if after < len(self._line_starts) else stop
        if range_ is None:
            match = self.find(text, start)
            if match is None:
                return None
            span = (match.start, match.end)
        else:
            first = self.find(range_[0], start)
            if first is None:
                return None
            last = self.find(range_[1], first.end)
            if last is None:
                return None
            span = (first.start, last.end)
        if span[1] > stop:
            return None
        return " ".join(self.text[span[0] : span[1]].split())


def _squeeze(text: str) -> str:
    return "".join(text.lower().split())
