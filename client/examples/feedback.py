"""Ask for two candidate answers and grade them, as WebGPT's raters compared answers.

The service answers with n > 1 only when it has a reward model (WEBGPT_REWARD_MODEL). The
candidates are shown as A and B in random order, so position says nothing; type the grade:
1 A much better, 2 A better, 3 equal, 4 B better, 5 B much better. The comparison becomes a
training label for the reward model. Needs a key with the `label` role.

WEBGPT_BASE_URL=http://127.0.0.1:8080 python client/examples/feedback.py "Why do crows gather?"
"""

import argparse
import random
import sys

from webgpt_client import APIStatusError, BadRequestError, Candidate, Client, Grade

GRADES: dict[str, Grade] = {
    "1": "a_much_better",
    "2": "a_better",
    "3": "equal",
    "4": "b_better",
    "5": "b_much_better",
}


def show(label: str, candidate: Candidate) -> None:
    print(f"--- {label}")
    print(candidate.answer)
    for reference in candidate.references:
        print(f"[{reference.n}] {reference.title} — {reference.url}")


def main() -> None:
    parser = argparse.ArgumentParser(description="Grade two answers of the webgpt service.")
    parser.add_argument("question", nargs="?", default="How do crows recognise faces?")
    parser.add_argument("--n", type=int, default=2, help="episodes to answer with (2 or more)")
    args = parser.parse_args()
    with Client() as client:
        try:
            result = client.answer(args.question, n=args.n)
        except BadRequestError as error:  # n > 1 and no reward model
            sys.exit(f"{error.message} (start the service with WEBGPT_REWARD_MODEL)")
        answered = [i for i, candidate in enumerate(result.candidates) if candidate.answer]
        if len(answered) < 2:
            sys.exit(f"{len(answered)} of {args.n} episodes answered: nothing to compare")
        a, b = random.sample(answered, 2)
        show("A", result.candidates[a])
        show("B", result.candidates[b])
        choice = input("1 A much better, 2 A better, 3 equal, 4 B better, 5 B much better? ")
        grade = GRADES.get(choice.strip())
        if grade is None:
            sys.exit(f"{choice.strip()!r} is not a grade from 1 to 5")
        try:
            receipt = client.compare(result.id, a=a, b=b, grade=grade)
        except APIStatusError as error:  # 403: the key lacks the label role
            sys.exit(f"{error.status_code} {error.type}: {error.message}")
    # Shown only now, so it cannot sway the grade.
    preferred = "A" if result.best == a else "B" if result.best == b else "neither"
    print(f"recorded {receipt.kind} comparison {receipt.id}")
    print(f"the reward model preferred {preferred}")


if __name__ == "__main__":
    main()
