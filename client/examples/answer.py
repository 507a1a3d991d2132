"""Ask a question and print the answer with its references.

WEBGPT_BASE_URL=http://127.0.0.1:8080 python client/examples/answer.py "Who painted the Mona Lisa?"
"""

import argparse
import sys

from webgpt_client import APIStatusError, Client


def main() -> None:
    parser = argparse.ArgumentParser(description="Ask the webgpt service a question.")
    parser.add_argument("question", nargs="?", default="Who painted the Mona Lisa?")
    parser.add_argument("--max-actions", type=int, default=None)
    parser.add_argument("--temperature", type=float, default=None)
    args = parser.parse_args()
    with Client() as client:
        try:
            result = client.answer(
                args.question, max_actions=args.max_actions, temperature=args.temperature
            )
        except APIStatusError as error:
            sys.exit(
                f"{error.status_code} {error.type}: {error.message} (request {error.request_id})"
            )
    print(result.answer or "(no answer)")
    for reference in result.references:
        print(f"[{reference.n}] {reference.title} — {reference.url}")


if __name__ == "__main__":
    main()
