"""The comparisons the decline judgment learns from: an answer against the decline from the
same quotes, the winner decided by whether the quotes hold a gold answer."""

import json
from collections import Counter
from pathlib import Path

from webgpt.agent.declines import decline_answer
from webgpt.browser.offline import OfflineWeb
from webgpt.evals.questions import contains_gold, split_of
from webgpt.learning.decline_comparisons import balanced, decline_rows
from webgpt.learning.question_generator import generate_questions
from webgpt.reward.data import load_comparisons


def test_rows_pit_an_answer_against_the_decline_from_the_same_quotes(
    learning_store: Path, tmp_path: Path
) -> None:
    store = OfflineWeb(learning_store)
    questions = list(generate_questions(store, per_page=5))
    by_text = {q.question: q for q in questions}
    rows = list(decline_rows(questions, store, split="train"))
    assert set(Counter(r["why"] for r in rows)) == {
        "holds",
        "same page, no answer",
        "another page",
        "unanswerable",
    }
    for row in rows:
        question = by_text[row["question"]]
        winner = row[row["preference"]]
        loser = row["b" if row["preference"] == "a" else "a"]
        assert winner["quotes"] == loser["quotes"] and row["source"] == "synthetic"
        assert all(split_of(q["url"]) == "train" for q in winner["quotes"])  # no dev page
        quoted = " ".join(q["extract"] for q in winner["quotes"])
        decline = decline_answer(question.question)
        if row["why"] == "holds":
            assert loser["answer"] == decline and winner["answer"] != decline
            if question.kind == "factoid":
                assert contains_gold(winner["answer"], question.gold_answers)
                assert contains_gold(quoted, question.gold_answers)
        else:  # the quote holds no answer: the decline wins over an answer copying it
            assert winner["answer"] == decline and loser["answer"].endswith("[1].")
            assert loser["answer"][:20] == winner["quotes"][0]["extract"][:20]
            assert not contains_gold(quoted, question.gold_answers)
    assert {r["preference"] for r in rows} == {"a", "b"}  # the winner's side is drawn

    kept = balanced(rows)
    wins = Counter(r["why"] == "holds" for r in kept)
    assert wins[True] == wins[False] == min(wins[True], len(rows) - wins[True])
    path = tmp_path / "declines.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in kept))
    comparisons, report = load_comparisons([path])  # what `webgpt train rm` reads
    assert report.skipped == [] and len(comparisons) == len(kept)
    assert {c.label for c in comparisons} <= {0.0, 1.0}
