"""Ask through the official `openai` package (pip install openai): the service speaks
OpenAI's chat completions at its base URL + /v1, and each choice's message carries the
answer's `references` beside the content.

WEBGPT_BASE_URL=http://127.0.0.1:8080 python client/examples/chat_openai.py "Who painted it?"
"""

import os
import sys

from openai import OpenAI


def main() -> None:
    question = " ".join(sys.argv[1:]) or "Who painted the Mona Lisa?"
    base_url = os.environ.get("WEBGPT_BASE_URL", "http://127.0.0.1:8080").rstrip("/")
    # openai insists on a key; a service without keys (local development) ignores it.
    api_key = os.environ.get("WEBGPT_API_KEY") or "unused"
    with OpenAI(base_url=f"{base_url}/v1", api_key=api_key) as client:
        completion = client.chat.completions.create(
            model="webgpt",  # the service answers with the policy it serves, whatever the name
            messages=[{"role": "user", "content": question}],
        )
    message = completion.choices[0].message
    print(message.content)
    # Fields OpenAI does not define arrive in model_extra.
    for reference in (message.model_extra or {}).get("references", []):
        print(f"[{reference['n']}] {reference['title']} — {reference['url']}")


if __name__ == "__main__":
    main()
