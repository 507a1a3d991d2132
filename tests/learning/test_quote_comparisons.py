"""The comparisons a quote ranker learns from: the sentence that answers a factoid against
another of its page as the browser serves it, and sentences against the decline, train
pages only."""

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from webgpt.agent.declines import decline_answer
from webgpt.agent.grammar import MAX_QUOTE_CHOICES
from webgpt.agent.queries import question_query
from webgpt.agent.quote_ranking import page_candidates
from webgpt.browser.corpus import build_corpus, wikipedia_pages
from webgpt.browser.offline import OfflineWeb
from webgpt.evals.questions import Question, contains_gold, split_of
from webgpt.learning.question_generator import generate_questions
from webgpt.learning.quote_comparisons import (
    ServedSentences,
    episode_evidence_rows,
    evidence_rows,
    first_sentence,
    other_page_rows,
    quote_rows,
)
from webgpt.reward.data import load_comparisons, quote_text
from webgpt.service.cli import main

CROW = "https://en.wikipedia.org/wiki/Crow"
MONA_LISA = "https://en.wikipedia.org/wiki/Mona_Lisa"  # a dev page of the learning web


def test_rows_pit_the_answering_sentence_against_another_of_its_page(
    learning_store: Path, tmp_path: Path
) -> None:
    store = OfflineWeb(learning_store)
    questions = list(generate_questions(store, per_page=5))
    by_text = {q.question: q for q in questions}
    pages = ServedSentences(store)
    rows = list(quote_rows(questions, pages))
    assert rows and {r["preference"] for r in rows} == {"a", "b"}  # the winner's side is drawn
    for row in rows:
        question = by_text[row["question"]]
        assert question.kind == "factoid" and split_of(row["url"]) == "train"
        winner = row[f"quote_{row['preference']}"]
        loser = row["quote_b" if row["preference"] == "a" else "quote_a"]
        title, sentences = pages.of(row["url"])
        assert row["title"] == title and {winner, loser} <= set(sentences)  # as served
        assert contains_gold(winner, question.gold_answers)
        assert not contains_gold(loser, question.gold_answers)
        assert row["source"] == "synthetic"
    assert pages.of(MONA_LISA) == ("", [])  # no dev page is read
    assert not any(by_text[r["question"]].url == MONA_LISA for r in rows)

    path = tmp_path / "quotes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    comparisons, report = load_comparisons([path])  # what `webgpt train rm` reads
    assert report.skipped == [] and len(comparisons) == len(rows)
    first, row = comparisons[0], rows[0]
    assert first.text_a == quote_text(row["question"], row["title"], row["quote_a"])
    assert first.label == (1.0 if row["preference"] == "a" else 0.0)


class _LongPage(ServedSentences):
    """One long manual page as served: filler, a few sentences about the setting asked
    about far from the answer, and the answer deep in the page."""

    URL = "https://manual.example/config.html"
    ANSWER = "The default port of the shelf server is 7411."

    def __init__(self) -> None:
        sentences = [f"Section {n} describes table layout number {n}." for n in range(300)]
        for n in range(5, 240, 6):
            sentences[n] = f"The shelf server reads port setting {n} once at start."
        sentences[250] = self.ANSWER
        self.sentences = sentences

    def of(self, url: str) -> tuple[str, list[str]]:
        return ("Server configuration", self.sentences) if url == self.URL else ("", [])


def test_page_negatives_pit_the_answer_against_far_sentences_a_quote_would_read() -> None:
    page = _LongPage()
    asked = Question(question="what port does the shelf server listen on by default",
                     kind="factoid", gold_answers=["7411"], url=page.URL,
                     evidence=page.ANSWER, split="train")  # fmt: skip
    near_only = list(quote_rows([asked], page, negatives=3))
    with_far = list(quote_rows([asked], page, negatives=3, page_negatives=2))
    assert len(near_only) == 3 and with_far[:3] == near_only  # the near rows as before
    at = page.sentences.index(page.ANSWER)
    for row in with_far:
        winner, loser = _sides(row)
        assert winner == page.ANSWER and not contains_gold(loser, asked.gold_answers)
    far = [_sides(row)[1] for row in with_far[3:]]
    assert len(far) == 2
    assert all(abs(page.sentences.index(s) - at) > MAX_QUOTE_CHOICES for s in far)
    # what the ranker reads at the page's opening: the sentences holding the question's words
    assert set(far) <= set(page_candidates(asked.question, page.sentences))
    assert all("shelf server" in s for s in far)


# Pages whose sentences hold a question's words; Kazan is a dev page of the learning web.
_BIRDS = {
    "Crow": "Crows remember a human face for years. Crows are black birds.",
    "Raven": "Ravens, like crows, remember a human face for months. Ravens are large.",
    "Magpie": "Magpies are noisy. Magpies, like crows, remember a human face they have seen.",
    "Jackdaw": "Jackdaws, like crows, remember a human face. Jackdaws nest in towers.",
    "Kazan": "Crows in Kazan remember a human face.",
}


def test_other_page_rows_pit_the_answer_against_what_another_result_offers(
    tmp_path: Path,
) -> None:
    """The answer, with its page's title, against the sentence the pick chooses among
    another train page's best for the question's words, in the order of the question's own
    search; a dev page is never read, and two other pages make two rows at most."""
    summaries = tmp_path / "birds.json"
    summaries.write_text(json.dumps({t: {"title": t, "extract": e} for t, e in _BIRDS.items()}))
    build_corpus(tmp_path / "web.sqlite", [("wikipedia", wikipedia_pages(summaries))])
    store = OfflineWeb(tmp_path / "web.sqlite")
    pages = ServedSentences(store)
    asked = Question(question="how long do crows remember a human face", kind="factoid",
                     gold_answers=["for years"], url=CROW,
                     evidence="Crows remember a human face for years.", split="train")  # fmt: skip
    offered: list[tuple[str, list[str]]] = []

    def last(question: str, title: str, sentences: Sequence[str]) -> str:
        offered.append((title, list(sentences)))
        return sentences[-1]

    rows = list(other_page_rows([asked], pages, store, pick=last, other_pages=2))
    found = [r.url for r in store.search_sync(question_query(asked.question), 5)]
    others = [url for url in found if url != CROW and split_of(url) == "train"]
    assert len(others) == 3 and len(rows) == 2  # the first two of the three
    for row, url, (title, sentences) in zip(rows, others[:2], offered, strict=True):
        winner, loser = _sides(row)
        loser_side = "b" if row["preference"] == "a" else "a"
        assert (winner, row[f"title_{row['preference']}"]) == (asked.evidence, "Crow")
        assert row[f"title_{loser_side}"] == title == pages.of(url)[0]
        assert loser == sentences[-1] and "for years" not in loser
        assert set(sentences) <= set(pages.of(url)[1])
    path = tmp_path / "quotes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    comparisons, report = load_comparisons([path])  # what `webgpt train rm` reads
    assert report.skipped == [] and len(comparisons) == 2
    row = rows[0]
    assert comparisons[0].text_a == quote_text(asked.question, row["title_a"], row["quote_a"])
    assert comparisons[0].text_b == quote_text(asked.question, row["title_b"], row["quote_b"])


def test_another_page_stating_the_answer_in_other_digits_is_no_loser(tmp_path: Path) -> None:
    lakes = {
        "Lake Baikal": "Lake Baikal is 1642 metres deep at its deepest. It lies in Siberia.",
        "Lake Tanganyika": "Lake Tanganyika is second only to Lake Baikal, which is "
        "1,642 metres deep. Lake Tanganyika is deep and lies in Africa, unlike Lake Baikal.",
    }
    summaries = tmp_path / "lakes.json"
    summaries.write_text(json.dumps({t: {"title": t, "extract": e} for t, e in lakes.items()}))
    build_corpus(tmp_path / "web.sqlite", [("wikipedia", wikipedia_pages(summaries))])
    store = OfflineWeb(tmp_path / "web.sqlite")
    baikal = "https://en.wikipedia.org/wiki/Lake_Baikal"
    asked = Question(question="how deep is lake baikal", kind="factoid",
                     gold_answers=["1642 metres"], url=baikal,
                     evidence=lakes["Lake Baikal"].split(". ")[0] + ".", split="train")  # fmt: skip
    offered: list[list[str]] = []

    def first(question: str, title: str, sentences: Sequence[str]) -> str:
        offered.append(list(sentences))
        return sentences[0]

    rows = list(other_page_rows([asked], ServedSentences(store), store, pick=first))
    assert len(rows) == 1 and offered[0][0].startswith("Lake Tanganyika is deep")
    assert not any("1,642" in sentence for sentence in offered[0])  # it states the answer


def test_comparisons_quotes_reads_people_written_questions(
    learning_store: Path, tmp_path: Path
) -> None:
    faces = "Crows can recognise individual human faces and remember them for years."
    written = [
        {"question": "how long do crows remember a face", "gold_answers": ["for years"],
         "url": CROW, "evidence": faces, "split": "train"},
        # its evidence is no sentence of the page: no row
        {"question": "what do crows eat", "gold_answers": ["seeds"], "url": CROW,
         "evidence": "Crows eat seeds and insects.", "split": "train"},
        {"question": "who painted the mona lisa", "gold_answers": ["Leonardo"],
         "url": MONA_LISA, "evidence": "The Mona Lisa is a portrait by Leonardo.",
         "split": "dev"},
    ]  # fmt: skip
    questions = tmp_path / "written.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in written))
    out = tmp_path / "quotes.jsonl"
    command = ["comparisons", "quotes", "--questions", str(questions), "--generated", "0"]
    assert main([*command, "--store", str(learning_store), "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["question"] for r in rows} == {"how long do crows remember a face"}
    for row in rows:
        assert row[f"quote_{row['preference']}"] == faces
        assert row["title"] == "Crow"
    assert len(rows) == 3  # every other sentence of the page, none holding "for years"


def _sides(row: dict[str, Any]) -> tuple[str, str]:
    """(winner, loser) of a quote comparison."""
    loser = "b" if row["preference"] == "a" else "a"
    return row[f"quote_{row['preference']}"], row[f"quote_{loser}"]


def test_evidence_rows_pit_sentences_against_the_decline(learning_store: Path) -> None:
    store = OfflineWeb(learning_store)
    questions = list(generate_questions(store, per_page=5))
    by_text = {q.question: q for q in questions}
    pages = ServedSentences(store)
    rows = list(evidence_rows(questions, pages, store, pick=first_sentence))
    kinds: set[tuple[str, bool]] = set()
    for row in rows:
        question = by_text[row["question"]]
        winner, loser = _sides(row)
        decline = decline_answer(question.question)
        assert decline in (winner, loser) and winner != loser
        assert split_of(row["url"]) == "train"  # no dev or test page is trained on
        title, sentences = pages.of(row["url"])
        assert row["title"] == title and sentences
        quoted = loser if winner == decline else winner
        kinds.add((question.kind, winner == decline))
        if question.kind == "unanswerable":
            assert winner == decline
        elif question.kind == "longform":
            assert winner == quoted and quoted in question.supporting
        elif winner == decline:  # a factoid's sentence holding no gold answer
            assert not contains_gold(quoted, question.gold_answers) and quoted in sentences
        else:  # the sentence that answers it, as served
            assert contains_gold(quoted, question.gold_answers) and quoted in sentences
    assert kinds == {
        ("factoid", True), ("factoid", False), ("longform", False), ("unanswerable", True)
    }  # fmt: skip


def test_episode_evidence_rows_read_what_the_policy_quoted() -> None:
    def outcome(kind: str, correct: bool, extract: str, url: str = CROW) -> dict[str, Any]:
        return {
            "question": f"the {kind} question",
            "kind": kind,
            "correct": correct,
            "gold_answers": ["for years"] if kind == "factoid" else [],
            "quotes": [{"title": "Crow", "url": url, "extract": extract}],
        }

    holding = "Crows remember faces for years."
    lacking = "Crows are black."
    outcomes = [
        outcome("factoid", True, holding),  # the quote beats the decline
        outcome("factoid", False, lacking),  # the decline beats the quote
        outcome("unanswerable", False, lacking),  # the decline beats the quote
        outcome("factoid", False, holding),  # a wrong draft, but its quote holds the answer
        outcome("factoid", True, lacking),  # right, not from its quote: none
        outcome("longform", False, lacking),  # no gold phrase to check: none
        outcome("factoid", True, holding, MONA_LISA),  # a dev page: none
    ]
    rows = list(episode_evidence_rows(outcomes))
    factoid, unanswerable = "the factoid question", "the unanswerable question"
    assert [(r["question"], *_sides(r)) for r in rows] == [
        (factoid, holding, decline_answer(factoid)),
        (factoid, decline_answer(factoid), lacking),
        (unanswerable, decline_answer(unanswerable), lacking),
        (factoid, holding, decline_answer(factoid)),
    ]


def test_episodes_need_declines(learning_store: Path, tmp_path: Path) -> None:
    recorded = tmp_path / "eval.json"
    recorded.write_text(json.dumps([{"outcomes": []}]))
    out = tmp_path / "quotes.jsonl"
    command = ["comparisons", "quotes", "--episodes", str(recorded), "--out", str(out)]
    assert main([*command, "--store", str(learning_store)]) != 0
    assert not out.exists()


@pytest.mark.parametrize("option", ["--page-negatives", "--other-pages"])
def test_negative_counts_are_refused(option: str, learning_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "quotes.jsonl"
    command = ["comparisons", "quotes", "--generated", "0", option, "-1"]
    assert main([*command, "--store", str(learning_store), "--out", str(out)]) != 0
    assert not out.exists()
