"""Quote choice by a learned ranker: of the sentences in view, the Quote grammar offers a
factoid only the K that a ranker trained on (question, sentence, answers it or not) scores
highest (reward.quote_scorer, `--quote-ranker`); without one, any sentence in view.

It replaced a lexical rule (question words weighted by their rarity on the page), which it
beat on dev (docs/agent.md, "Learned quote choice")."""

from collections.abc import Sequence
from typing import Protocol


class QuoteRanker(Protocol):
    @property
    def name(self) -> str: ...

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
