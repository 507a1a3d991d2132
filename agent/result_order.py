"""A search's first results shown best page first, by the quote ranker
(EpisodeConfig.result_order; docs/agent.md, "Learned result order").

The search engine orders results by how well a page matches the query's words; the quote
ranker reads a sentence for the question. Where the ranker narrows a factoid's Quote, the
first RESULT_PAGES results of each search are shown ordered by the score of each page's
best sentence among the RESULT_CANDIDATES that hold the question's words most
(agent.quote_ranking.page_candidates): the policy, which mostly opens the first result,
opens the page whose best sentence reads most like the answer. The rest keep the engine's
order. A ranker trained with other-page rows (`webgpt comparisons quotes --other-pages`)
has learned that another subject's answer-shaped sentence does not answer; one trained
within a page alone has not (docs/eval/promotion-rules-result-order.md).
"""

import math
import time
from collections.abc import Awaitable, Callable

from webgpt.agent.grammar import UNQUOTABLE_KINDS, quotable_sentences
from webgpt.agent.quote_ranking import QuoteRanker, page_candidates
from webgpt.browser.page import Page
from webgpt.browser.search.base import SearchResult

RESULT_PAGES = 3
# A page is read by its sentences holding the question's words most, this many, so that a
# search costs the ranker at most 3 x 8 sentences (other-page comparison rows pick their
# losers among as many: learning.quote_comparisons.PICK_FROM).
RESULT_CANDIDATES = 8


async def best_sentence(ranker: QuoteRanker, question: str, page: Page) -> tuple[float, str | None]:
    """(score, sentence) of the page's best candidate as the quote answering question;
    (-inf, None) for a page with none (an error page: blocked, censored, unreachable)."""
    if page.kind in UNQUOTABLE_KINDS or not page.lines:
        return -math.inf, None
    sentences = quotable_sentences(page.text_index.text.split("\n"))
    candidates = page_candidates(question, sentences, RESULT_CANDIDATES)
    if not candidates:
        return -math.inf, None
    scores = await ranker.rank(question, page.title, candidates)
    return max(zip(scores, candidates, strict=True), key=lambda pair: pair[0])


class BestPageFirst:
    """A session's result order (browser.session.ResultOrder) for one episode: a page met
    again in another search is not read again."""

    def __init__(
        self, ranker: QuoteRanker, question: str, peek: Callable[[str], Awaitable[Page]]
    ) -> None:
        self._ranker = ranker
        self._question = question
        self._peek = peek
        self._scores: dict[str, float] = {}
        self.scoring_s = 0.0  # the ranker's and the pages' time, for the episode's timings
        self.reordered = False  # whether the last search's order was changed

    async def __call__(self, results: list[SearchResult]) -> list[SearchResult]:
        started = time.perf_counter()
        head = results[:RESULT_PAGES]
        scores = [await self._score(result.url) for result in head]
        order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
        self.reordered = order != sorted(order)
        self.scoring_s += time.perf_counter() - started
        return [head[i] for i in order] + results[RESULT_PAGES:]

    async def _score(self, url: str) -> float:
        if url not in self._scores:
            page = await self._peek(url)
            self._scores[url] = (await best_sentence(self._ranker, self._question, page))[0]
        return self._scores[url]
