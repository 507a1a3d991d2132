"""Behavior-cloning throughput: tokens/s and peak memory of `webgpt train bc` on this machine.

Generates scripted demonstrations on the offline web, then trains the embedded default base
for a fixed number of examples with LoRA r=16 on the top 10 layers and on all 30, as a
continuation of the shipped adapter (`--init-adapter`) on all its layers and on the top 15
(`--lora-layers 15`, the CPU continuations of docs/training.md), and with full fine-tuning
for comparison. Prints one line per setting.

    .venv/bin/python benchmarks/bc_bench.py [--examples 64]
"""

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _demos(folder: Path) -> Path:
    out = folder / "demos.jsonl"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "webgpt.service.cli",
            "demos",
            "generate",
            "--scripted",
            "--out",
            str(out),
            "--per-split",
            "train=100,dev=0,test=0",
        ],
        check=True,
    )
    return out


def _run(
    setting: str,
    lora_rank: int,
    lora_layers: int,
    demos: Path,
    examples: int,
    init_adapter: Path | None = None,
) -> None:
    from webgpt.agent.model import BASE_VERSION, prepare_base_model
    from webgpt.learning.bc import BCConfig, train_bc

    base = prepare_base_model(print)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        result = train_bc(
            BCConfig(
                demonstrations=[demos],
                base=base,
                base_version=BASE_VERSION,
                out=Path(tmp),
                num_train_epochs=1,
                max_examples=examples,
                validation_fraction=0.0,
                validity_prompts=0,
                lora_rank=lora_rank,
                lora_layers=lora_layers,
                init_adapter=init_adapter,
            ),
            log=lambda _: None,
        )
        wall = time.perf_counter() - started
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    metrics = result.manifest_metrics
    print(
        f"{setting:<28} {metrics['train_examples']:>4} examples "
        f"{metrics['train_tokens']:>7} tokens {metrics['train_tokens_per_s']:>7.1f} tokens/s  "
        f"wall {wall:6.1f} s  "
        f"peak RSS {peak_gib:.2f} GiB (process so far)"
        + (
            f", peak GPU {metrics['peak_accelerator_memory_gib']:.2f} GiB"
            if metrics["peak_accelerator_memory_gib"] is not None
            else ""
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=64)
    parser.add_argument("--full", action="store_true", help="also full fine-tuning")
    args = parser.parse_args()
    from webgpt.agent.model import SHIPPED_ADAPTER

    with tempfile.TemporaryDirectory() as tmp:
        demos = _demos(Path(tmp))
        _run("LoRA r16, top 10 layers", 16, 10, demos, args.examples)
        _run("LoRA r16, all 30 layers", 16, 0, demos, args.examples)
        _run("continued, all 30 layers", 16, 0, demos, args.examples, SHIPPED_ADAPTER)
        _run("continued, top 15 layers", 16, 15, demos, args.examples, SHIPPED_ADAPTER)
        if args.full:
            _run("full fine-tuning", 0, 0, demos, args.examples)


if __name__ == "__main__":
    main()
