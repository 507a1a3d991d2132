"""The people-written follow-ups (data/questions/conversations.jsonl, DATA_CARD.md): each
after a conversation of one exchange, on dev pages no sealed question uses, and every gold
answer and evidence sentence on its page (scripts/check_questions.py)."""

from pathlib import Path

import pytest

from tests.evals.writers_check import assert_every_line_passes
from webgpt.agent.declines import is_declined
from webgpt.evals.questions import (
    CONVERSATION_QUESTIONS,
    SEALED_QUESTIONS,
    load_questions,
    split_of,
)


def test_every_follow_up_comes_after_one_exchange_on_a_dev_page() -> None:
    questions = load_questions(CONVERSATION_QUESTIONS)
    sealed_pages = {q.url for q in load_questions(SEALED_QUESTIONS) if q.url}
    assert len(questions) >= 40
    assert len({q.url for q in questions}) == len(questions), "a page twice"
    for question in questions:
        assert question.kind == "factoid" and question.split == "dev", question.question
        assert question.url is not None and split_of(question.url) == "dev", question.url
        assert question.url not in sealed_pages, question.url
        asked, answered = question.history
        assert (asked.role, answered.role) == ("user", "assistant"), question.question
        # an answer the service would give: cited, not a decline
        assert answered.content.rstrip().endswith("[1].") and not is_declined(answered.content)


@pytest.mark.slow  # the full offline web
def test_every_follow_up_passes_the_writers_check(embedded_web_store: Path) -> None:
    assert_every_line_passes(CONVERSATION_QUESTIONS, embedded_web_store)
