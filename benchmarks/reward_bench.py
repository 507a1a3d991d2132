"""Reward-model scoring benchmark: answers scored per second at n = 1, 4, 16 on this machine,
and memory, for a reward model the size of the embedded default policy (SmolLM2-135M
backbone + scalar head; the head is untrained, which does not change the cost).

    .venv/bin/python benchmarks/reward_bench.py [--backbone DIR] [--repeats 5]

Each text is a realistic answer-phase prompt (question, three quotes) plus an answer,
about 350 tokens.
"""

import argparse
import resource
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.model import prepare_default_model
from reward.model import RewardModel, tokenize

QUOTE = (
    "Crows are birds of the genus Corvus. They are known for their intelligence and can "
    "recognise individual human faces, remembering people who threatened them for years. "
) * 3


def text(i: int) -> str:
    quotes = "".join(f"[{n}] Crow (en.wikipedia.org)\n\n{QUOTE}■" for n in range(1, 4))
    return f"Can crows recognise people? ({i})■{quotes}Yes: crows recognise faces [1][2]."


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--backbone", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from transformers import AutoTokenizer

    backbone = args.backbone or prepare_default_model(print)
    tokenizer = AutoTokenizer.from_pretrained(backbone)
    model = RewardModel.from_backbone(backbone).eval()
    tokens = len(tokenizer(text(0))["input_ids"])
    threads = torch.get_num_threads()
    print(f"reward model on {backbone.name}, {threads} threads, ~{tokens} tokens a text")
    print(f"{'n':>4} {'batch s':>9} {'answers/s':>10}")
    with torch.no_grad():
        model(**tokenize(tokenizer, [text(0)], 1024))  # warm-up
        for n in (1, 4, 16):
            batch = tokenize(tokenizer, [text(i) for i in range(n)], 1024)
            started = time.perf_counter()
            for _ in range(args.repeats):
                model(**batch)
            elapsed = (time.perf_counter() - started) / args.repeats
            print(f"{n:4d} {elapsed:9.3f} {n / elapsed:10.1f}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"memory: peak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    main()
