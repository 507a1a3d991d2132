"""Watch the browsing trace live with the async client, then print the final answer.

WEBGPT_BASE_URL=http://127.0.0.1:8080 python client/examples/stream_async.py "Why crows?"
"""

import asyncio
import sys

from webgpt_client import AsyncClient


async def main() -> None:
    question = " ".join(sys.argv[1:]) or "How do crows recognise faces?"
    async with AsyncClient() as client, await client.stream(question) as events:
        async for event in events:
            if event.type == "action":
                print(f"episode {event.episode}: {event.command}")
            elif event.type == "episode_error":  # one episode failed; the others go on
                print(f"episode {event.episode} failed: {event.message}")
            elif event.type == "answer_delta":
                print(event.text, end="", flush=True)
            elif event.type == "final":
                print("\n\nanswer:", event.result.answer)
                for reference in event.result.references:
                    print(f"[{reference.n}] {reference.title} — {reference.url}")
            elif event.type == "error":  # the request failed: the last event
                sys.exit(f"error: {event.message}")


if __name__ == "__main__":
    asyncio.run(main())
