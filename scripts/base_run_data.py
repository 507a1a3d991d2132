"""The training data of a BC run from the base on one GPU lease (docs/training.md,
webgpt-bc-135m-v14).

    .venv/bin/python scripts/base_run_data.py OUT \
        --draw gen-demos.jsonl longform=all unanswerable=all factoid=1000 \
        --draw docs-demos.jsonl docs-refind=all docs=300 \
        --draw hand-demos.jsonl factoid=1500

A lease trains about 12M tokens, fewer than the demonstrations there are, so the run's
data is drawn to the shares it should learn. Each `--draw FILE GROUP=N ...` takes N
training-split episodes of each group from FILE, at random (seed 0), or all of them. The
groups:
- factoid: a factoid question about a Wikipedia page;
- docs: a factoid question about a Python docs page, answered with at most one Find;
- docs-refind: one answered after two Finds or more (the entry is further on);
- manual: a factoid question about a page of another manual (PostgreSQL, Git, SQLite,
  Django), most about an option, setting or term of a long page, reached with a Find;
- longform: a how/why/what-is question answered from two quotes or more;
- unanswerable: a question the offline web does not answer, declined.
An episode drawn twice (the same id in two files) is written once; the counts written
are printed to stderr. OUT is written whole or not at all.

With `--tokenizer DIR` (the base's folder) each group's tokens are printed too, counted as
`webgpt train bc` counts them (its examples of each episode, those over 1,536 tokens left
out): a lease's call is sized by tokens, at the tokens/s of the last run (v17: 32,500 on
one H100, docs/training.md).
"""

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path

from webgpt.browser.corpus import MANUALS, PYTHON_DOCS

Row = dict[str, object]
GROUPS = ("factoid", "docs", "docs-refind", "manual", "longform", "unanswerable")
# The sites of the manuals whose questions are the manual group (Python's are docs).
MANUAL_SITES = tuple(manual.base_url for manual in MANUALS if manual.name != PYTHON_DOCS)


def group_of(row: Row) -> str:
    meta = row.get("meta")
    kind = meta.get("kind", "factoid") if isinstance(meta, dict) else "factoid"
    if kind != "factoid":
        return str(kind)
    url = str(row.get("gold_url") or "")
    if url.startswith(MANUAL_SITES):
        return "manual"
    if "docs.python.org" not in url:
        return "factoid"
    steps = row["steps"]
    assert isinstance(steps, list)
    finds = sum(str(step["command"]).startswith("Find in page:") for step in steps)
    return "docs-refind" if finds >= 2 else "docs"


def parse_counts(specs: list[str]) -> dict[str, int | None]:
    """GROUP=N or GROUP=all (None) for each spec."""
    counts: dict[str, int | None] = {}
    for spec in specs:
        group, _, count = spec.partition("=")
        if group not in GROUPS or not (count == "all" or count.isdigit()):
            raise SystemExit(f"--draw: {spec!r} is not GROUP=N or GROUP=all, GROUP one of {GROUPS}")
        counts[group] = None if count == "all" else int(count)
    return counts


def draw(path: Path, counts: dict[str, int | None], rng: random.Random) -> list[Row]:
    by_group: dict[str, list[Row]] = {group: [] for group in counts}
    with path.open() as lines:
        for number, line in enumerate(lines, 1):
            try:
                row = json.loads(line)
            except ValueError as error:
                raise SystemExit(f"{path}:{number}: not a JSON demonstration ({error})") from error
            group = group_of(row)
            if row.get("split") == "train" and group in by_group:
                by_group[group].append(row)
    drawn: list[Row] = []
    for group, rows in by_group.items():
        wanted = counts[group]
        rows.sort(key=lambda row: str(row["id"]))
        if wanted is not None and wanted < len(rows):
            rows = rng.sample(rows, wanted)
        elif wanted is not None and wanted > len(rows):
            print(f"{path}: {group}: {len(rows)} episodes, fewer than {wanted}", file=sys.stderr)
        drawn += rows
    return drawn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--draw",
        nargs="+",
        action="append",
        required=True,
        metavar="FILE GROUP=N",
        help="a demonstrations file, then GROUP=N or GROUP=all for each group to draw",
    )
    parser.add_argument(
        "--tokenizer", type=Path, help="a base model's folder: print each group's tokens too"
    )
    args = parser.parse_args()
    rng = random.Random(0)
    seen: set[str] = set()
    written: Counter[tuple[str, str]] = Counter()
    draws = [(Path(path), parse_counts(specs)) for path, *specs in args.draw]
    missing = [str(path) for path, _ in draws if not path.is_file()]
    if missing:
        raise SystemExit(f"--draw: no such file: {', '.join(missing)}")
    if args.tokenizer is not None and not (args.tokenizer / "tokenizer_config.json").is_file():
        raise SystemExit(f"--tokenizer: {args.tokenizer} is not a model folder with a tokenizer")
    partial = args.out.with_name(args.out.name + ".partial")  # OUT is replaced only when done
    with partial.open("w") as out:
        for path, counts in draws:
            for row in draw(path, counts, rng):
                episode = str(row["id"])
                if episode in seen:
                    continue
                seen.add(episode)
                written[(path.name, group_of(row))] += 1
                out.write(json.dumps(row) + "\n")
    partial.replace(args.out)
    for (name, group), count in sorted(written.items()):
        print(f"{name}\t{group}\t{count}", file=sys.stderr)
    print(f"{len(seen)} episodes -> {args.out}", file=sys.stderr)
    if args.tokenizer is not None:
        by_group = training_tokens(args.out, args.tokenizer)
        for group, tokens in sorted(by_group.items()):
            print(f"{group}\t{tokens} tokens", file=sys.stderr)
        print(f"{sum(by_group.values())} tokens in all", file=sys.stderr)


def training_tokens(path: Path, tokenizer_dir: Path) -> Counter[str]:
    """The tokens `webgpt train bc` would train on in each group of a demonstrations file."""
    from transformers import AutoTokenizer

    from webgpt.learning.bc import BCConfig, examples_of, tokenize_example
    from webgpt.learning.demonstrations import Demonstration

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    max_length = BCConfig.__dataclass_fields__["max_length"].default
    tokens: Counter[str] = Counter()
    with path.open() as lines:
        for line in lines:
            row = json.loads(line)
            for example in examples_of(Demonstration.model_validate(row)):
                length = len(tokenize_example(tokenizer, example)["input_ids"])
                if length <= max_length:
                    tokens[group_of(row)] += length
    return tokens


if __name__ == "__main__":
    main()
