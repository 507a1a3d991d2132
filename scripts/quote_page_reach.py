"""How often the quote ranker, reading a factoid's own page whole, scores a sentence holding
the gold answer highest: what quoting the page's best can reach, apart from browsing
(docs/eval/promotion-rules-page-quotes.md).

    .venv/bin/python scripts/quote_page_reach.py data/questions/manuals.jsonl [--split dev] \
        [--ranker FOLDER] [--url-part docs.python.org]

For each factoid of the question file, opens its `url` in the offline web as the browser
renders it, scores every quotable sentence of the page with the shipped quote ranker, and
counts the questions whose best sentence holds a gold answer (case-blind): over the whole
page, and over the candidates the agent reads (agent.quote_ranking.page_candidates of the
page's sentences; the view is left out, so this is a lower bound of what the agent reads).
`--ranker` reads another ranker than the shipped one (a `webgpt train rm` folder), to
compare; `--url-part` keeps the factoids whose page's URL holds it.

`--results K` also runs the question's own search (agent.queries.question_query, the
episode's first Search) and reads its first K results' pages as the learned result order
does (agent.result_order: each page's 8 best candidates): it counts the questions where
the first result's best sentence holds the answer, where the page whose best sentence the
ranker scores highest does (that order's first page), and where any of the K does (what
any order can reach).
"""

import argparse
import asyncio
import json
from pathlib import Path

from webgpt.agent.grammar import quotable_sentences
from webgpt.agent.model import DEFAULT_QUOTE_RANKER, load_quote_ranker
from webgpt.agent.queries import question_query
from webgpt.agent.quote_ranking import QuoteRanker, page_candidates
from webgpt.agent.result_order import best_sentence
from webgpt.browser.web import Web, offline_web


async def reach(
    questions: Path, split: str, ranker_folder: Path, url_part: str, results: int
) -> None:
    web = offline_web(None)
    ranker = load_quote_ranker(ranker_folder, print)
    assert ranker is not None
    whole = candidates = count = 0
    first_result = best_result = any_result = 0
    try:
        for line in questions.read_text().splitlines():
            asked = json.loads(line)
            if asked["kind"] != "factoid" or asked.get("split", split) != split:
                continue
            if url_part not in asked.get("url", ""):
                continue
            session = web.session()
            session.reset(asked["question"])
            await session.open_url(asked["url"])
            sentences = quotable_sentences(session.page_text())
            scored = await ranker.rank(asked["question"], session.page.title, sentences)
            scores = dict(zip(sentences, scored, strict=True))
            gold = [g.lower() for g in asked["gold_answers"]]
            count += 1
            whole += _holds_gold(sentences, scores, gold)
            pool = page_candidates(asked["question"], sentences)
            candidates += _holds_gold(pool, scores, gold)
            if results:
                bests = await _result_bests(web, ranker, asked["question"], results)
                holding = [any(g in best.lower() for g in gold) for _, best in bests]
                first_result += bool(holding) and holding[0]
                top = max(range(len(bests)), key=lambda i: (bests[i][0], -i), default=None)
                best_result += top is not None and holding[top]
                any_result += any(holding)
    finally:
        await ranker.aclose()
        await web.aclose()
    print(f"{count} factoids: the ranker's best holds the answer on the whole page {whole}, "
          f"of the page's candidates {candidates}")  # fmt: skip
    if results:
        print(f"of the question's own search's first {results} results: the first result's "
              f"best candidate {first_result}, the best-scored page's {best_result}, "
              f"any page's {any_result}")  # fmt: skip


async def _result_bests(
    web: Web, ranker: QuoteRanker, question: str, results: int
) -> list[tuple[float, str]]:
    """(score, sentence) of the best candidate of each of the first results' pages as the
    learned result order reads them (agent.result_order.best_sentence), in the results'
    order; a page with none (an error page: blocked, censored) scores -inf."""
    session = web.session()
    session.reset(question)
    found = await session.engine.search(question_query(question), session.config.search_results)
    bests = []
    for result in found[:results]:
        page = await session.peek(result.url)
        score, sentence = await best_sentence(ranker, question, page)
        bests.append((score, sentence or ""))
    return bests


def _holds_gold(pool: list[str], scores: dict[str, float], gold: list[str]) -> bool:
    best = max(pool, key=lambda s: scores[s], default="").lower()
    return any(g in best for g in gold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions", type=Path)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--ranker", type=Path, default=Path(DEFAULT_QUOTE_RANKER))
    parser.add_argument("--url-part", default="", help="only pages whose URL holds this")
    parser.add_argument("--results", type=int, default=0, metavar="K")
    args = parser.parse_args()
    asyncio.run(reach(args.questions, args.split, args.ranker, args.url_part, args.results))


if __name__ == "__main__":
    main()
