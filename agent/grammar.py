"""Regular expressions for guided decoding: every sampled command parses, and is possible.

The browsing grammar is built from the session's state at each step, so a constrained
policy can only click links that exist, quote a sentence in view (and not quoted yet; the
browser takes text anywhere on the page, and a factoid's Quote from the view a page opened
at takes the quote ranker's best of the page: agent.episode.page_quote), go Back when
there is history, and end with an answer only once it holds a quote, or three for a
question asking for an explanation (agent.answer_rules). Near the action limit it steers a
policy with no quote yet to quote, so small untrained models still finish episodes with an
answer (`force_finish`). The answer grammar admits only citations of collected quotes, and
at least one; what the answer says between them is the policy's (a degenerate one is
caught after it: agent.degenerate).

The regex dialect is the common subset that vLLM's structured-output backends accept:
literal text is escaped by `_literal` (not re.escape, whose `\\ ` and `\\-` they reject).
"""

import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, Protocol

from webgpt.agent.declines import DECLINE_REGEX
from webgpt.agent.policy import Offered
from webgpt.agent.queries import named_callables, opens_signature, question_query
from webgpt.browser.session import BrowserSession

_REGEX_SPECIALS = frozenset("\\.^$|?*+()[]{}")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# What a period ends without ending the sentence: letters each with its period ("e.g.",
# "i.e.", "a.m.", "U.S."), a person's initial ("J. R. R."; not I, V or X, which end
# sentences as Roman numerals: "World War I."), and titles and shortenings that precede
# what they qualify ("Dr.", "St.", "vs.", "approx.", "No. 5"). Some of them end a sentence
# now and then ("in the U.S.", "Plan B."), which then reads as one with the next; "etc."
# ends lists, and so sentences, too often to be read so
# (docs/eval/promotion-rules-abbreviations.md measured the trade on dev).
_ABBREVIATION_END = re.compile(
    r"(?:(?<![\w.])(?:[A-Za-z]\.){2,}|(?<![\w.])[A-HJ-UWYZ]\."
    r"|\b(?:Mr|Mrs|Ms|Dr|Prof|St|Mt|Jr|Sr|vs|cf|al|approx|ca|No|Nos|Vol|Fig|Inc|Ltd)\.)$"
)
# A heading's or list item's mark as the renderer writes it (browser.layout): only the mark
# leaves the text, so an option ("- --all"), a number ("* -0.0") or a code line
# ("#include", which stands alone as a heading does) keeps its own signs.
_BLOCK_MARK = re.compile(r"(?:#+|[*>-]) ")
_CLAUSE_END = re.compile(r"[,;:] | [—–] ")  # where a long sentence's quote may end
_WORD = re.compile(r"\w+")
MAX_QUOTE_CHOICES = 12
MAX_QUOTE_CHARS = 300
MIN_QUOTE_CHARS = 20
MAX_TERM_CHARS = 160  # a definition's term longer than this is prose, not a name
_PROSE_ENDINGS = (".", ":", "!", "?", ";", ",")  # a term ends no sentence or clause
MAX_LINK_CHOICES = 300
# An answer's text: anything but a citation's brackets, a line break, and the answer's stop
# "■" with its look-alikes (Unicode's Block Elements and Geometric Shapes, U+2580-U+25FF,
# which no answer needs): a policy that wants to stop before the grammar lets it (no
# citation yet) writes a look-alike, then its answer again (with_stop;
# docs/eval/promotion-rules-stop-lookalikes.md).
_NOT_ANSWER_TEXT = "\\[\\]\\n▀-◿"
ANSWER_TEXT = f"[^{_NOT_ANSWER_TEXT}]"
FORCE_FINISH_ACTIONS = 4  # with no quote yet and this many actions left, head for one
UNQUOTABLE_KINDS = ("blank", "search", "error")  # page kinds the browser refuses a Quote on


def _literal(text: str) -> str:
    return "".join("\\" + ch if ch in _REGEX_SPECIALS else ch for ch in text)


def _alternatives(items: list[str]) -> str:
    return "(" + "|".join(items) + ")"


def quote_choices(session: BrowserSession, *, named_entry: bool = False) -> list[str]:
    """Quotable spans in view: its sentences of some length, cut at a word boundary; with
    named_entry, where the view opens at an entry the question names, that entry's
    description alone (_named_entry)."""
    if session.page.kind in UNQUOTABLE_KINDS:
        return []
    lines = session.window_text()
    entry = _named_entry(session.question, lines) if named_entry else []
    return (entry or quotable_sentences(lines))[:MAX_QUOTE_CHOICES]


def _named_entry(question: str, lines: list[str]) -> list[str]:
    """Where the lines open with the signature of a callable the question names (a Find
    brought it to the top of the view: _find_text), the quotable sentences of its
    description in view (definition_terms). The view's other sentences describe other
    entries, and a sentence there does not say which callable it describes; the signature
    itself says nothing of what the callable does."""
    top = next(iter(lines), "")
    if not any(opens_signature(top, name) for name in named_callables(question)):
        return []
    paragraphs = _paragraphs(lines)
    signature = paragraphs[0].text
    return [s for s, term in _described_terms(paragraphs).items() if term == signature]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def quotable_sentences(lines: list[str]) -> list[str]:
    """The quotable sentences of rendered lines, in order, each once."""
    sentences = (s for p in _paragraphs(lines) for s in split_sentences(p.text))
    return list(dict.fromkeys(filter(None, map(quotable, sentences))))


def split_sentences(text: str) -> list[str]:
    """A paragraph's sentences: it ends one at ".", "!" or "?" and a space, but not at an
    abbreviation's period (_ABBREVIATION_END), so that a quote does not stop at "e.g."."""
    sentences: list[str] = []
    for piece in _SENTENCE_END.split(text):
        if sentences and _ABBREVIATION_END.search(sentences[-1]):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return sentences


def quotable(sentence: str) -> str | None:
    """A sentence as a Quote may take it: spaces collapsed, and past MAX_QUOTE_CHARS cut at
    its last clause boundary within them (", ", "; ", ": ", " — ") where that keeps half of
    them, else at a word boundary, so that an answer copying the quote ends a clause rather
    than a phrase ("…and spread along the river to the"); None when it is shorter than
    MIN_QUOTE_CHARS."""
    text = " ".join(sentence.split())
    if len(text) < MIN_QUOTE_CHARS:
        return None
    if len(text) <= MAX_QUOTE_CHARS:
        return text
    head = text[:MAX_QUOTE_CHARS]
    ends = [m.start() for m in _CLAUSE_END.finditer(head) if m.start() >= MAX_QUOTE_CHARS // 2]
    return head[: ends[-1]] if ends else head.rsplit(" ", 1)[0]


def quotes_to_offer(
    session: BrowserSession, *, whole_page: bool = False, named_entry: bool = False
) -> list[str]:
    """The sentences in view (with whole_page, anywhere on the page; with named_entry, as
    quote_choices) a Quote may take: those not quoted already, whole or cut short (a Quote
    cut at the command's token budget holds the sentence's opening, and the browser
    refuses the same cut again)."""
    if not whole_page:
        choices = quote_choices(session, named_entry=named_entry)
    elif session.page.kind in UNQUOTABLE_KINDS:
        choices = []
    else:
        choices = quotable_sentences(session.page_text())
    held = [q.extract for q in session.quotes]
    return [c for c in choices if not any(c.startswith(h) for h in held)]


class _Paragraph(NamedTuple):
    text: str
    indent: int  # its first line's


def _paragraphs(lines: list[str]) -> list[_Paragraph]:
    """Join wrapped lines back into paragraphs; headings and list items stand alone, and so
    does a line indented less than the one before it or a level (4 columns) more: a
    definition's term and its description below it (browser.layout), where a wrapped
    table row or code line goes on 2 columns in."""
    paragraphs: list[_Paragraph] = []
    joined: list[str] = []
    indent = first_indent = 0

    def close() -> None:
        if joined:
            paragraphs.append(_Paragraph(" ".join(joined), first_indent))
            joined.clear()

    for line in lines:
        stripped = line.strip()
        starts_block = stripped.startswith(("#", "* ", "- ", "> "))
        previous, indent = indent, _indent(line)
        if not stripped or starts_block or not previous <= indent < previous + 4:
            close()
        if stripped:
            first_indent = first_indent if joined else indent
            mark = _BLOCK_MARK.match(stripped)
            joined.append(stripped[mark.end() :].strip() if mark else stripped)
        if starts_block:
            close()
    close()
    return paragraphs


def definition_terms(lines: list[str]) -> dict[str, str]:
    """Each quotable sentence of a definition's description (an API entry, a manual's
    option or setting: a term with its description indented a level below it,
    browser.layout), mapped to its term; sentences of no definition are left out. A
    description's sentences do not say which term they describe ("The default is 3."):
    _named_entry finds an entry's sentences so."""
    return _described_terms(_paragraphs(lines))


def _described_terms(paragraphs: list[_Paragraph]) -> dict[str, str]:
    terms: dict[str, str] = {}
    for index, paragraph in enumerate(paragraphs):
        term = _term_of(paragraphs, index)
        if term is None:
            continue
        for sentence in split_sentences(paragraph.text):
            if (quoted := quotable(sentence)) is not None:
                terms.setdefault(quoted, term)
    return terms


def _term_of(paragraphs: list[_Paragraph], index: int) -> str | None:
    """The term of the definition paragraphs[index] describes: the nearest paragraph above
    it, indented less, that names something (short, ending no sentence or clause) and has
    a paragraph a level (4 columns) deeper right below it. One indented less that is no
    term (a "Parameters:" heading) is passed over for the one above it; a wrapped list
    item, which goes on 2 columns in, is no definition."""
    depth = paragraphs[index].indent
    for at in range(index - 1, -1, -1):
        if depth == 0:
            return None
        above = paragraphs[at]
        if above.indent < depth:
            if (
                paragraphs[at + 1].indent == above.indent + 4
                and len(above.text) <= MAX_TERM_CHARS
                and not above.text.endswith(_PROSE_ENDINGS)
            ):
                return above.text
            depth = above.indent
    return None


def browsing_grammar(
    session: BrowserSession,
    *,
    allow_refusal: bool = False,
    force_finish: bool = True,
    min_quotes: int = 1,
    question_search: bool = False,
    ranked: Sequence[str] | None = None,
) -> "BrowsingGrammar":
    """The commands that make sense in the session's current state, and the names of the
    grammar's parts that narrowed them (the trace shows them beside each command).

    Browsing ends once it holds min_quotes quotes; with its actions running out, once it
    holds one, after quoting what is in view where it wants more. A question wanting one
    quote, back at a page view it showed before with nothing quoted (a loop:
    BrowserSession.looping), quotes what is in view. A sentence quoted already
    is not offered again, and where a learned ranker picked some (ranked;
    agent.quote_ranking) only those are offered. A page that writes a callable the question
    names before its arguments takes a Find of that only, until its signature tops the
    view, so that the Find lands on its entry rather than on an example that calls a method
    of the same name on another class (_find_text); then a Quote takes a sentence of that
    entry (_named_entry). With question_search, the episode's
    first Search is the question's own words (agent.queries.question_query) rather than a
    guessed page title."""
    quotes = quotes_to_offer(session, named_entry=True)
    narrowed: list[str] = []
    if ranked is not None:
        offered = len(quotes)
        quotes = [q for q in quotes if q in ranked]
        if len(quotes) < offered:
            narrowed.append("ranked_quotes")
    link_ids = sorted(session.page.links)[:MAX_LINK_CHOICES]
    quote = "Quote: " + _alternatives([_literal(q) for q in quotes])
    click = "Clicked on link " + _alternatives([str(i) for i in link_ids])
    search = r"Search [^\n]+"
    if question_search and not any(a.startswith("Search ") for a in session.past_actions):
        search = "Search " + _literal(question_query(session.question))
        narrowed.append("question_search")
    left = session.actions_left
    finishing = [*narrowed, "force_finish"]
    if force_finish and session.quotes and left <= 1:
        return BrowsingGrammar("End: Answer", finishing)
    if force_finish and session.looping and not session.quotes and min_quotes == 1 and quotes:
        # A fact's browsing back at a view it showed before, nothing quoted yet: it is going
        # round, and would go round again. Quote what is in view. (An explanation is left
        # to browse on: quoted so, its answers lost more than they gained on dev.)
        return BrowsingGrammar(quote, finishing)
    if force_finish and not session.quotes and left <= FORCE_FINISH_ACTIONS:
        # Quote what is in view, else open a page, else search with the question's own
        # words (a free query may match nothing): the shortest way to a quote.
        forced = quote if quotes else click if link_ids else _question_search(session.question)
        return BrowsingGrammar(forced, finishing)
    if (
        force_finish
        and len(session.quotes) < min_quotes
        and quotes
        and left <= FORCE_FINISH_ACTIONS
    ):
        # An explanation holding one quote takes another from what is in view: answered
        # from one quote, it cites one.
        return BrowsingGrammar(quote, finishing)
    options = [search]
    if link_ids:
        options.append(click)
    if session.page.lines:
        find = _find_text(session)
        if find is not None:
            options.append(f"Find in page: {find}")
        if find != r"[^\n]+":
            narrowed.append("named_find")
        options += ["Scrolled (down|up) [123]", "Top"]
    if quotes:
        options.append(quote)
    if session.can_go_back:
        options.append("Back")
    if len(session.quotes) >= min_quotes or (session.quotes and left <= FORCE_FINISH_ACTIONS):
        options.append("End: Answer")
    if allow_refusal:
        options.append("End: (Nonsense|Controversial)")
    return BrowsingGrammar(_alternatives(options), narrowed)


def offered_commands(session: BrowserSession) -> Offered:
    """The commands the browser takes now, as values (what the grammar's regex spells out,
    without the answer rules' narrowing)."""
    return Offered(
        link_ids=tuple(sorted(session.page.links)[:MAX_LINK_CHOICES]),
        quotes=tuple(quotes_to_offer(session)),
        page=bool(session.page.lines),
        back=session.can_go_back,
        finish=bool(session.quotes),
    )


class BrowsingGrammar(NamedTuple):
    regex: str  # the commands allowed now
    # the parts of the grammar that narrowed them beyond what the browser accepts:
    # question_search, ranked_quotes (a learned ranker), named_find, force_finish
    narrowed: list[str]


def browsing_regex(session: BrowserSession, **options: Any) -> str:
    """browsing_grammar's regex alone (benchmarks and tests read it so)."""
    return browsing_grammar(session, **options).regex


def _find_text(session: BrowserSession) -> str | None:
    """What a Find on the page in view may look for: a callable the question names, where
    the page writes it before its arguments, until a Find has brought its signature to the
    top of the view (then None, no Find: Find is blind to case and wraps, so another would
    land on "pdb.Pdb.runcall(" for "pdb.runcall("); else any text."""
    page_text = session.page.text_index.text
    named = [n for n in named_callables(session.question) if f"{n}(" in page_text]
    if named:
        top = next(iter(session.window_text()), "")
        if any(opens_signature(top, n) for n in named):
            return None
        return _alternatives([_literal(f"{n}(") for n in named])
    return r"[^\n]+"


def _question_search(question: str) -> str:
    words = list(dict.fromkeys(w for w in _WORD.findall(question) if len(w) > 2))[:30]
    if not words:
        return r"Search [^\n]+"
    word = _alternatives([_literal(w) for w in words])
    return f"Search {word}( {word}){{0,7}}"


def with_stop(regex: str, stop: str) -> str:
    """The regex, optionally followed by the stop string the request also carries.

    A trained policy ends each output with its stop string ("\\n" after a command, "■"
    after an answer); a grammar that forbids it makes the policy write on past its end (a
    look-alike "▪", then the answer again). Allowed, it ends the output where vLLM stops."""
    escaped = "\\n" if stop == "\n" else _literal(stop)
    return f"({regex})({escaped})?"


class Quoted(Protocol):
    """A collected quote as an answer sees it (CollectedQuote, Reference, DemoQuote)."""

    @property
    def title(self) -> str: ...

    @property
    def extract(self) -> str: ...


def answer_regex(quotes: Sequence[Quoted]) -> str:
    """A cited answer (cited_answer_regex) or a decline (agent.declines), which cites
    nothing."""
    return f"({cited_answer_regex(quotes)}|{DECLINE_REGEX})"


def cited_answer_regex(quotes: Sequence[Quoted]) -> str:
    """Text citing the quotes as [n], at least once, and nothing else in square brackets.

    Its text is unbounded: the answer's token budget (EpisodeConfig.answer_max_tokens) ends
    it, and an answer cut there before its citation, or one that loops, is degenerate and
    gets the one retry (agent.degenerate). It depends only on the number of quotes, so the
    engine compiles it once for each."""
    cite = _citation(range(1, len(quotes) + 1))
    return f"({ANSWER_TEXT}+{cite})+{ANSWER_TEXT}*"


# A rewritten sentence's text: a full stop, question or exclamation mark in it comes before
# another character ("json.dumps", "e.g.,"), before a space and a small letter ("the U.S.
# national team"), or after a short word ("Mount St. Helens"), so the sentence ends at its
# citation. A group where a class stands, it fills a token's mask in ~17 ms against
# 0.03 ms, so only a rare rewrite uses it (docs/benchmarks.md).
_IN_SENTENCE = f"[^{_NOT_ANSWER_TEXT}.!?]"
_AFTER_STOP = f"[^{_NOT_ANSWER_TEXT}\\s.!?]"
_SENTENCE_UNIT = (
    f"({_IN_SENTENCE}|[.!?]{_AFTER_STOP}|[.!?] {_AFTER_STOP[:-1]}A-Z]| [A-Za-z]{{1,3}}\\. )"
)


def quoted_sentence_regex(cite: int) -> str:
    """The rest of one sentence that the prompt has opened with quote `cite`'s words, to
    its citation of that quote (agent.episode.write_answer: a degenerate answer's one
    retry, written a sentence a quote)."""
    return f"{_SENTENCE_UNIT}+([.!?] ?)?\\[{cite}\\]\\.?"


def _citation(indices: Iterable[int]) -> str:
    """A citation of one of the quotes numbered indices: "[2]"."""
    return _alternatives([f"\\[{n}\\]" for n in indices])
