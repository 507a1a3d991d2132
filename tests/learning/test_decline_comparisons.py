"""The comparisons the decline judgment learns from: an answer against the decline from the
same quotes, the winner decided by whether the quotes hold a gold answer."""

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from webgpt.agent.declines import decline_answer
from webgpt.browser.offline import OfflineWeb
from webgpt.evals.questions import contains_gold, split_of
from webgpt.learning.decline_comparisons import balanced, decline_rows, episode_rows
from webgpt.learning.question_generator import generate_questions
from webgpt.reward.data import load_comparisons
from webgpt.service.cli import main


def test_rows_pit_an_answer_against_the_decline_from_the_same_quotes(
    learning_store: Path, tmp_path: Path
) -> None:
    store = OfflineWeb(learning_store)
    questions = list(generate_questions(store, per_page=5))
    by_text = {q.question: q for q in questions}
    picked: list[str] = []

    def last(question: str, title: str, sentences: Sequence[str]) -> str:
        """A ranker's pick of the sentences a page offers: here, the last."""
        picked.append(sentences[-1])
        return sentences[-1]

    rows = list(decline_rows(questions, store, split="train", pick=last))
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
            assert winner["quotes"][0]["extract"] in picked
    assert {r["preference"] for r in rows} == {"a", "b"}  # the winner's side is drawn

    kept = balanced(rows)
    wins = Counter(r["why"] == "holds" for r in kept)
    assert wins[True] == wins[False] == min(wins[True], len(rows) - wins[True])
    path = tmp_path / "declines.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in kept))
    comparisons, report = load_comparisons([path])  # what `webgpt train rm` reads
    assert report.skipped == [] and len(comparisons) == len(kept)
    assert {c.label for c in comparisons} <= {0.0, 1.0}


def _outcome(kind: str, answer: str, correct: bool, quotes: list[dict[str, str]]) -> dict:
    return {
        "question": "who built the bridge",
        "kind": kind,
        "gold_answers": ["Ada Stone"] if kind != "unanswerable" else [],
        "answer": answer,
        "correct": correct,
        "declined": False,
        "degenerate": None,
        "quotes": quotes,
    }


def _recorded() -> list[dict]:
    """Outcomes as `webgpt eval --json-out` records them, one of each kind of episode."""
    urls = [f"https://en.wikipedia.org/wiki/Bridge_{n}" for n in range(40)]
    train = [u for u in urls if split_of(u) == "train"]
    other = next(u for u in urls if split_of(u) != "train")
    holding = {"title": "Bridge", "url": train[0], "extract": "Ada Stone built the bridge."}
    lacking = {"title": "Bridge", "url": train[1], "extract": "The bridge is long."}
    elsewhere = {"title": "Bridge", "url": other, "extract": "Ada Stone built the bridge."}
    drafted = "Ada Stone built the bridge [1]."
    return [
        _outcome("factoid", drafted, True, [holding]),  # right from its quote: the answer wins
        _outcome("factoid", "The bridge is long [1].", False, [lacking]),  # wrong: the decline
        _outcome("unanswerable", "The bridge is long [1].", False, [lacking]),  # the decline
        _outcome("factoid", drafted, True, [lacking]),  # right, not from its quotes: no row
        _outcome("factoid", drafted, True, [elsewhere]),  # a page of another split: no row
        _outcome("longform", drafted, False, [holding]),  # no gold phrase to judge: no row
        {
            **_outcome("factoid", decline_answer("who built the bridge"), False, [lacking]),
            "declined": True,
        },  # a decline: nothing drafted to judge
    ]


def test_episode_rows_judge_the_policys_own_drafts_by_their_gold_answer() -> None:
    outcomes = _recorded()
    rows = list(episode_rows(outcomes, split="train", seed=1))
    assert [r["why"] for r in rows] == ["holds", "wrong draft", "unanswerable, drafted"]
    decline = decline_answer("who built the bridge")
    for row, outcome in zip(rows, outcomes, strict=False):
        winner = row[row["preference"]]
        loser = row["b" if row["preference"] == "a" else "a"]
        assert (
            winner["quotes"]
            == loser["quotes"]
            == [{**q, "domain": "en.wikipedia.org"} for q in outcome["quotes"]]
        )
        drafted_side, decline_side = (winner, loser) if row["why"] == "holds" else (loser, winner)
        assert drafted_side["answer"] == outcome["answer"] and decline_side["answer"] == decline
        assert row["split"] == "train"


def test_comparisons_declines_reads_recorded_episodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = tmp_path / "eval.json"
    recorded.write_text(json.dumps([{"figures": {}, "outcomes": _recorded()}]))
    out = tmp_path / "rows.jsonl"
    assert main(["comparisons", "declines", "--episodes", str(recorded), "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    whys = sorted(r["why"] for r in rows)  # balanced: one the answer wins, one the decline
    assert whys[0] == "holds" and whys[1] in {"unanswerable, drafted", "wrong draft"}
    assert "wrote 2 comparisons" in capsys.readouterr().err

    older = tmp_path / "older.json"  # recorded before outcomes kept their quotes
    older.write_text(json.dumps([{"figures": {}, "outcomes": [{"question": "q"}]}]))
    assert main(["comparisons", "declines", "--episodes", str(older), "--out", str(out)]) == 1
    assert "keep no quotes; record it anew" in capsys.readouterr().err
    assert main(["comparisons", "declines", "--episodes", str(out), "--out", str(out)]) == 1
    assert "not a `webgpt eval --json-out` file" in capsys.readouterr().err
    assert len(out.read_text().splitlines()) == 2  # a refused input overwrites nothing
