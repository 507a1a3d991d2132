"""RL rollout throughput: episodes/s of `webgpt train rl`'s rollouts, one generation at a
time vs the episodes of a batch generated together.

Rollouts are what an RL step spends its time on: real episodes on the offline web, every
command and answer sampled from the policy in process. This samples the same rollout
batch (same questions, answer-only draws and action limits: one seed) from the embedded
default policy twice: with the in-process policy's batching off (`max_batch` 1, as before
batching) and on. Scores are left out (a constant reward): they are not what is measured.

    .venv/bin/python benchmarks/rl_rollout_bench.py --questions questions.jsonl \
        [--questions-per-step 2] [--episodes-per-question 4] [--device cpu]

questions.jsonl comes from `webgpt demos generate --scripted --questions-out FILE`.
"""

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from webgpt.agent.hf_policy import TransformersPolicy
from webgpt.agent.model import prepare_default_model
from webgpt.browser.web import offline_web
from webgpt.evals.questions import load_questions
from webgpt.learning.rl.config import RLConfig
from webgpt.learning.rl.packing import SegmentTable
from webgpt.learning.rl.rollouts import EpisodeRollouts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--questions-per-step", type=int, default=2)
    parser.add_argument("--episodes-per-question", type=int, default=4)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    policy_dir = prepare_default_model(print)
    tokenizer = AutoTokenizer.from_pretrained(policy_dir)
    model = AutoModelForCausalLM.from_pretrained(policy_dir, dtype=torch.float32)
    model = model.to(args.device).eval()
    questions = load_questions(args.questions, "train")
    chosen = random.Random(args.seed).sample(questions, args.questions_per_step)
    prompts = [q.question for q in chosen for _ in range(args.episodes_per_question)]
    config = RLConfig(
        policy=policy_dir, reward_model=policy_dir, questions=args.questions, out=policy_dir,
        min_actions=4, max_actions=10, seed=args.seed,
    )  # fmt: skip
    print(
        f"{len(prompts)} episodes ({args.questions_per_step} questions x "
        f"{args.episodes_per_question}), actions 4-10, T {config.temperature}, {args.device}"
    )
    print(f"{'generation':<14} {'episodes/s':>10} {'wall s':>7} {'calls':>6} {'answered':>8}")
    for label, max_batch in (("one at a time", 1), ("batched", len(prompts))):
        torch.manual_seed(args.seed)
        rollouts = EpisodeRollouts(
            config, chosen, lambda: offline_web(None), lambda texts: [0.0] * len(texts),
            tokenizer, SegmentTable(),
        )  # fmt: skip
        policy = TransformersPolicy(model, tokenizer, name="bench", max_batch=max_batch)
        try:
            started = time.perf_counter()
            batch = rollouts.loop.run_until_complete(rollouts.sample(prompts, policy))
            wall = time.perf_counter() - started
        finally:
            rollouts.close()
        calls = sum(len(r.turns) for r in batch)
        answered = sum(r.answered for r in batch)
        print(
            f"{label:<14} {len(batch) / wall:>10.3f} {wall:>7.1f} {calls:>6} "
            f"{answered:>5}/{len(batch)}"
        )
    print(json.dumps({k: str(v) for k, v in vars(args).items()}))


if __name__ == "__main__":
    main()
