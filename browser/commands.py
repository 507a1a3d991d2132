"""Browsing commands (WebGPT Table 1), parsed from the policy's text into frozen values."""

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from webgpt.browser.errors import InvalidCommand

QUOTE_RANGE_SEPARATOR = "━"


@dataclass(frozen=True)
class Search:
    query: str


@dataclass(frozen=True)
class Click:
    link_id: int


@dataclass(frozen=True)
class Find:
    text: str


@dataclass(frozen=True)
class Quote:
    text: str

    @property
    def range(self) -> tuple[str, str] | None:
        """(start, end) for the `<start>━<end>` form, else None."""
        start, sep, end = self.text.partition(QUOTE_RANGE_SEPARATOR)
        if not sep:
            return None
        return start.strip(), end.strip()


@dataclass(frozen=True)
class Scroll:
    direction: Literal["down", "up"]
    amount: int


@dataclass(frozen=True)
class Top:
    pass


@dataclass(frozen=True)
class Back:
    pass


@dataclass(frozen=True)
class End:
    reason: Literal["Answer", "Nonsense", "Controversial"]


Command = Search | Click | Find | Quote | Scroll | Top | Back | End

_PARSERS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], "Command"]]] = [
    (re.compile(r"Search +(\S.*)"), lambda m: Search(m[1].strip())),
    (re.compile(r"Clicked on link (\d{1,6})"), lambda m: Click(int(m[1]))),
    (re.compile(r"Find in page: +(\S.*)"), lambda m: Find(m[1].strip())),
    (re.compile(r"Quote: +(\S.*)", re.DOTALL), lambda m: Quote(m[1].strip())),
    (re.compile(r"Scrolled (down|up) ([123])"), lambda m: Scroll(m[1], int(m[2]))),  # type: ignore[arg-type]
    (re.compile(r"Top"), lambda m: Top()),
    (re.compile(r"Back"), lambda m: Back()),
    (re.compile(r"End: (Answer|Nonsense|Controversial)"), lambda m: End(m[1])),  # type: ignore[arg-type]
]

# The same grammar as one regular expression, for guided decoding of browsing steps.
COMMAND_REGEX = (
    r"(Search [^\n]{1,200}"
    r"|Clicked on link [0-9]{1,4}"
    r"|Find in page: [^\n]{1,200}"
    r"|Quote: [^\n]{1,500}"
    r"|Scrolled (down|up) [123]"
    r"|Top|Back"
    r"|End: (Answer|Nonsense|Controversial))"
)


def parse_command(text: str) -> Command:
    """Parse one command; surrounding whitespace is ignored, anything else is invalid."""
    stripped = text.strip()
    for pattern, build in _PARSERS:
        match = pattern.fullmatch(stripped)
        if match is not None:
            return build(match)
    raise InvalidCommand(f"not a browsing command: {stripped[:80]!r}")
