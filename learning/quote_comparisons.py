"""Comparisons that teach a quote ranker which sentence of a page answers a question
(`webgpt comparisons quotes`, then `webgpt train rm`; served by reward.quote_scorer): with
one, the Quote grammar offers a factoid the sentences in view it scores highest
(agent.quote_ranking), as the service does by default.

Each row pits the sentence that answers the question (its evidence) against another
sentence near it on the same page (within a view's worth of sentences, where a Quote would
have offered both) that holds none of its gold answers. Sentences are those of the page as
the browser serves it, split and cut as the grammar offers them
(agent.grammar.quotable_sentences). The questions are factoids with evidence: those of
question files (people-written, e.g. data/questions/train-later-sentences.jsonl) and
question_generator's over the offline web's pages, of the train split alone, and only
train pages are read (evals.questions.split_of): no dev or test page is trained on. A
row's label is a rule's, so rows say `"source": "synthetic"` (learning.comparisons)."""

import random
from collections.abc import Iterable, Iterator
from typing import Any

from webgpt.agent.grammar import MAX_QUOTE_CHOICES, quotable, quotable_sentences
from webgpt.browser.offline import OfflineWeb
from webgpt.browser.render import RenderOptions, render_html
from webgpt.evals.questions import Question, contains_gold, split_of
from webgpt.learning.comparisons import SOURCE


class ServedSentences:
    """(title, quotable sentences) of the offline web's train pages as the browser renders
    them; none for a page of another split or one that is not HTML."""

    def __init__(self, store: OfflineWeb) -> None:
        self._store = store
        self._html = {page.url for page in store.pages() if page.content_type == "text/html"}
        self._cache: dict[str, tuple[str, list[str]]] = {}

    def of(self, url: str) -> tuple[str, list[str]]:
        if url not in self._cache:
            readable = url in self._html and split_of(url) == "train"
            body = self._store.body(url) if readable else None
            if body is None:
                self._cache[url] = ("", [])
            else:
                page = render_html(body, url, None, RenderOptions())
                lines = page.text_index.text.split("\n")
                self._cache[url] = (page.title, quotable_sentences(lines))
        return self._cache[url]


def quote_rows(
    questions: Iterable[Question], pages: ServedSentences, *, negatives: int = 3, seed: int = 0
) -> Iterator[dict[str, Any]]:
    """Up to `negatives` rows a factoid, each against a sentence near its evidence drawn at
    random; which side is `a` is drawn too, so neither position means anything. A question
    whose evidence is not a sentence of its page as served makes no row."""
    rng = random.Random(seed)
    for question in questions:
        if question.kind != "factoid" or not question.gold_answers or not question.url:
            continue
        title, sentences = pages.of(question.url)
        answering = _answering(question, sentences)
        if answering is None:
            continue
        at = sentences.index(answering)
        near = sentences[max(0, at - MAX_QUOTE_CHOICES) : at + MAX_QUOTE_CHOICES + 1]
        others = [s for s in near if s != answering and not contains_gold(s, question.gold_answers)]
        for other in rng.sample(others, min(negatives, len(others))):
            first = rng.random() < 0.5
            yield {
                "question": question.question,
                "url": question.url,
                "title": title,
                "quote_a": answering if first else other,
                "quote_b": other if first else answering,
                "preference": "a" if first else "b",
                "source": SOURCE,
            }


def _answering(question: Question, sentences: list[str]) -> str | None:
    """The sentence that is the question's evidence (a longer one cut as the grammar cuts
    it), holding a gold answer."""
    evidence = quotable(question.evidence or "")
    if evidence is None:
        return None
    for sentence in sentences:
        same = sentence == evidence or sentence in evidence or evidence in sentence
        if same and contains_gold(sentence, question.gold_answers):
            return sentence
    return None
