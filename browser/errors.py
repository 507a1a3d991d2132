"""Errors raised by the browser package.

Hierarchy::

    BrowserError
    ├── InvalidCommand        text that is not one of the Table 1 commands
    ├── FetchError            a URL could not be turned into a document
    │   ├── BlockedAddress    the SSRF guard refused a URL, host or address
    │   ├── FetchTimeout      the total fetch deadline passed
    │   ├── TooLarge          the decoded body exceeded its cap
    │   └── HTTPStatusError   the server answered with an error status
    ├── RenderError           a document could not be rendered (worker died, timed out)
    ├── SearchError           a search engine failed
    │   └── RateLimited       the engine asked us to slow down
    ├── CorpusError           the offline web store is missing or malformed
    └── EpisodeOver           a step after the end, or an answer prompt without quotes

The session turns every one of these into an error page or an invalid action; none of them
escapes an episode.
"""


class BrowserError(Exception):
    """Root of every error the browser package raises on purpose."""


class InvalidCommand(BrowserError):
    """The policy's text is not a command of Table 1."""


class FetchError(BrowserError):
    """A URL could not be turned into a document."""


class BlockedAddress(FetchError):
    """The SSRF guard refused a URL, a host or one of its addresses."""


class FetchTimeout(FetchError):
    """The total deadline of a fetch passed."""


class TooLarge(FetchError):
    """The decoded body went over its cap."""


class HTTPStatusError(FetchError):
    """The server answered with an error status."""

    def __init__(self, status_code: int, url: str) -> None:
        super().__init__(f"HTTP {status_code} from {url}")
        self.status_code = status_code


class RenderError(BrowserError):
    """A document could not be rendered."""


class SearchError(BrowserError):
    """A search engine failed."""


class RateLimited(SearchError):
    """The search engine answered 429; retry_after is in seconds when it said."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class CorpusError(BrowserError):
    """The offline web store is missing or malformed."""


class EpisodeOver(BrowserError):
    """A step or answer was asked of a session in the wrong phase (ended, or no quotes)."""
