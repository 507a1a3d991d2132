"""Documentation entries found, read and answered whole (docs/questions.md, "Documentation
entries"): the renderer writes a Sphinx signature with its qualified name (browser.render), a
Find of a callable the question names lands on its entry (agent.grammar) and stops there once
its signature, Sphinx's annotations and all, tops the view (agent.queries.opens_signature),
where a Quote takes a sentence of that entry, not of the next one in view (agent.grammar),
and an answer that stops short of its quote's sentence is completed from the quote
(agent.answer_rules)."""

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.agent.fake_policy import Script
from tests.agent.test_agent import collect_into
from webgpt.agent.episode import EpisodeConfig, run_episode
from webgpt.agent.grammar import (
    _named_entry,
    browsing_regex,
    definition_terms,
    quotable_sentences,
    quotes_to_offer,
)
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.queries import named_callables, opens_signature
from webgpt.agent.trace import AnswerDeltaEvent, TraceEvent
from webgpt.browser.corpus import build_corpus, folder_pages
from webgpt.browser.session import BrowserSession, SessionConfig
from webgpt.browser.web import Web, WebOptions


def _method(qualified: str, annotation: str, description: str) -> str:
    name = qualified.rsplit(".", 1)[1]
    return (
        f'<dl class="py method"><dt class="sig sig-object py" id="{qualified}">'
        f'<em class="property"><span class="pre">{annotation}</span> </em>'
        f'<span class="sig-name descname"><span class="pre">{name}</span></span>'
        f'<span class="sig-paren">(</span><span class="sig-paren">)</span>'
        f'<a class="headerlink" href="#{qualified}">¶</a></dt>'
        f"<dd><p>{description}</p></dd></dl>"
    )


def _example(call: str) -> str:
    return f'<div class="highlight"><pre>await {call}\ntry:\n    pass</pre></div>'


# asyncio's synchronisation page, as Sphinx writes it: Lock and Condition each document an
# acquire() method, and each example calls acquire() on its own object before the entry.
SYNC_PAGE = f"""<html><head><title>Synchronization Primitives</title></head><body>
<div role="main"><h1>Synchronization Primitives</h1>
<p>asyncio synchronization primitives are designed to be similar to those of the threading
module.</p>
<dl class="py class"><dt class="sig sig-object py" id="asyncio.Lock">\
<em class="property"><span class="pre">class</span> </em>\
<span class="sig-prename descclassname"><span class="pre">asyncio.</span></span>\
<span class="sig-name descname"><span class="pre">Lock</span></span>\
<span class="sig-paren">(</span><span class="sig-paren">)</span></dt>
<dd><p>Implements a mutex lock for asyncio tasks.</p>
{_example("lock.acquire()")}
{_method("asyncio.Lock.acquire", "coroutine", "Acquire the lock.")}
</dd></dl>
<dl class="py class"><dt class="sig sig-object py" id="asyncio.Condition">\
<em class="property"><span class="pre">class</span> </em>\
<span class="sig-prename descclassname"><span class="pre">asyncio.</span></span>\
<span class="sig-name descname"><span class="pre">Condition</span></span>\
<span class="sig-paren">(</span><span class="sig-paren">)</span></dt>
<dd><p>A Condition object.</p>
{_example("cond.acquire()")}
{_method("asyncio.Condition.acquire", "coroutine", "Acquire the underlying lock.")}
</dd></dl>
</div></body></html>"""
QUESTION = "What is the asyncio.Condition.acquire method for?"
# A made-up module whose class documents two methods one after the other, so that a view
# opening at the first entry shows the second too.
SHELF_PAGE = f"""<html><head><title>shelf — boxes on shelves</title></head><body>
<div role="main"><h1>shelf — boxes on shelves</h1>
<dl class="py class"><dt class="sig sig-object py" id="shelf.Shelf">\
<em class="property"><span class="pre">class</span> </em>\
<span class="sig-prename descclassname"><span class="pre">shelf.</span></span>\
<span class="sig-name descname"><span class="pre">Shelf</span></span>\
<span class="sig-paren">(</span><span class="sig-paren">)</span></dt>
<dd><p>A shelf that holds boxes.</p>
{_method("shelf.Shelf.stack", "coroutine", "Put a box on the top of it. A full shelf refuses.")}
{_method("shelf.Shelf.go", "", "Go.")}
{_method("shelf.Shelf.count", "coroutine", "Return how many boxes the shelf holds.")}
</dd></dl>
</div></body></html>"""


@pytest.fixture
async def docs_web(tmp_path: Path) -> AsyncIterator[Web]:
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "asyncio-sync.html").write_text(SYNC_PAGE, encoding="utf-8")
    (pages / "shelf.html").write_text(SHELF_PAGE, encoding="utf-8")
    store = tmp_path / "web.sqlite"
    build_corpus(store, [("docs", folder_pages(pages, "https://docs.example/library", "docs"))])
    opened = Web(WebOptions(offline_store=store, offline_only=True, js_mode="never"))
    yield opened
    await opened.aclose()


async def _opened(
    web: Web, question: str, search: str = "Search asyncio Condition acquire"
) -> BrowserSession:
    session = web.session(config=SessionConfig(max_actions=12))
    session.reset(question)
    for command in (search, "Clicked on link 0"):
        await session.step(command)
    return session


async def test_a_signature_shows_the_qualified_name_its_anchor_holds(docs_web: Web) -> None:
    text = (await _opened(docs_web, QUESTION)).page.text_index.text
    assert "class asyncio.Condition()" in text  # its prefix already says it
    assert "coroutine asyncio.Lock.acquire()" in text
    assert "coroutine asyncio.Condition.acquire()" in text
    assert "coroutine acquire()" not in text
    assert "await cond.acquire()" in text  # examples are the page's own text


async def test_a_find_of_a_named_callable_lands_on_its_entry_and_is_not_repeated(
    docs_web: Web,
) -> None:
    session = await _opened(docs_web, QUESTION)
    grammar = browsing_regex(session)
    assert re.fullmatch(grammar, "Find in page: asyncio.Condition.acquire(")
    for elsewhere in ("acquire(", "cond.acquire(", "Acquire the underlying"):
        assert not re.fullmatch(grammar, f"Find in page: {elsewhere}")
    found = await session.step("Find in page: asyncio.Condition.acquire(")
    signature = "    coroutine asyncio.Condition.acquire()"  # indented under its class
    assert session.window_text()[0] == signature, found
    # its signature tops the view: another Find would wrap to the next match, so none is
    # offered, and the entry's description may be quoted
    grammar = browsing_regex(session)
    assert not re.fullmatch(grammar, "Find in page: asyncio.Condition.acquire(")
    assert re.fullmatch(grammar, "Quote: Acquire the underlying lock.")
    # a question naming no callable the page writes may Find any text
    other = await _opened(docs_web, "What does a Condition object do?")
    assert re.fullmatch(browsing_regex(other), "Find in page: acquire(")


async def test_a_view_opening_at_the_named_entry_offers_its_sentences_alone(
    docs_web: Web,
) -> None:
    """The next entry in view describes another callable, and its sentence does not say
    which: a Quote takes the named entry's description, where it has one."""
    question = "What does shelf.Shelf.stack() do?"
    session = await _opened(docs_web, question, "Search shelf stack boxes")
    await session.step("Find in page: shelf.Shelf.stack(")
    assert "Return how many boxes the shelf holds." in "\n".join(session.window_text())
    grammar = browsing_regex(session)
    assert re.fullmatch(grammar, "Quote: Put a box on the top of it.")
    assert re.fullmatch(grammar, "Quote: A full shelf refuses.")
    assert not re.fullmatch(grammar, "Quote: coroutine shelf.Shelf.stack()")
    assert not re.fullmatch(grammar, "Quote: Return how many boxes the shelf holds.")
    # the quote ranker is handed the same choices
    assert quotes_to_offer(session, named_entry=True) == [
        "Put a box on the top of it.",
        "A full shelf refuses.",
    ]
    # a question naming no callable, or an entry with no sentence to quote: the view's
    unnamed = await _opened(docs_web, "What can a shelf hold?", "Search shelf stack boxes")
    assert re.fullmatch(browsing_regex(unnamed), "Quote: Return how many boxes the shelf holds.")
    bare = await _opened(docs_web, "What does shelf.Shelf.go() do?", "Search shelf stack boxes")
    await bare.step("Find in page: shelf.Shelf.go(")
    assert quotes_to_offer(bare, named_entry=True) == quotes_to_offer(bare)
    assert "Return how many boxes the shelf holds." in quotes_to_offer(bare)


async def test_a_docs_answer_is_served_as_the_policy_wrote_it(
    docs_web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    """The Find lands on the entry, the policy quotes its description and writes it after
    the name; the answer is that one draft, guided or not."""
    commands = [
        "Search asyncio Condition acquire",
        "Clicked on link 0",
        "Find in page: asyncio.Condition.acquire(",
        "Quote: Acquire the underlying lock.",
        "End: Answer",
    ]
    draft = "asyncio.Condition.acquire() — acquire the underlying lock [1]."
    for config in (EpisodeConfig(), EpisodeConfig(guided=False)):
        script.commands, script.answers = list(commands), [draft]
        events: list[TraceEvent] = []
        result = await run_episode(
            0, docs_web.session(), policy, QUESTION, config, collect_into(events)
        )
        assert result.answer == draft and result.shaped_by == []
        assert [q.extract for q in result.quotes] == ["Acquire the underlying lock."]
        streamed = "".join(e.text for e in events if isinstance(e, AnswerDeltaEvent))
        assert streamed == draft


def test_an_annotated_signature_opens_the_entry_of_its_callable_alone() -> None:
    line = "classmethod datetime.datetime.today()"
    assert opens_signature(line, "datetime.datetime.today")
    assert opens_signature("    coroutine asyncio.Condition.acquire()", "asyncio.Condition.acquire")
    assert not opens_signature(line, "datetime.today")
    assert not opens_signature(">>> datetime.datetime.today()", "datetime.datetime.today")


def test_the_callables_a_question_names() -> None:
    assert named_callables(QUESTION) == ["asyncio.Condition.acquire"]
    assert named_callables("How is asyncio._enter_task() used?") == ["asyncio._enter_task"]
    assert named_callables("What does the pdb.runeval function do?") == ["pdb.runeval"]
    assert named_callables("json.dumps() or json.dumps?") == ["json.dumps"]
    assert named_callables("Why is the sky blue?") == []


def test_a_wrapped_signature_is_the_one_term_of_its_description() -> None:
    """A long signature wraps onto a second line as deep as its first; its description is
    still its own, and a view opening at it offers that description, not the signature."""
    lines = [
        "shelf.pack(box, *, tight=False, label=None, colour=None, side=None,",
        "width=None, **kw)",
        "    Pack the box onto the shelf as it stands. The label faces out.",
        "",
        "    Parameters:",
        "          * box (Box) – The box to put on the shelf.",
        "",
        "shelf.unpack(box)",
        "    Take the box off the shelf again.",
    ]
    signature = (
        "shelf.pack(box, *, tight=False, label=None, colour=None, side=None, width=None, **kw)"
    )
    assert definition_terms(lines) == {
        "Pack the box onto the shelf as it stands.": signature,
        "The label faces out.": signature,
        "box (Box) – The box to put on the shelf.": signature,
        "Take the box off the shelf again.": "shelf.unpack(box)",
    }
    assert _named_entry("What does shelf.pack() do?", lines) == [
        "Pack the box onto the shelf as it stands.",
        "The label faces out.",
        "box (Box) – The box to put on the shelf.",
    ]
    assert _named_entry("What does shelf.unpack() do?", lines) == []  # not at the top


def test_a_list_item_or_heading_loses_its_mark_and_nothing_more() -> None:
    """An option's or a number's own dashes, and a code line's "#", stay in its quote."""
    lines = [
        "### Packing options",
        "",
        "  * -0.5 and +0.5 round to the same shelf height.",
        "  - --tight packs the boxes without gaps between them.",
        "#include <shelf.h> declares every packing function.",
        "> A quoted note about the shelf stays a note.",
    ]
    assert quotable_sentences(lines) == [
        "-0.5 and +0.5 round to the same shelf height.",
        "--tight packs the boxes without gaps between them.",
        "#include <shelf.h> declares every packing function.",
        "A quoted note about the shelf stays a note.",
    ]
