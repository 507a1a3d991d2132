"""The text the policy is given: a short header, then the browser's observation.

The header is part of the policy's input format: a policy checkpoint is trained on it, so
a change here goes with a bump of browser.observation.OBSERVATION_FORMAT_VERSION.
"""

BROWSING_HEADER = (
    "You are browsing the web to collect quotes that answer the question. "
    "Reply with one command: Search <query> | Clicked on link <id> | Find in page: <text> | "
    "Quote: <text> | Scrolled down <1, 2 or 3> | Scrolled up <1, 2 or 3> | Top | Back | "
    "End: Answer | End: Nonsense | End: Controversial\n\n"
)
COMMAND_STOP = ("\n",)
ANSWER_STOP = ("■",)


def browsing_prompt(observation: str) -> str:
    """The observation ends with "♦Next action"; the command follows on the next line."""
    return BROWSING_HEADER + observation + "\n"
