"""The training questions whose episodes become decline-judgment rows (docs/reward.md,
"The decline judgment"): people-style factoids of data/questions/train-later-sentences.jsonl
and generated unanswerable questions of the offline web's training pages, shuffled.

    python scripts/decline_episode_questions.py --out train360.jsonl
"""

import argparse
import json
import random
from pathlib import Path

from webgpt.browser.offline import OfflineWeb
from webgpt.learning.question_generator import generate_questions

LATER_SENTENCES = Path(__file__).resolve().parents[1] / "data/questions/train-later-sentences.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--factoids", type=int, default=260)
    parser.add_argument("--unanswerable", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--store", type=Path, default=None, help="offline web file")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    later = [json.loads(line) for line in LATER_SENTENCES.read_text().splitlines()]
    rows = rng.sample(later, args.factoids)
    for row in rows:
        row.setdefault("kind", "factoid")
    store = OfflineWeb(args.store)
    try:
        unanswerable = [
            q
            for q in generate_questions(store, seed=0)
            if q.split == "train" and q.kind == "unanswerable"
        ]
    finally:
        store.close()
    rows += [
        json.loads(q.model_dump_json(exclude_none=True))
        for q in rng.sample(unanswerable, args.unanswerable)
    ]
    rng.shuffle(rows)
    args.out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    print(f"wrote {len(rows)} questions to {args.out}")


if __name__ == "__main__":
    main()
