"""The exact texts the policy reads: observations (format version 1) and the answer prompt.

Any change to these formats must bump OBSERVATION_FORMAT_VERSION: checkpoints record the
version they were trained on and the service refuses a mismatch (docs/design.md).
"""

from collections.abc import Sequence

from webgpt.browser.events import CollectedQuote
from webgpt.browser.page import Page

OBSERVATION_FORMAT_VERSION = 1
ANSWER_SEPARATOR = "■"
# Only the most recent past actions are shown, so 100 actions cannot push an observation
# past a small model's context window.
MAX_PAST_ACTIONS = 30


def scrollbar(page: Page, cursor: int, window_lines: int) -> tuple[int, int]:
    """(first, last) line numbers of the window, 0-based and inclusive; (0, 0) when empty."""
    if not page.lines:
        return 0, 0
    first = min(cursor, len(page.lines) - 1)
    return first, min(first + window_lines, len(page.lines)) - 1


def render_observation(
    question: str,
    quotes: Sequence[CollectedQuote],
    past_actions: Sequence[str],
    page: Page,
    cursor: int,
    window_lines: int,
    actions_left: int,
) -> str:
    first, last = scrollbar(page, cursor, window_lines)
    parts = ["♦Question", question, "♦Quotes"]
    for quote in quotes:
        parts += [f"From {quote.title} ({quote.domain})", f"> {quote.extract}"]
    parts.append("♦Past actions")
    parts.extend(past_actions[-MAX_PAST_ACTIONS:])
    parts += ["♦Title", page.display_title, f"♦Scrollbar: {first} - {last}", "♦Text"]
    if page.lines:
        parts.extend(page.lines[first : last + 1])
    parts += [f"♦Actions left: {actions_left}", "♦Next action"]
    return "\n".join(parts)


def answer_prompt(question: str, quotes: Sequence[CollectedQuote]) -> str:
    """`<question>■` then `[n] <title> (<domain>)\\n\\n<extract>■` for each quote."""
    parts = [question + ANSWER_SEPARATOR]
    for n, quote in enumerate(quotes, start=1):
        # Quotes from browsing always have a domain; comparison data sets may not.
        source = f"{quote.title} ({quote.domain})" if quote.domain else quote.title
        parts.append(f"[{n}] {source}\n\n{quote.extract}{ANSWER_SEPARATOR}")
    return "".join(parts)
