"""Comparisons that teach the reward model when the quotes answer the question (`webgpt
comparisons declines`): the decline judgment of agent.episode scores the drafted answer
and the decline from the same quotes and serves the higher.

Each row pits an answer against the decline (agent.declines.decline_answer), both written
from one set of quotes:
- the answer wins where the quotes hold it: a factoid's quote is the sentence that answers
  it (the generated question's evidence), a long-form question's its supporting sentences,
  and the answer is the question's reference answer;
- the decline wins where they do not: the quote is a sentence of the same page that holds
  no gold answer (a detail the page lacks), or a sentence of another page (the wrong page),
  or, for an unanswerable question, a sentence of the page its words find; the answer copies
  the quote and cites it, as a small policy's draft does. Which sentence of those a page
  offers is the one the served quote ranker would pick (`pick`; by default the first).
Questions are question_generator's over the offline web's pages of one split (train; dev
for held-out rows), and every page a row quotes is of that split: no dev or test page is
trained on. The labels are a rule's,
so rows say `"source": "synthetic"` (learning.comparisons).

`episode_rows` makes the same rows from the policy's own episodes (`webgpt eval --json-out`
on training questions): its drafted answer against the decline from the quotes it
collected, so the judgment also learns the drafts and the phrasings it meets when serving.
"""

import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from webgpt.agent.declines import decline_answer
from webgpt.browser.offline import OfflineWeb
from webgpt.browser.page import domain_of
from webgpt.evals.questions import Question, Split, contains_gold, split_of
from webgpt.learning.comparisons import SOURCE
from webgpt.learning.question_generator import wikipedia_page
from webgpt.learning.scripted import answer_sentence, compose_answer

# Search results read for a page other than the question's own that bears on it.
OTHER_PAGE_RESULTS = 5
# Which of a page's sentences a row quotes: (question, page title, sentences) -> one of
# them; the served quote ranker's pick (reward.quote_scorer.QuoteScorer.best) makes rows of
# the quotes a policy is offered.
SentencePick = Callable[[str, str, Sequence[str]], str]


def first_sentence(question: str, title: str, sentences: Sequence[str]) -> str:
    return sentences[0]


@dataclass(frozen=True)
class Quote:
    title: str
    url: str
    extract: str

    def side(self) -> dict[str, str]:
        domain = domain_of(self.url)
        return {"title": self.title, "url": self.url, "domain": domain, "extract": self.extract}


class PageSentences:
    """The sentences of a page of one split that a row may quote: a Wikipedia summary's
    sentences; for other pages (the Python docs), the evidence of the questions asked of it."""

    def __init__(self, store: OfflineWeb, questions: Iterable[Question], split: Split) -> None:
        self._store = store
        self._split = split
        self._titles = {page.url: page.title for page in store.pages()}
        self._evidence: dict[str, list[str]] = defaultdict(list)
        for question in questions:
            if question.url and question.evidence:
                self._evidence[question.url].append(question.evidence)
        self._cache: dict[str, tuple[str, list[str]]] = {}

    def of(self, url: str) -> tuple[str, list[str]]:
        """(title, sentences) of a page; no sentences where it is of another split."""
        if url in self._cache:
            return self._cache[url]
        sentences: list[str] = []
        if split_of(url) != self._split:
            pass
        elif url.startswith("https://en.wikipedia.org/"):
            if (body := self._store.body(url)) is not None:
                _, sentences, _ = wikipedia_page(body)
        else:
            sentences = list(dict.fromkeys(self._evidence.get(url, [])))
        self._cache[url] = (self._titles.get(url, ""), sentences)
        return self._cache[url]


def decline_rows(
    questions: Iterable[Question],
    store: OfflineWeb,
    *,
    split: Split = "train",
    seed: int = 0,
    pick: SentencePick = first_sentence,
) -> Iterator[dict[str, Any]]:
    """The rows of each question of the split in turn, quoting pages of that split alone
    (see the module's docstring); which side is `a` is drawn at random, so neither position
    means anything."""
    questions = [q for q in questions if q.split == split]
    pages = PageSentences(store, questions, split)
    rng = random.Random(seed)
    for question in questions:
        for winner, why, quotes, answer in _pairs(question, pages, store, pick):
            yield _row(question.question, split, quotes, answer, winner, why, rng)


def episode_rows(
    outcomes: Iterable[dict[str, Any]], *, split: Split = "train", seed: int = 0
) -> Iterator[dict[str, Any]]:
    """Rows from recorded episodes (`webgpt eval --json-out` outcomes): the policy's drafted
    answer against the decline from the quotes it collected. The answer wins where it is
    right and its quotes hold the gold answer; the decline wins over a factoid answer that
    holds no gold answer and over any answer to an unanswerable question. Declines,
    degenerate answers and long-form answers (no gold phrase to check) make no row, nor does
    an episode that quoted a page of another split: no dev or test page is trained on."""
    rng = random.Random(seed)
    for outcome in outcomes:
        quotes = [Quote(q["title"], q["url"], q["extract"]) for q in outcome.get("quotes") or []]
        if (
            not quotes
            or not outcome["answer"]
            or outcome["declined"]
            or outcome.get("degenerate")
            or any(split_of(quote.url) != split for quote in quotes)
        ):
            continue
        if outcome["kind"] == "unanswerable":
            winner, why = "decline", "unanswerable, drafted"
        elif outcome["kind"] != "factoid":
            continue
        elif not outcome["correct"]:
            winner, why = "decline", "wrong draft"
        elif any(contains_gold(quote.extract, outcome["gold_answers"]) for quote in quotes):
            winner, why = "answer", "holds"
        else:
            continue  # right, but not from its quotes: not the support the judgment weighs
        yield _row(outcome["question"], split, quotes, outcome["answer"], winner, why, rng)


def _pairs(
    question: Question, pages: PageSentences, store: OfflineWeb, pick: SentencePick
) -> Iterator[tuple[str, str, list[Quote], str]]:
    """(winner, why, quotes, answer) for one question: the answer's side against the
    decline written from the same quotes."""
    if question.kind == "unanswerable":
        if (found := _other_page(question, pages, store, pick)) is not None:
            yield "decline", "unanswerable", *found
        return
    if question.url is None:
        return
    title, sentences = pages.of(question.url)
    if question.kind == "factoid" and question.evidence and question.answer:
        quote = Quote(title, question.url, question.evidence)
        # In the copying form of the answers the decline beats, where it states the gold
        # answer: the length or form of an answer says nothing of whether its quote holds it.
        copied = _copied(quote)
        holding = copied if copied and contains_gold(copied, question.gold_answers) else None
        yield "answer", "holds", [quote], holding or question.answer
    elif question.kind == "longform" and question.supporting:
        urls = question.supporting_urls or [None] * len(question.supporting)
        quotes = [
            Quote(pages.of(url)[0] if url else title, url or question.url, sentence)
            for sentence, url in zip(question.supporting, urls, strict=False)
        ]
        if (answer := compose_answer([q.extract for q in quotes])) is not None:
            yield "answer", "holds", quotes, answer
        return  # what a long-form answer lacks is not one gold phrase: no decline row
    else:
        return
    lacking = [
        s
        for s in sentences
        if s != question.evidence and not contains_gold(s, question.gold_answers)
    ]
    if lacking:
        quote = Quote(title, question.url, pick(question.question, title, lacking))
        if (answer := _copied(quote)) is not None:
            yield "decline", "same page, no answer", [quote], answer
    if (found := _other_page(question, pages, store, pick)) is not None:
        yield "decline", "another page", *found


def _other_page(
    question: Question, pages: PageSentences, store: OfflineWeb, pick: SentencePick
) -> tuple[list[Quote], str] | None:
    """The quote and copied answer from the first page of the split other than the
    question's own that its words find: of its sentences that hold no gold answer, the one
    picked."""
    for result in store.search_sync(question.question, OTHER_PAGE_RESULTS):
        if result.url == question.url:
            continue
        title, sentences = pages.of(result.url)
        sentences = [s for s in sentences if not contains_gold(s, question.gold_answers)]
        if sentences:
            quote = Quote(title, result.url, pick(question.question, title, sentences))
            answer = _copied(quote)
            return None if answer is None else ([quote], answer)
    return None


def _copied(quote: Quote) -> str | None:
    """An answer that copies the quote and cites it, as a small policy's draft does."""
    return answer_sentence(quote.extract, 1)


def _row(
    question: str,
    split: Split,
    quotes: list[Quote],
    answer: str,
    winner: str,
    why: str,
    rng: random.Random,
) -> dict[str, Any]:
    sides = [quote.side() for quote in quotes]
    answered = {"quotes": sides, "answer": answer}
    declined = {"quotes": sides, "answer": decline_answer(question)}
    answer_is_a = rng.random() < 0.5
    a, b = (answered, declined) if answer_is_a else (declined, answered)
    preference = "a" if (winner == "answer") == answer_is_a else "b"
    return {
        "question": question,
        "a": a,
        "b": b,
        "preference": preference,
        "source": SOURCE,
        "why": why,
        "split": split,
    }


def balanced(rows: list[dict[str, Any]], seed: int = 0) -> list[dict[str, Any]]:
    """As many rows the answer wins as the decline wins (the larger kind sampled down), so
    the judgment learns no prior for either."""
    rng = random.Random(seed)
    answer_wins = [r for r in rows if r["why"] == "holds"]
    decline_wins = [r for r in rows if r["why"] != "holds"]
    keep = min(len(answer_wins), len(decline_wins))
    picked = rng.sample(answer_wins, keep) + rng.sample(decline_wins, keep)
    rng.shuffle(picked)
    return picked
