"""The hand-written training questions (data/questions/train-later-sentences.jsonl,
data/questions/DATA_CARD.md): questions about the sentences past a summary's opening, on
training pages only, that the scripted demonstrator turns into demonstrations."""

import random
import re
from pathlib import Path

import pytest

from webgpt.agent.grammar import answer_regex
from webgpt.browser.events import CollectedQuote
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web, WebOptions
from webgpt.evals.questions import contains_gold, load_questions, normalize, page_text, split_of
from webgpt.learning.scripted import demonstrate

QUESTIONS = Path(__file__).parents[2] / "data" / "questions"
TRAINING = QUESTIONS / "train-later-sentences.jsonl"


def test_every_question_is_on_a_training_page_and_answered_by_its_sentence() -> None:
    questions = load_questions(TRAINING)
    assert len(questions) >= 5000
    people_pages = {q.url for q in load_questions(QUESTIONS / "people.jsonl")}
    assert len({normalize(q.question) for q in questions}) == len(questions), "a question twice"
    for q in questions:
        assert q.kind == "factoid" and q.split == "train", q.question
        # never a page of the people-written dev or test set: those are never trained on
        assert q.url is not None and split_of(q.url) == "train" and q.url not in people_pages
        assert q.evidence and contains_gold(q.evidence, q.gold_answers), q.question
        assert not contains_gold(q.question, q.gold_answers), q.question  # it asks, not tells
        # the reference answer states a gold and cites the one quote, as a policy may answer
        assert q.answer and contains_gold(q.answer, q.gold_answers), q.question
        quote = CollectedQuote(title=q.title or "", domain="", url=q.url, extract=q.evidence)
        assert re.fullmatch(answer_regex([quote]), q.answer), q.answer
        assert q.answer.endswith(" [1]."), q.answer


@pytest.mark.slow
async def test_each_evidence_is_a_later_sentence_of_its_page_and_is_demonstrated(
    embedded_web_store: Path,
) -> None:
    web = Web(WebOptions(offline_store=embedded_web_store, offline_only=True, js_mode="never"))
    cache = web.new_cache()
    questions = load_questions(TRAINING)
    try:
        for q in questions:
            assert q.url is not None and q.evidence is not None
            page = await cache.get(q.url)
            assert f" {normalize(q.evidence)} " in f" {page_text(page.lines)} ", q.question
        sample = random.Random(0).sample(questions, 20)
        made = []
        for q in sample:
            session = web.session(config=SessionConfig(max_actions=20))
            made.append(await demonstrate(q, session, random.Random(0)))
    finally:
        await cache.aclose()
        await web.aclose()
    demos = [d for d in made if d is not None]
    assert len(demos) >= 18  # search finds the page and the sentence is quotable
    for demo, q in zip(made, sample, strict=True):
        if demo is None:
            continue
        assert demo.answer == q.answer and demo.quotes
        assert contains_gold(demo.quotes[0].extract, q.gold_answers)
