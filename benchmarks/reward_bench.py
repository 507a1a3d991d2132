"""Reward-model scoring benchmark: answers scored per second at n = 1, 4, 16 on this machine,
and memory, for a reward model the size of the embedded default policy (SmolLM2-135M
backbone + scalar head; the head is untrained, which does not change the cost).

    .venv/bin/python benchmarks/reward_bench.py [--backbone DIR] [--repeats 5] [--vllm]

Each text is a realistic answer-phase prompt (question, three quotes) plus an answer,
about 350 tokens. With --vllm, the same model is also published as a checkpoint, served
on a local vLLM (pooling runner) and scored through RemoteRewardScorer, one request per n.
"""

import argparse
import asyncio
import resource
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from webgpt.agent.model import prepare_default_model
from webgpt.browser.observation import OBSERVATION_FORMAT_VERSION
from webgpt.infra.checkpoints import publish
from webgpt.infra.vllm_server import ServerConfig, start, stop
from webgpt.reward.model import RewardModel, tokenize
from webgpt.reward.remote import RemoteRewardScorer

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
    parser.add_argument("--vllm", action="store_true", help="also score on a local vLLM")
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
    if args.vllm:
        with tempfile.TemporaryDirectory() as folder:
            checkpoint = save_checkpoint(model, tokenizer, Path(folder), str(backbone))
            bench_vllm(checkpoint, args.repeats)


def save_checkpoint(model: RewardModel, tokenizer: object, folder: Path, base: str) -> Path:
    staging = folder / ".rm-bench"
    model.save(staging)
    tokenizer.save_pretrained(staging)  # type: ignore[attr-defined]
    publish(
        staging,
        folder / "rm-bench",
        kind="reward",
        version="rm-bench",
        base_model=base,
        observation_format_version=OBSERVATION_FORMAT_VERSION,
    )
    return folder / "rm-bench"


def bench_vllm(checkpoint: Path, repeats: int) -> None:
    config = ServerConfig(
        model_dir=checkpoint, served_name="rm-bench", port=8391, extra_args=("--runner", "pooling")
    )
    running = start(config, lambda line: None, record=False)
    try:
        print(f"vLLM {config.dtype} (pooling runner), one /classify request per n")
        print(f"{'n':>4} {'request s':>9} {'answers/s':>10}")
        asyncio.run(_time_remote(running.url, checkpoint, repeats))
    finally:
        stop(running)


async def _time_remote(url: str, checkpoint: Path, repeats: int) -> None:
    scorer = RemoteRewardScorer(url, checkpoint)
    try:
        await scorer.score_texts([text(0)])  # warm-up
        for n in (1, 4, 16):
            # New texts each time: vLLM's prefix cache must not serve a repeat.
            batches = [[text(1000 * (r + 1) + i) for i in range(n)] for r in range(repeats)]
            started = time.perf_counter()
            for texts in batches:
                await scorer.score_texts(texts)
            elapsed = (time.perf_counter() - started) / repeats
            print(f"{n:4d} {elapsed:9.3f} {n / elapsed:10.1f}")
    finally:
        await scorer.aclose()


if __name__ == "__main__":
    main()
