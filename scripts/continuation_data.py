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

`--on-page` draws Wikipedia factoid episodes and keeps their steps on the page they quote
(the quote and the answer): of those, `--later-quotes` quote a sentence past the page's
opening (people's questions are mostly answered there, and the policy quotes the opening),
the rest the opening itself. `--declines-whole` keeps every step of the declines after
their first (the searching and reading that found nothing). `--exclude` leaves out the
questions of an earlier continuation's data.
"""

import argparse
import json
import random
from pathlib import Path

Row = dict[str, object]
# A quote further into the page's text than this many characters is past its opening
# (the title and first sentence): measured on the demonstrations, 90% of factoid quotes
# start within 85 characters of the text's start.
OPENING_CHARS = 100


def steps_of(row: Row) -> list[dict[str, str]]:
    steps = row["steps"]
    assert isinstance(steps, list)
    return steps


def first_and_answer(row: Row, keep_after_first_quote: bool) -> Row:
    steps = steps_of(row)
    kept = [steps[0]]
    if keep_after_first_quote:
        first_quote = next(i for i, s in enumerate(steps) if s["command"].startswith("Quote:"))
        kept += steps[first_quote + 1 :]
    return {**row, "steps": kept}


def on_last_page(row: Row) -> Row:
    """The steps after the last click: reading the page, quoting it and answering."""
    steps = steps_of(row)
    last_click = max(i for i, s in enumerate(steps) if s["command"].startswith("Clicked"))
    return {**row, "steps": steps[last_click + 1 :]}


def after_first(row: Row) -> Row:
    return {**row, "steps": steps_of(row)[1:]}


def quotes_past_opening(row: Row) -> bool:
    """The episode finds or scrolls to its quote, or quotes past the page's opening."""
    for step in steps_of(row):
        command = step["command"]
        if command.startswith(("Find in page", "Scrolled")):
            return True
        if command.startswith("Quote:"):
            observation = step["observation"]
            at = observation.find(command.removeprefix("Quote:").strip()[:30])
            return at - observation.find("♦Text") > OPENING_CHARS
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("demonstrations", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--factoid", type=int, default=0)
    parser.add_argument("--longform", type=int, default=0)
    parser.add_argument("--longform-full", type=int, default=0)
    parser.add_argument("--declines", type=int, default=0)
    parser.add_argument("--declines-whole", action="store_true")
    parser.add_argument("--on-page", type=int, default=0)
    parser.add_argument("--later-quotes", type=int, default=0)
    parser.add_argument("--exclude", type=Path, help="an earlier continuation's data")
    args = parser.parse_args()
    counts = (args.factoid, args.longform, args.longform_full, args.declines, args.on_page)
    if min(counts) < 0 or not 0 <= args.later_quotes <= args.on_page:
        parser.error("counts are 0 or more, and --later-quotes at most --on-page")
    if args.longform_full > args.longform:
        parser.error("--longform-full is at most --longform")

    with args.demonstrations.open() as lines:
        rows = [json.loads(line) for line in lines]
    excluded: set[str] = set()
    if args.exclude is not None:
        with args.exclude.open() as lines:
            excluded = {json.loads(line)["question"] for line in lines}
    train = [r for r in rows if r.get("split") == "train" and r["question"] not in excluded]
    kinds = ("factoid", "longform", "unanswerable")
    of_kind = {k: [r for r in train if r["meta"].get("kind") == k] for k in kinds}
    rng = random.Random(0)
    factoid = rng.sample(of_kind["factoid"], args.factoid)
    longform = rng.sample(of_kind["longform"], args.longform)
    declines = rng.sample(of_kind["unanswerable"], args.declines)
    full = {row["id"] for row in longform[: args.longform_full]}
    kept = [first_and_answer(r, r["id"] in full) for r in factoid + longform]
    kept += [
        after_first(r) if args.declines_whole else first_and_answer(r, False) for r in declines
    ]
    if args.on_page:
        drawn = {r["id"] for r in factoid}
        wikipedia = [
            r
            for r in of_kind["factoid"]
            if r["id"] not in drawn and "wikipedia.org" in str(r["gold_url"])
        ]
        later = [r for r in wikipedia if quotes_past_opening(r)]
        opening = [r for r in wikipedia if not quotes_past_opening(r)]
        on_page = rng.sample(later, args.later_quotes)
        on_page += rng.sample(opening, args.on_page - args.later_quotes)
        kept += [on_last_page(r) for r in on_page]
    with args.out.open("w") as out:
        for row in kept:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(
        f"{len(factoid)} factoid, {len(longform)} long-form, {len(declines)} declines, "
        f"{args.on_page} on the quoted page ({args.later_quotes} past its opening) -> {args.out}"
    )


if __name__ == "__main__":
    main()
