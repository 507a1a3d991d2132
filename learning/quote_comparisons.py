"""Comparisons that teach a quote ranker which sentence of a page answers a question
(`webgpt comparisons quotes`, then `webgpt train rm`; served by reward.quote_scorer): with
one, the Quote grammar offers a factoid the sentences in view it scores highest
(agent.quote_ranking), as the service does by default.

Each row pits the sentence that answers the question (its evidence) against another
sentence near it on the same page (within a view's worth of sentences, where a Quote would
have offered both) that holds none of its gold answers. Sentences are those of the page as
the browser serves it, split and cut as the grammar offers them
(agent.grammar.quotable_sentences). The questions are factoids with evidence: those of
question files (people-written, e.g. data/questions/train-later-sentences.jsonl) and
question_generator's over the offline web's pages, of the train split alone, and only
train pages are read (evals.questions.split_of): no dev or test page is trained on. A
row's label is a rule's, so rows say `"source": "synthetic"` (learning.comparisons).
`other_page_rows` pits the answering sentence against the best-looking sentence of another
train page of the question's own search, each under its page's title: what a ranker that
orders a search's results by their best sentence must know (agent.result_order).

`evidence_rows` teaches the same ranker when to decline: the decline
(agent.declines.decline_answer) is scored as one more sentence of the page, and an answer
is declined where no quote it collected outscores the decline beside it
(agent.quote_ranking.holds_evidence). The sentence that answers a factoid, and a long-form
question's supporting sentences, beat the decline; the decline beats a sentence near a
factoid's evidence holding none of its gold answers, a sentence of another page its words
find, and any sentence of the page an unanswerable question's words find; there the
sentence is the one a served ranker would offer (`pick`), as a policy would quote it.
`episode_evidence_rows` makes such rows from the policy's own episodes on training
questions (`webgpt eval --json-out`): what it quoted, against the decline."""

import random
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple
from urllib.parse import urldefrag

from webgpt.agent.declines import decline_answer
from webgpt.agent.grammar import MAX_QUOTE_CHOICES, quotable, quotable_sentences
from webgpt.agent.queries import question_query
from webgpt.agent.quote_ranking import page_candidates
from webgpt.browser.offline import OfflineWeb
from webgpt.browser.render import RenderOptions, render_html
from webgpt.evals.questions import Question, contains_gold, split_of
from webgpt.learning.comparisons import SOURCE

# The separator of a number's digit groups ("16,383").
_DIGIT_GROUP = re.compile(r"(?<=\d)[,\u00a0\u202f](?=\d{3}\b)")
# Search results read for a page other than a question's own.
OTHER_PAGE_RESULTS = 5
# Which sentence of a page's first view a row quotes: (question, title, sentences) -> one
# of them; the served ranker's pick (reward.quote_scorer.QuoteScorer.best) makes rows of
# the quotes a policy is offered.
SentencePick = Callable[[str, str, Sequence[str]], str]
# The sentences a pick chooses from, at most: scoring each costs a ranker's forward pass.
PICK_FROM = 8


def first_sentence(question: str, title: str, sentences: Sequence[str]) -> str:
    return sentences[0]


class ServedSentences:
    """(title, quotable sentences) of the offline web's train pages as the browser renders
    them; none for a page of another split or one that is not HTML."""

    def __init__(self, store: OfflineWeb) -> None:
        self._store = store
        self._html = {page.url for page in store.pages() if page.content_type == "text/html"}
        self._cache: dict[str, tuple[str, list[str]]] = {}

    def of(self, url: str) -> tuple[str, list[str]]:
        if url not in self._cache:
            readable = url in self._html and split_of(url) == "train"
            body = self._store.body(url) if readable else None
            if body is None:
                self._cache[url] = ("", [])
            else:
                page = render_html(body, url, None, RenderOptions())
                lines = page.text_index.text.split("\n")
                self._cache[url] = (page.title, quotable_sentences(lines))
        return self._cache[url]


def quote_rows(
    questions: Iterable[Question],
    pages: ServedSentences,
    *,
    negatives: int = 3,
    page_negatives: int = 0,
    seed: int = 0,
) -> Iterator[dict[str, Any]]:
    """Up to `negatives` rows a factoid, each against a sentence near its evidence drawn at
    random, and up to `page_negatives` more against sentences anywhere on its page among
    those a Quote at the page's opening view has the ranker read (the sentences holding
    the question's words most, quote_ranking.page_candidates): on a long page those are
    the ones the answer must beat, and most lie far from it. Which side is `a` is drawn
    too, so neither position means anything. A question whose evidence is not a sentence
    of its page as served makes no row."""
    rng = random.Random(seed)
    for question, url, title, sentences, answering in _answered(questions, pages):
        at = sentences.index(answering)
        near = sentences[max(0, at - MAX_QUOTE_CHOICES) : at + MAX_QUOTE_CHOICES + 1]
        others = [s for s in near if s != answering and not contains_gold(s, question.gold_answers)]
        for other in rng.sample(others, min(negatives, len(others))):
            yield _row(question.question, url, title, answering, other, rng)
        if page_negatives:
            far = [
                s
                for s in page_candidates(question.question, sentences)
                if s not in near and not contains_gold(s, question.gold_answers)
            ]
            for other in rng.sample(far, min(page_negatives, len(far))):
                yield _row(question.question, url, title, answering, other, rng)


def other_page_rows(
    questions: Iterable[Question],
    pages: ServedSentences,
    store: OfflineWeb,
    *,
    pick: SentencePick = first_sentence,
    other_pages: int = 2,
    seed: int = 0,
) -> Iterator[dict[str, Any]]:
    """Up to `other_pages` rows a factoid, each against the best sentence of another page
    among the first results of the question's own search (agent.queries.question_query,
    the episode's first Search): of the sentences there holding the question's words most
    and none of its gold answers, the one `pick` chooses (the served ranker's pick: the
    sentence it would wrongly prefer). A ranker trained only within a page learns which of
    its sentences answers; these rows teach it that another subject's answer-shaped
    sentence does not, which is what ordering a search's results by their best sentence
    asks of it. Each side carries its own page's title."""
    rng = random.Random(seed)
    for question, url, title, _, answering in _answered(questions, pages):
        made = 0
        for result in store.search_sync(question_query(question.question), OTHER_PAGE_RESULTS):
            other_url = urldefrag(result.url)[0]
            if made == other_pages or other_url == url:
                continue
            other_title, other_sentences = pages.of(other_url)  # none of a dev or test page
            lacking = [
                s
                for s in page_candidates(question.question, other_sentences, PICK_FROM)
                if not _may_hold(s, question.gold_answers)
            ]
            if lacking:
                other = pick(question.question, other_title, lacking)
                row = _row(question.question, url, title, answering, other, rng)
                winner, loser = ("a", "b") if row["preference"] == "a" else ("b", "a")
                row[f"title_{winner}"], row[f"title_{loser}"] = title, other_title
                made += 1
                yield row


def evidence_rows(
    questions: Iterable[Question],
    pages: ServedSentences,
    store: OfflineWeb,
    *,
    pick: SentencePick = first_sentence,
    seed: int = 0,
) -> Iterator[dict[str, Any]]:
    """Rows of a sentence against the decline on its page (see the module's docstring):
    a factoid's evidence beats it and it beats a sentence near the evidence and one of
    another page; a long-form question's supporting sentences beat it; it beats what an
    unanswerable question's search finds."""
    rng = random.Random(seed)
    for question in questions:
        decline = decline_answer(question.question)
        if question.kind == "unanswerable":
            if (found := _found_page(question, pages, store, pick)) is not None:
                url, title, sentence = found
                yield _row(question.question, url, title, decline, sentence, rng)
        elif question.kind == "longform" and question.url:
            urls = question.supporting_urls or [None] * len(question.supporting)
            for sentence, supporting_url in zip(question.supporting, urls, strict=False):
                page = supporting_url or question.url
                title, sentences = pages.of(page)
                if (supporting := quotable(sentence)) is not None and sentences:
                    yield _row(question.question, page, title, supporting, decline, rng)
        elif question.kind == "factoid" and question.gold_answers and question.url:
            title, sentences = pages.of(question.url)
            answering = _answering(question, sentences)
            if answering is None:
                continue
            yield _row(question.question, question.url, title, answering, decline, rng)
            at = sentences.index(answering)
            near = sentences[max(0, at - MAX_QUOTE_CHOICES) : at + MAX_QUOTE_CHOICES + 1]
            lacking = [s for s in near if not contains_gold(s, question.gold_answers)]
            if lacking:
                other = pick(
                    question.question, title, rng.sample(lacking, min(PICK_FROM, len(lacking)))
                )
                yield _row(question.question, question.url, title, decline, other, rng)
            if (found := _found_page(question, pages, store, pick)) is not None:
                url, title, sentence = found
                yield _row(question.question, url, title, decline, sentence, rng)


def episode_evidence_rows(
    outcomes: Iterable[dict[str, Any]], *, seed: int = 0
) -> Iterator[dict[str, Any]]:
    """Rows from recorded episodes on training questions (`webgpt eval --json-out`
    outcomes): each quote the policy collected against the decline on its page. A quote
    holding a factoid's gold answer beats the decline; the decline beats a factoid's quote
    holding none where the draft was wrong, and any quote of an unanswerable question.
    Long-form episodes (no gold phrase to check) and quotes of pages outside the train
    split make no row: no dev or test page is trained on."""
    rng = random.Random(seed)
    for outcome in outcomes:
        question = outcome["question"]
        decline = decline_answer(question)
        for quote in outcome.get("quotes") or []:
            if split_of(quote["url"]) != "train":
                continue
            holds = contains_gold(quote["extract"], outcome.get("gold_answers") or [])
            if outcome["kind"] == "unanswerable" or (
                outcome["kind"] == "factoid" and not outcome["correct"] and not holds
            ):
                winner, loser = decline, quote["extract"]
            elif outcome["kind"] == "factoid" and holds:
                winner, loser = quote["extract"], decline
            else:
                continue
            yield _row(question, quote["url"], quote["title"], winner, loser, rng)


def _found_page(
    question: Question, pages: ServedSentences, store: OfflineWeb, pick: SentencePick
) -> tuple[str, str, str] | None:
    """(url, title, sentence) of the first train page other than the question's own that
    its words find: of its first sentences holding no gold answer, the one picked."""
    for result in store.search_sync(question.question, OTHER_PAGE_RESULTS):
        if result.url == question.url:
            continue
        title, sentences = pages.of(result.url)
        view = [s for s in sentences[:PICK_FROM] if not contains_gold(s, question.gold_answers)]
        if view:
            return result.url, title, pick(question.question, title, view)
    return None


def _may_hold(sentence: str, gold_answers: Sequence[str]) -> bool:
    """Whether the sentence holds a gold answer, a number's digit groups read either way
    ("16,383" holds "16383"): another page stating the same fact is no loser."""
    joined = [_DIGIT_GROUP.sub("", g) for g in gold_answers]
    return contains_gold(sentence, gold_answers) or contains_gold(
        _DIGIT_GROUP.sub("", sentence), joined
    )


def _row(
    question: str, url: str, title: str, winner: str, loser: str, rng: random.Random
) -> dict[str, Any]:
    """A quote comparison; which side is `a` is drawn, so neither position means anything."""
    first = rng.random() < 0.5
    return {
        "question": question,
        "url": url,
        "title": title,
        "quote_a": winner if first else loser,
        "quote_b": loser if first else winner,
        "preference": "a" if first else "b",
        "source": SOURCE,
    }


class _Answered(NamedTuple):
    question: Question
    url: str  # its page's
    title: str
    sentences: list[str]  # its page's, as served
    answering: str  # the sentence of them that answers it


def _answered(questions: Iterable[Question], pages: ServedSentences) -> Iterator[_Answered]:
    """Each factoid whose evidence is a sentence of its page as served."""
    for question in questions:
        if question.kind != "factoid" or not question.gold_answers or not question.url:
            continue
        title, sentences = pages.of(question.url)
        answering = _answering(question, sentences)
        if answering is not None:
            yield _Answered(question, question.url, title, sentences, answering)


def _answering(question: Question, sentences: list[str]) -> str | None:
    """The sentence that is the question's evidence (a longer one cut as the grammar cuts
    it), holding a gold answer."""
    evidence = quotable(question.evidence or "")
    if evidence is None:
        return None
    for sentence in sentences:
        same = sentence == evidence or sentence in evidence or evidence in sentence
        if same and contains_gold(sentence, question.gold_answers):
            return sentence
    return None
