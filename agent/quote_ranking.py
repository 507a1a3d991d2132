"""Quote choice by a learned ranker: of the sentences in view, the Quote grammar offers a
factoid only the K that a ranker trained on (question, sentence, answers it or not) scores
highest (reward.quote_scorer, `--quote-ranker`); without one, any sentence in view. Where
the policy quotes from the view a page opened at, the ranker reads the rest of the page
too, and the Quote takes the page's best (page_quotes; agent.episode.page_quote).

It replaced a lexical rule (question words weighted by their rarity on the page), which it
beat on dev (docs/agent.md, "Learned quote choice"). A ranker trained with decline rows
can also decide declines by evidence: the decline, scored as one more sentence of a quoted
page, against the quotes collected (`evidence_lead`; docs/agent.md, "Declines by
evidence"): a ranker whose checkpoint records the margin chosen for it on dev decides them
by default."""

import math
import re
from collections.abc import Sequence
from typing import Protocol

from webgpt.agent.declines import decline_answer
from webgpt.agent.queries import question_query
from webgpt.browser.events import CollectedQuote

# How many of a long page's sentences beyond those in view the ranker reads for a Quote:
# on 2 cores it scores about 25 sentences a second (benchmarks/quote_ranker_bench.py: a
# view of 12 in 0.5 s), and manual pages hold up to a thousand.
PAGE_CANDIDATES = 24
_WORD = re.compile(r"\w+")
_STEM_LETTERS = 5  # "statements" and "statement" are one word here


class QuoteRanker(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def evidence_margin(self) -> float | None:
        """How far the best quote must score above the decline for an answer, chosen on dev
        for this ranker (its checkpoint's `evidence_margin`); None: no margin recorded (a
        ranker trained without decline rows has none), so it decides no declines."""
        ...

    async def rank(self, question: str, title: str, sentences: Sequence[str]) -> list[float]:
        """A score for each sentence of the page titled title as the quote that answers
        question: higher is better."""
        ...

    async def aclose(self) -> None: ...


async def ranked_quotes(
    ranker: QuoteRanker, question: str, title: str, quotes: Sequence[str], limit: int
) -> list[str]:
    """The limit quotes the ranker scores highest, in their order on the page; of equal
    scores, the earlier."""
    if len(quotes) <= limit:
        return list(quotes)
    scores = await ranker.rank(question, title, quotes)
    best = sorted(range(len(quotes)), key=lambda i: (-scores[i], i))[:limit]
    return [quotes[i] for i in sorted(best)]


async def page_quotes(
    ranker: QuoteRanker,
    question: str,
    title: str,
    in_view: Sequence[str],
    on_page: Sequence[str],
    limit: int,
) -> list[str]:
    """The limit sentences of the page the ranker scores highest as the quote answering the
    question, of those in view and the PAGE_CANDIDATES others of the page (on_page) that
    hold the question's rarer words most (page_candidates): a Quote takes text anywhere
    on the page, as in WebGPT's browser, and on a long page the answer is seldom in view."""
    rest = [s for s in on_page if s not in in_view]
    candidates = [*in_view, *page_candidates(question, rest)]
    return await ranked_quotes(ranker, question, title, candidates, limit)


def page_candidates(
    question: str, sentences: Sequence[str], limit: int = PAGE_CANDIDATES
) -> list[str]:
    """The limit sentences that hold the question's words most, each word weighted by how
    few of the sentences hold it (a page's own rare words, as BM25 weighs them), in their
    order; of equal weight, the earlier. What the ranker then reads, so that a page of a
    thousand sentences costs it tens."""
    if len(sentences) <= limit:
        return list(sentences)
    asked = _stems(question_query(question))
    held = [_stems(s) & asked for s in sentences]
    holding = {w: sum(w in h for h in held) for w in set().union(*held)}
    weight = {w: math.log(1 + len(sentences) / n) for w, n in holding.items()}
    scores = [sum(weight[w] for w in h) for h in held]
    best = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))[:limit]
    return [sentences[i] for i in sorted(best)]


def _stems(text: str) -> set[str]:
    return {w[:_STEM_LETTERS] for w in _WORD.findall(text.lower())}


async def evidence_lead(
    ranker: QuoteRanker, question: str, quotes: Sequence[CollectedQuote]
) -> float:
    """How far the quote the ranker scores best as the answer leads the decline scored as a
    sentence of the same page: at or below 0, no quote answers the question better than
    saying the pages do not. A ranker trained with decline rows (`webgpt comparisons quotes
    --declines`) learned where a decline belongs; the declines of agent.episode follow it."""
    decline = decline_answer(question)
    leads = []
    for quote in quotes:
        quote_score, decline_score = await ranker.rank(
            question, quote.title, [quote.extract, decline]
        )
        leads.append(quote_score - decline_score)
    return max(leads)
