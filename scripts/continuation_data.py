"""The training data of a CPU-sized BC continuation (docs/training.md, webgpt-bc-135m-v6).

    .venv/bin/python scripts/continuation_data.py DEMOS OUT \
        --factoid 250 --longform 250 --longform-full 40 --declines 299

From the training split of a demonstrations file (`webgpt demos generate --scripted`), it
draws episodes of each kind at random (seed 0) and cuts each to what a continuation on 2
CPU cores can afford to teach: its first step (the query a question gets; BC needs one
step) and its answer, where the declines and the long-form answers are; `--longform-full`
of the long-form episodes also keep every step after their first quote (going on to a
second quote instead of ending). BC trains on each step's own observation, so a cut
episode's examples are exactly the steps it keeps.
"""

import argparse
import json
import random
from pathlib import Path


def cut(row: dict[str, object], keep_after_first_quote: bool) -> dict[str, object]:
    steps = row["steps"]
    assert isinstance(steps, list)
    kept = [steps[0]]
    if keep_after_first_quote:
        first_quote = next(i for i, s in enumerate(steps) if s["command"].startswith("Quote:"))
        kept += steps[first_quote + 1 :]
    return {**row, "steps": kept}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("demonstrations", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--factoid", type=int, required=True)
    parser.add_argument("--longform", type=int, required=True)
    parser.add_argument("--longform-full", type=int, required=True)
    parser.add_argument("--declines", type=int, required=True)
    args = parser.parse_args()

    with args.demonstrations.open() as lines:
        rows = [json.loads(line) for line in lines]
    train = [r for r in rows if r.get("split") == "train"]
    kinds = ("factoid", "longform", "unanswerable")
    of_kind = {k: [r for r in train if r["meta"].get("kind") == k] for k in kinds}
    rng = random.Random(0)
    factoid = rng.sample(of_kind["factoid"], args.factoid)
    longform = rng.sample(of_kind["longform"], args.longform)
    declines = rng.sample(of_kind["unanswerable"], args.declines)
    with args.out.open("w") as out:
        full = {row["id"] for row in longform[: args.longform_full]}
        for row in factoid + longform + declines:
            out.write(json.dumps(cut(row, row["id"] in full), ensure_ascii=False) + "\n")
    print(
        f"{len(factoid)} factoid, {len(longform)} long-form, {len(declines)} declines -> {args.out}"
    )


if __name__ == "__main__":
    main()
