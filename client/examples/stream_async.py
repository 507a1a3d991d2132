"""Watch the browsing trace live with the async client, then print the final answer.

WEBGPT_BASE_URL=http://127.0.0.1:8080 python client/examples/stream_async.py "Why crows?"
"""

import asyncio
import sys

from webgpt_client import (
    ActionEvent,
    AnswerDeltaEvent,
    AsyncClient,
    EpisodeErrorEvent,
    ErrorEvent,
    FinalEvent,
)


async def main() -> None:
    question = " ".join(sys.argv[1:]) or "How do crows recognise faces?"
    async with AsyncClient() as client, await client.stream(question) as events:
        # isinstance on the typed events, so a type checker knows each one's fields; any
        # other event (episode_start, candidate, one a newer service adds) is skipped.
        async for event in events:
            if isinstance(event, ActionEvent):
                print(f"episode {event.episode}: {event.command}")
            elif isinstance(event, EpisodeErrorEvent):  # one episode failed; the others go on
                print(f"episode {event.episode} failed: {event.message}")
            elif isinstance(event, AnswerDeltaEvent):
                print(event.text, end="", flush=True)
            elif isinstance(event, FinalEvent):
                print("\n\nanswer:", event.result.answer)
                for reference in event.result.references:
                    print(f"[{reference.n}] {reference.title} — {reference.url}")
            elif isinstance(event, ErrorEvent):  # the request failed: the last event
                sys.exit(f"error: {event.message}")


if __name__ == "__main__":
    asyncio.run(main())
