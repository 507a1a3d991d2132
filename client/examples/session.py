"""Record a demonstration from the terminal: browse as the policy would, then answer.

Type one command of Table 1 a line (`Search crows`, `Clicked on link 0`, `Scrolled down
1`, `Find in page: Corvus`, `Quote: <text on the page>`, `Back`, `End: Answer`); after
each, the page shows what the policy would see. After `End: Answer`, write the answer,
citing quotes as [1], [2], ...; it is stored as a demonstration for `webgpt train bc`.
End of input (Ctrl-D) before that abandons the session: nothing is stored. Needs a key with
the `label` role.

WEBGPT_BASE_URL=http://127.0.0.1:8080 python client/examples/session.py "What genus are crows?"
"""

import argparse
import sys

from webgpt_client import APIStatusError, Client, Feedback, UnprocessableEntityError

NO_ANSWER = ("nonsense", "controversial")  # endings whose demonstration has no answer


def demonstrate(client: Client, question: str, from_queue: bool) -> Feedback:
    """Drive one session from the keyboard to its stored demonstration."""
    state = client.sessions.create(None if from_queue else question, from_queue=from_queue)
    print(state.observation)
    try:
        while not state.done:
            state = client.sessions.step(state.id, input("command> "))
            print(state.observation)
        if state.end_reason in NO_ANSWER:
            return client.sessions.answer(state.id, None)
        while True:
            try:
                return client.sessions.answer(state.id, input("answer> "))
            except UnprocessableEntityError as error:  # no citation, or no such quote
                print(error.message)
    except (EOFError, KeyboardInterrupt):
        client.sessions.abandon(state.id)
        sys.exit("\nabandoned: nothing stored")


def main() -> None:
    parser = argparse.ArgumentParser(description="Record a demonstration on the service.")
    parser.add_argument("question", nargs="?", default="What genus are crows?")
    parser.add_argument("--queue", action="store_true", help="the next question of the queue")
    args = parser.parse_args()
    with Client() as client:
        try:
            receipt = demonstrate(client, args.question, args.queue)
        except APIStatusError as error:  # 403: the key lacks the label role; 404: expired
            sys.exit(f"{error.status_code} {error.type}: {error.message}")
    print(f"stored as {receipt.kind} {receipt.id}")


if __name__ == "__main__":
    main()
