"""Guided-decoding grammar benchmark: what compiling the policy's grammars costs the engine.

    .venv/bin/python benchmarks/grammar_bench.py

vLLM compiles each request's regex with xgrammar (its default structured-output backend)
before the first token, and caches it by pattern. A browsing grammar names the quotes and
links in view, so it is new at every step; an answer grammar depends only on the number of
quotes. This compiles, with the default policy's tokenizer and no cache, the grammars of a
real page of the offline web (`webgpt corpus build`) and, for comparison, the same grammars
with the bounded free-text runs they had before (docs/benchmarks.md has the figures).
"""

import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from webgpt.agent.grammar import answer_regex, browsing_regex, with_stop
from webgpt.agent.model import prepare_base_model
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


def browsing_before(regex: str) -> str:
    for now, before in BOUNDED_BEFORE.items():
        regex = regex.replace(now, before)
    return regex


async def page_grammars() -> list[str]:
    """The browsing grammars of an episode's first steps on a real page."""
    web = Web(WebOptions(offline_only=True, js_mode="never"))
    cache = web.new_cache()
    session = web.session(cache, SessionConfig(max_actions=20))
    session.reset("How does a refrigerator keep food cold?")
    grammars = [browsing_regex(session)]
    try:
        for command in ("Search refrigerator", "Clicked on link 0", "Scrolled down 1"):
            await session.step(command)
            grammars.append(browsing_regex(session))
    finally:
        await cache.aclose()
        await web.aclose()
    return grammars


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

    browsing = [with_stop(g, "\n") for g in asyncio.run(page_grammars())]
    rows = [
        ("browsing step (4 steps, mean)", browsing, [browsing_before(g) for g in browsing]),
        *(
            (f"answer, {n} quote(s)", [with_stop(answer_regex(n), "■")],
             [with_stop(answer_regex_before(n), "■")])
            for n in (1, 3)
        ),
    ]  # fmt: skip
    print(f"{'grammar':32} {'now':>8} {'bounded before':>15}")
    for name, now, before in rows:
        now_s = statistics.mean(seconds(g) for g in now)
        before_s = statistics.mean(seconds(g) for g in before)
        print(f"{name:32} {now_s:7.2f}s {before_s:14.2f}s")


if __name__ == "__main__":
    main()
