"""Quote ranker benchmark: what the shipped quote ranker costs the service and every command
that loads it by default: start-up (load) time, memory, and the time to score the sentences
of one view, cold and from its cache (an episode meets a view again after Back or scrolling).

    .venv/bin/python benchmarks/quote_ranker_bench.py [--ranker default|FOLDER] [--repeats 5]
        [--float32]

It scores as the service does: in bf16 on a CPU that computes bf16 itself, else in float32
(reward.quote_scorer); --float32 scores in float32 anywhere, to compare.

The sentences are a Wikipedia lead's, 12 in view (agent.grammar.MAX_QUOTE_CHOICES offers at
most 12 a step); each is scored once with the question, as agent.quote_ranking asks.
"""

import argparse
import asyncio
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from webgpt.agent.grammar import MAX_QUOTE_CHOICES
from webgpt.agent.model import quote_ranker_folder

QUESTION = "In what year was the Eiffel Tower completed?"
TITLE = "Eiffel Tower"
SENTENCES = [
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
    "It is named after the engineer Gustave Eiffel, whose company designed and built it.",
    "Locally nicknamed La dame de fer, it was constructed as the centrepiece of the 1889 "
    "World's Fair.",
    "Although initially criticised by some of France's leading artists, it has since become "
    "a global cultural icon of France.",
    "It is the tallest structure in Paris.",
    "Visitors reach its levels by stairs or by lift.",
    "The tower is 330 metres tall, about the same height as an 81-storey building.",
    "Its base is square, measuring 125 metres on each side.",
    "During its construction, it surpassed the Washington Monument to become the tallest "
    "man-made structure in the world.",
    "It held that title for 41 years until the Chrysler Building in New York City was "
    "finished in 1930.",
    "The tower has three levels for visitors, with restaurants on the first and second.",
    "The top level's upper platform is 276 m above the ground.",
]


def max_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # KiB on Linux


def own_memory_gb() -> float:
    """Resident memory of the process's own (anonymous) pages: not a weights file's pages
    it reads where the file is mapped, which the kernel can drop and read again."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1e6  # kB
    return float("nan")


async def view_times(ranker_name: Path, repeats: int, float32: bool) -> None:
    import torch  # noqa: F401  # imported before the first figure: memory of the ranker alone

    from webgpt.reward.quote_scorer import QuoteScorer

    folder = quote_ranker_folder(ranker_name, print)
    assert folder is not None, "give a quote ranker, not none"
    baseline = max_rss_gb()
    started = time.perf_counter()
    ranker = QuoteScorer(folder, bf16=False if float32 else None)
    load_s = time.perf_counter() - started
    assert ranker._local is not None
    dtype = next(ranker._local.model.parameters()).dtype
    loaded, own = max_rss_gb(), own_memory_gb()
    view = SENTENCES[:MAX_QUOTE_CHOICES]
    cold, cached = [], []
    try:
        for repeat in range(repeats):
            question = f"{QUESTION} ({repeat})"  # a new question: nothing cached
            started = time.perf_counter()
            scores = await ranker.rank(question, TITLE, view)
            cold.append(time.perf_counter() - started)
            started = time.perf_counter()
            await ranker.rank(question, TITLE, view)
            cached.append(time.perf_counter() - started)
        best = view[max(range(len(view)), key=scores.__getitem__)]
    finally:
        await ranker.aclose()
    print(f"ranker {ranker.name} in {str(dtype).removeprefix('torch.')}: loaded in {load_s:.1f} s")
    print(
        f"memory (max RSS): {baseline:.2f} GB with torch, {loaded:.2f} GB with the ranker "
        f"loaded, {max_rss_gb():.2f} GB after scoring; its own pages {own:.2f} GB loaded"
    )
    print(
        f"one view of {len(view)} sentences: {1000 * statistics.median(cold):.0f} ms "
        f"(median of {repeats}), {1000 * statistics.median(cached):.2f} ms from the cache"
    )
    print(f"its pick for {QUESTION!r}: {best!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranker", type=Path, default=Path("default"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--float32", action="store_true", help="score in float32 anywhere")
    args = parser.parse_args()
    asyncio.run(view_times(args.ranker, args.repeats, args.float32))


if __name__ == "__main__":
    main()
