"""Quote choice by a learned ranker: of the sentences in view, the Quote grammar offers a
factoid only the K that a ranker trained on (question, sentence, answers it or not) scores
highest (reward.quote_scorer, `--quote-ranker`); without one, any sentence in view.

It replaced a lexical rule (question words weighted by their rarity on the page), which it
beat on dev (docs/agent.md, "Learned quote choice"). A ranker trained with decline rows
can also decide declines by evidence: the decline, scored as one more sentence of a quoted
page, against the quotes collected (`evidence_lead`; docs/agent.md, "Declines by
evidence"): a ranker whose checkpoint records the margin chosen for it on dev decides them
by default."""

from collections.abc import Sequence
from typing import Protocol

from webgpt.agent.declines import decline_answer
from webgpt.browser.events import CollectedQuote


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
