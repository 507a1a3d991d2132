"""Text fragments (`#:~:text=`): a link that says where on its page to look.

A search engine links a result to the passage that matched, as Google's results do, with a
fragment directive that browsers read: the page opens scrolled to the first place its text
says `textStart` (https://wicg.github.io/scroll-to-text-fragment/). The directive is not
part of the page's address: the page is fetched, cached and cited without it."""

from urllib.parse import quote, unquote

from webgpt.browser.page import TextIndex

DIRECTIVE = ":~:"
# How many of the passage's first words the link names: enough that a common opening
# ("The default is") rarely matches earlier on the page than the passage itself.
TEXT_START_WORDS = 8
# Where the passage as a whole is not on the rendered page (the index read a pilcrow, a
# syntax diagram or quotes the renderer writes otherwise), the first run of this many of
# its words that is.
FALLBACK_WORDS = 4


def with_text_fragment(url: str, passage: str) -> str:
    """url linked to the place on its page where passage starts (its first words)."""
    words = passage.split()[:TEXT_START_WORDS]
    if not words:
        return url
    # "-", "," and "&" delimit a directive's parts, so they are escaped with the rest.
    start = quote(" ".join(words), safe="")
    return f"{url}{'' if '#' in url else '#'}{DIRECTIVE}text={start}"


def split_text_fragment(url: str) -> tuple[str, str | None]:
    """url without its fragment directive, and the text its first `text=` directive starts
    at (None without one). A directive's prefix (`prefix-,`) and suffix (`,-suffix`) parts
    and its textEnd are not used: the page opens at textStart."""
    address, marker, directive = url.partition(DIRECTIVE)
    if not marker:
        return url, None
    address = address.removesuffix("#")
    for part in directive.split("&"):
        if not part.startswith("text="):
            continue
        terms = [t for t in part.removeprefix("text=").split(",") if t]
        starts = [t for t in terms if not t.endswith("-") and not t.startswith("-")]
        if starts:
            return address, unquote(starts[0])
    return address, None


def passage_line(index: TextIndex, passage: str) -> int | None:
    """The line of the page where passage starts, else where the first run of
    FALLBACK_WORDS of its words is; None where neither is on the page. Only its first
    TEXT_START_WORDS words are read: a link on any page may carry a fragment, and a hostile
    one as long as a URL may be would otherwise cost a search of the page per word."""
    words = passage.split()[:TEXT_START_WORDS]
    runs = [words] + [words[i : i + FALLBACK_WORDS] for i in range(len(words) - FALLBACK_WORDS + 1)]
    for run in runs:
        match = index.find(" ".join(run))
        if match is not None:
            return index.line_of(match.start)
    return None
