"""The scripted demonstrator: browses the offline web to the page that answers a question.

It uses only the commands of Table 1 and only what it sees: it searches with the
question's own words (agent.queries.question_query, the first Search guided decoding
serves), reformulates with the page's title when the page is not among the results, clicks
the result that leads to the page, finds or scrolls to the sentence that holds the answer
(a question about a documented entry, a Python function or a manual's option, setting or
term, repeats `Find in page:` of its name until the entry is in view), quotes it, ends,
and writes a short answer that states the fact and cites it (or the quote's sentence
itself, ScriptedConfig.answers). A share of
episodes take realistic detours (a wrong result then `Back`, a scroll away and back) so a
cloned policy learns to recover; a first search that misses is shown wherever the
question's words miss the page.

Long-form questions collect several quotes: the page's opening sentence, then a later one
reached with `Find in page:`, or a second page reached through a link in the first or a
new search; the answer has one sentence per quote, each citing its quote (WebGPT's
style). Unanswerable questions are browsed the same way, and the episode ends with a
decline (agent.declines) that cites nothing.

Quotes are chosen among agent.grammar.quote_choices, the spans guided decoding offers, and
answers must match agent.grammar.answer_regex: what is demonstrated can also be served.
"""

import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from webgpt.agent.answer_rules import CITATION
from webgpt.agent.declines import decline_answer
from webgpt.agent.grammar import Quoted, answer_regex, quote_choices
from webgpt.agent.queries import question_query
from webgpt.browser.session import BrowserSession
from webgpt.browser.text_fragments import split_text_fragment
from webgpt.evals.questions import Question, contains_gold, normalize
from webgpt.learning.demonstrations import Demonstration, Recorder

DETOURS = ("wrong_result", "scroll")
# How a demonstrated factoid's answer is written (ScriptedConfig.answers).
AnswerStyle = Literal["reference", "quoted"]


@dataclass(frozen=True)
class ScriptedConfig:
    detour_share: float = 0.3  # episodes with one detour
    max_actions: tuple[int, ...] = (10, 15, 20, 30, 50, 100)  # drawn per episode
    max_find_steps: int = 12  # repeats of one Find: an entry can follow many examples
    max_scroll_steps: int = 4
    # A factoid's answer: "reference", the question's short reference answer ("Ada
    # Lovelace was born in 1815 [1]."); "quoted", its quote's sentence in the quote's own
    # words, whole (quoted_answer): what a policy must write in one generation, since the
    # served answer phase rewrites no sentence of it.
    answers: AnswerStyle = "reference"


def demonstration_id(question: Question) -> str:
    key = f"{question.question}\n{question.url}"
    return "scripted-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def search_queries(question: Question, rng: random.Random) -> list[str]:
    """The question's own words, then the page's title where they miss the page. A person's
    question does not name its answer's page: a policy shown the title as a first query
    learned to guess one ("Search Sea" for "who directed the sea beneath the cliffs 1951";
    docs/questions.md, "The question's own search")."""
    content = question_query(question.question)
    if question.style == "unnamed subject":  # the title is the answer: search for the clues
        return [content]
    title = question.title or content
    if question.url and "docs.python.org" in question.url and "." in title:
        owner, name = title.rsplit(".", 1)
        title = rng.choice([f"{owner} {name}", title])
    return list(dict.fromkeys([content, title]))


def _target_link(session: BrowserSession, url: str) -> int | None:
    for link_id, link in sorted(session.page.links.items()):
        if split_text_fragment(link.url)[0].rstrip("/") == url.rstrip("/"):
            return link_id
    return None


def entry_needles(question: Question) -> list[str]:
    """What a Find looks for to bring the documented entry a question asks about into
    view, in turn: a Python function or method as code writes it before its arguments,
    qualified and then bare (a method shows as "fetchmany(size=…)"); a manual's option,
    setting or term as its definition writes it ("--amend", "abs(" for "abs()"). None for
    a question about no entry (a summary's answer is in view or a scroll away)."""
    title = question.title
    if not title or not question.url:
        return []
    if (question.style or "").startswith("manual "):
        return [title[:-1] if title.endswith("()") else title]  # "abs()": "abs("
    if "docs.python.org" in question.url:
        return list(dict.fromkeys([f"{title}(", f"{title.rsplit('.', 1)[-1]}("]))
    return []


def _answering_quote(session: BrowserSession, question: Question) -> str | None:
    """The span in view that answers: the evidence sentence itself, then, for a question
    about no documented entry, any span with the gold. An entry's gold can be a word that
    the sentences around it hold too (a default "on" or "true"), so only its own sentence
    answers for it."""
    choices = quote_choices(session)
    evidence = normalize(question.evidence or "")
    for choice in choices:
        if (
            evidence
            and normalize(choice) in evidence
            and contains_gold(choice, question.gold_answers)
        ):
            return choice
    if entry_needles(question):
        return None
    return next((c for c in choices if contains_gold(c, question.gold_answers)), None)


async def _find_entry(
    recorder: Recorder, session: BrowserSession, question: Question, max_steps: int
) -> str | None:
    """Finds the entry a question asks about until its answer is in view, with each of
    its entry_needles in turn. A needle is repeated once per line that holds it, since
    examples and mentions of a name often come before its entry."""
    for needle in entry_needles(question):
        for _ in range(min(_lines_holding(session, needle), max_steps)):
            if session.done:
                return None
            await recorder.step(f"Find in page: {needle}")
            quote = _answering_quote(session, question)
            if quote is not None:
                return quote
    return None


def _lines_holding(session: BrowserSession, needle: str) -> int:
    index = session.page.text_index
    lines: set[int] = set()
    match = index.find(needle)
    while match is not None:
        lines.add(index.line_of(match.start))
        match = index.find(needle, match.end)
    return len(lines)


async def demonstrate(
    question: Question,
    session: BrowserSession,
    rng: random.Random,
    config: ScriptedConfig = ScriptedConfig(),
) -> Demonstration | None:
    """One demonstration for the question, or None when the script cannot reach the answer
    (the page is not found by search, or the answering sentence is not quotable)."""
    if question.kind == "unanswerable":
        return await _demonstrate_decline(question, session, rng)
    if question.kind == "longform":
        return await _demonstrate_longform(question, session, rng)
    if not question.url or not question.answer:
        return None
    recorder = Recorder(session, question.question)
    detour = rng.choice(DETOURS) if rng.random() < config.detour_share else None
    link: int | None = None
    for query in search_queries(question, rng):
        await recorder.step(f"Search {query}")
        link = _target_link(session, question.url)
        if link is not None:
            break
    if link is None or session.done:
        return None
    if detour == "wrong_result":
        wrong = [i for i in sorted(session.page.links) if i != link]
        if wrong:
            await recorder.step(f"Clicked on link {rng.choice(wrong[:4])}")
            await recorder.step("Back")
        else:
            detour = None
    await recorder.step(f"Clicked on link {link}")
    if detour == "scroll":
        if len(session.page.lines) > session.config.window_lines:
            await recorder.step(f"Scrolled down {rng.choice([1, 2])}")
            await recorder.step(rng.choice(["Top", "Scrolled up 3"]))
        else:
            detour = None
    quote = _answering_quote(session, question)
    if quote is None:
        quote = await _find_entry(recorder, session, question, config.max_find_steps)
    scrolls = 0
    while quote is None and scrolls < config.max_scroll_steps and not session.done:
        if len(session.page.lines) <= session.config.window_lines:
            break
        await recorder.step("Scrolled down 1")
        scrolls += 1
        quote = _answering_quote(session, question)
    if quote is None or session.done:
        return None
    result = await recorder.step(f"Quote: {quote}")
    if result.event.type != "quote" or not session.quotes or session.done:
        return None
    if not contains_gold(question.answer, question.gold_answers):
        return None
    answer = question.answer
    if config.answers == "quoted":
        answer = quoted_answer(quote, question) or answer
    return await _end_and_answer(recorder, question, answer, detour or "")


def quoted_answer(quote: str, question: Question) -> str | None:
    """A factoid's answer in its quote's words: the quote's sentence, whole, citing it
    (answer_sentence), where it states a gold answer and the reference answer does not
    already say it (a docs entry's "name() — sentence [1]." copies its entry's sentence
    after the name); else None."""
    sentence = answer_sentence(quote, 1)
    if sentence is None or not contains_gold(sentence, question.gold_answers):
        return None
    if normalize(sentence.removesuffix(" [1].")) in normalize(question.answer or ""):
        return None
    return sentence


# A number as a text writes it: digits, and digits after a "," or "." ("1,460,148", "3.7").
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def states_unshown_number(answer: str, question: str, quotes: Sequence[Quoted]) -> bool:
    """Whether the answer states a number that neither the question nor its quotes (titles
    and text) show: such an answer teaches a policy to invent one."""
    texts = [question, *(f"{q.title}\n{q.extract}" for q in quotes)]
    shown = {n for text in texts for n in _NUMBER.findall(text)}
    return any(n not in shown for n in _NUMBER.findall(CITATION.sub("", answer)))


async def _end_and_answer(
    recorder: Recorder, question: Question, answer: str | None, detour: str = ""
) -> Demonstration | None:
    """`End: Answer`, then the record with the answer, if the answer grammar admits it (what
    is demonstrated can also be served) and it states no number its question and quotes do
    not show (the served grammar no longer refuses one: a policy trained on answers in its
    quotes' words copies its numbers, and its data keeps it so)."""
    await recorder.step("End: Answer")
    quotes = recorder.session.quotes
    if (
        answer is None
        or re.fullmatch(answer_regex(quotes), answer) is None
        or states_unshown_number(answer, question.question, quotes)
    ):
        return None
    return recorder.finish(
        id=demonstration_id(question),
        source="scripted",
        answer=answer,
        gold_answers=question.gold_answers,
        gold_url=question.url,
        split=question.split,
        meta={"style": question.style or "", "kind": question.kind, "detour": detour},
    )


# -- Long-form answers and declines ---------------------------------------------------


def answer_sentence(quote: str, number: int) -> str | None:
    """One answer sentence from a quote, citing it: "<the quote's sentence, whole> [n].";
    None where it holds a square bracket or ■, which an answer may not."""
    text = " ".join(quote.split()).rstrip(" .;:,")
    if re.search(r"[\[\]■]", text):
        return None
    return f"{text[:1].upper()}{text[1:]} [{number}]."


def compose_answer(quotes: list[str]) -> str | None:
    """A long-form answer from the collected quotes: one sentence per quote, in order, each
    citing the quote it comes from."""
    sentences = []
    for number, quote in enumerate(quotes, start=1):
        sentence = answer_sentence(quote, number)
        if sentence is None:
            return None
        sentences.append(sentence)
    return " ".join(sentences)


def _quote_of(session: BrowserSession, sentence: str) -> str | None:
    """The quotable span in view that is (a prefix of) the sentence."""
    wanted = normalize(sentence)
    spans = [c for c in quote_choices(session) if normalize(c) in wanted]
    return max(spans, key=len) if spans else None  # the sentence, not a description in it


async def _open(recorder: Recorder, session: BrowserSession, query: str, url: str) -> bool:
    """Opens the page at url: by its link on the page in view, else through a search."""
    link = _target_link(session, url)
    if link is None:
        await recorder.step(f"Search {query}")
        link = _target_link(session, url)
    if link is None or session.done:
        return False
    await recorder.step(f"Clicked on link {link}")
    return not session.done


async def _reach(recorder: Recorder, session: BrowserSession, sentence: str) -> str | None:
    """Brings the sentence into view (already there, or by finding its opening words) and
    returns its quotable span."""
    quote = _quote_of(session, sentence)
    if quote is None:
        words = sentence.split()[:4]
        await recorder.step(f"Find in page: {' '.join(words)[:60]}")
        quote = _quote_of(session, sentence)
    return quote


async def _demonstrate_longform(
    question: Question, session: BrowserSession, rng: random.Random
) -> Demonstration | None:
    """Quotes each supporting sentence (a later one found in the page, one on a second page
    opened by its link or a search), then answers one sentence per quote."""
    if not question.url or len(question.supporting) < 2:
        return None
    recorder = Recorder(session, question.question)
    title = (question.title or "").split(" (")[0]
    urls = question.supporting_urls or [None] * len(question.supporting)
    opened = await _open(recorder, session, question_query(question.question), question.url)
    if not opened and not await _open(recorder, session, title, question.url):
        return None
    for sentence, url in zip(question.supporting, urls, strict=True):
        if url is not None and session.page.url.rstrip("/") != url.rstrip("/"):
            other = url.rsplit("/", 1)[-1].replace("_", " ")
            if not await _open(recorder, session, other, url):
                return None
        quote = await _reach(recorder, session, sentence)
        if quote is None or session.done:
            return None
        result = await recorder.step(f"Quote: {quote}")
        if result.event.type != "quote" or session.done:
            return None
    return await _end_and_answer(
        recorder, question, compose_answer([q.extract for q in session.quotes])
    )


async def _demonstrate_decline(
    question: Question, session: BrowserSession, rng: random.Random
) -> Demonstration | None:
    """Searches as for any question, opens the most promising result, quotes the closest
    thing it says, and declines: the quote is what was found, and it does not answer."""
    recorder = Recorder(session, question.question)
    query = question_query(question.question)
    await recorder.step(f"Search {query}")
    links = sorted(session.page.links)
    if not links or session.done:
        return None
    await recorder.step(
        f"Clicked on link {links[0] if rng.random() < 0.7 else rng.choice(links[:3])}"
    )
    choices = quote_choices(session)
    if not choices or session.done:
        return None
    result = await recorder.step(f"Quote: {choices[0]}")
    if result.event.type != "quote" or session.done:
        return None
    answer = question.answer or decline_answer(question.question)
    return await _end_and_answer(recorder, question, answer)
