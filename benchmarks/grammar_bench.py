"""Guided-decoding grammar benchmark: what the policy's grammars cost the engine.

    .venv/bin/python benchmarks/grammar_bench.py

vLLM compiles each request's regex with xgrammar (its default structured-output backend)
before the first token, and caches it by pattern; while decoding it fills each token's mask
from the compiled grammar. A browsing grammar names the quotes and links in view, so it is
new at every step; an answer grammar depends only on the number of quotes, so it is
compiled once for each. This compiles, with the default policy's tokenizer and no cache,
the grammars of a real page of the offline web (`webgpt corpus build`) and, for
comparison, the same grammars with the bounded free-text runs they had before, then times
the masks of an answer's tokens (docs/benchmarks.md has the figures).
"""

import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from webgpt.agent.grammar import (
    answer_regex,
    browsing_regex,
    quoted_sentence_regex,
    quotes_to_offer,
    with_stop,
)
from webgpt.agent.model import prepare_base_model
from webgpt.browser.events import CollectedQuote
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web, WebOptions

TEXT = "[^\\[\\]■\\n]"
# The free-text runs as they were bounded before (commit 12d71b0).
BOUNDED_BEFORE = {
    "Search [^\\n]+": "Search [^\\n]{1,100}",
    "Find in page: [^\\n]+": "Find in page: [^\\n]{1,60}",
}


def answer_regex_before(quote_count: int) -> str:
    cite = "(" + "|".join(f"\\[{n}\\]" for n in range(1, quote_count + 1)) + ")"
    decline = f"The pages I found do not say {TEXT}{{3,160}}"
    more = f"({TEXT}{{6,220}}{cite}){{0,7}}"
    return f"({TEXT}{{10,140}}{cite}{more}{TEXT}{{0,150}}|{decline})"


def quote(extract: str) -> CollectedQuote:
    return CollectedQuote(title="Noah Webster", domain="en.wikipedia.org", url="", extract=extract)


QUOTES = [
    quote("Noah Webster (October 16, 1758 – May 28, 1843) was an American lexicographer."),
    quote("His blue-backed speller books taught five generations of American children."),
    quote("In 1828, at the age of 70, Webster published his American Dictionary."),
]
ANSWER = "Noah Webster was born on October 16, 1758 [1]. He published it in 1828 [3]."
BY_QUOTE = " published his American Dictionary, e.g. the one of 1828 [3]."


def browsing_before(regex: str) -> str:
    for now, before in BOUNDED_BEFORE.items():
        regex = regex.replace(now, before)
    return regex


async def page_grammars(
    ranked: int | None = None,
    question: str = "How does a refrigerator keep food cold?",
    commands: tuple[str, ...] = ("Search refrigerator", "Clicked on link 0", "Scrolled down 1"),
) -> tuple[list[str], float]:
    """The browsing grammars of an episode's first steps on a real page, and the mean
    seconds building one took. ranked K: the Quote narrowed to the first K sentences in
    view, the size a quote ranker's pick leaves (its scoring is timed apart: an episode's
    timings.scoring_s)."""
    web = Web(WebOptions(offline_only=True, js_mode="never"))
    cache = web.new_cache()
    session = web.session(cache, SessionConfig(max_actions=20))
    session.reset(question)
    grammars: list[str] = []
    build_s = 0.0

    def build() -> None:
        nonlocal build_s
        started = time.perf_counter()
        picked = None if ranked is None else quotes_to_offer(session)[:ranked]
        grammars.append(browsing_regex(session, ranked=picked))
        build_s += time.perf_counter() - started

    try:
        build()
        for command in commands:
            await session.step(command)
            build()
    finally:
        await cache.aclose()
        await web.aclose()
    return grammars, build_s / len(grammars)


def main() -> None:
    import xgrammar
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(prepare_base_model(print))
    compiler = xgrammar.GrammarCompiler(
        xgrammar.TokenizerInfo.from_huggingface(tokenizer), cache_enabled=False
    )

    def seconds(regex: str) -> float:
        started = time.perf_counter()
        compiler.compile_regex(regex)
        return time.perf_counter() - started

    def mask_ms(regex: str, text: str) -> float:
        """Milliseconds to fill one token's mask, over the tokens of text."""
        matcher = xgrammar.GrammarMatcher(compiler.compile_regex(regex))
        bitmask = xgrammar.allocate_token_bitmask(1, tokenizer.vocab_size)
        tokens = tokenizer.encode(text)
        started = time.perf_counter()
        for token in tokens:
            matcher.fill_next_token_bitmask(bitmask)
            assert matcher.accept_token(token), tokenizer.decode([token])
        return 1000 * (time.perf_counter() - started) / len(tokens)

    every, build_s = asyncio.run(page_grammars())
    relevant, relevant_build_s = asyncio.run(page_grammars(ranked=1))
    browsing = [with_stop(g, "\n") for g in every]
    one = with_stop(answer_regex(QUOTES[:1]), "■")
    three = with_stop(answer_regex(QUOTES), "■")
    # a degenerate answer's retry, a sentence a quote (agent.episode._write_by_quote)
    by_quote = with_stop(quoted_sentence_regex(3), "■")
    rows = [
        ("browsing step (4 steps, mean)", browsing, [browsing_before(g) for g in browsing]),
        (
            "  with one ranked quote",
            [with_stop(g, "\n") for g in relevant],
            [browsing_before(with_stop(g, "\n")) for g in relevant],
        ),
        ("answer, 1 quote", [one], [with_stop(answer_regex_before(1), "■")]),
        ("answer, 3 quotes", [three], [with_stop(answer_regex_before(3), "■")]),
        ("  a sentence a quote", [by_quote], []),
    ]
    print(f"{'grammar':32} {'now':>8} {'bounded':>8}")
    for name, now, before in rows:
        now_s = statistics.mean(seconds(g) for g in now)
        before_s = f"{statistics.mean(seconds(g) for g in before):7.2f}s" if before else "-"
        print(f"{name:32} {now_s:7.2f}s {before_s:>8}")
    print(f"building a browsing grammar: {1000 * build_s:.1f} ms, "
          f"{1000 * relevant_build_s:.1f} ms with one ranked quote")  # fmt: skip
    before = with_stop(answer_regex_before(3), "■")
    print(f"mask per answer token, 3 quotes: {mask_ms(three, ANSWER):.2f} ms now, "
          f"{mask_ms(before, ANSWER):.2f} ms bounded, "
          f"{mask_ms(by_quote, BY_QUOTE):.2f} ms as a sentence a quote")  # fmt: skip


if __name__ == "__main__":
    main()
