"""A quote ranker: a reward model trained on quote comparisons (the sentence that answers
the question against another of its page), scoring the sentences in view in this process."""

import json
import random
from pathlib import Path

import pytest

from tests.reward.tiny import COLORS, train_tiny_reward_model
from webgpt.agent.quote_ranking import ranked_quotes
from webgpt.reward.data import load_comparisons, quote_text
from webgpt.reward.quote_scorer import QuoteScorer


def sky(story: int, color: str) -> str:
    # ends on a word of its own: the prompt's separator follows the quote unspaced
    return f"in story {story} the sky is {color} today"


def write_quote_comparisons(path: Path, stories: int, seed: int = 0) -> None:
    """Known preference: the sentence saying the sky is blue answers the question."""
    rng = random.Random(seed)
    rows = []
    for story in range(stories):
        for other in rng.sample(COLORS[1:], 3):
            first = rng.random() < 0.5
            good, bad = sky(story, "blue"), sky(story, other)
            rows.append(
                {
                    "question": f"what color is the sky in story {story}",
                    "title": "Sky notes",
                    "quote_a": good if first else bad,
                    "quote_b": bad if first else good,
                    "preference": "a" if first else "b",
                }
            )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture(scope="module")
def ranker_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("quote-ranker")
    comparisons = folder / "quotes.jsonl"
    write_quote_comparisons(comparisons, stories=120)
    return train_tiny_reward_model(folder, comparisons, "quotes-test")


async def test_the_ranker_scores_the_answering_sentence_highest(ranker_checkpoint: Path) -> None:
    scorer = QuoteScorer(ranker_checkpoint)
    try:
        assert scorer.name == "quotes-test"
        question = "what color is the sky in story 150"  # a story never trained on
        sentences = [sky(150, color) for color in ("green", "red", "blue", "purple")]
        scores = await scorer.rank(question, "Sky notes", sentences)
        assert scores.index(max(scores)) == 2, scores
        assert await ranked_quotes(scorer, question, "Sky notes", sentences, 1) == [sentences[2]]
    finally:
        await scorer.aclose()


async def test_the_ranker_scores_in_bf16_where_the_cpu_computes_it(
    ranker_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In this process the weights are bf16 on a CPU with native bf16 (as vLLM serves them
    there), float32 on one without, and bf16 picks what float32 picks."""
    import torch

    from webgpt.reward import quote_scorer

    question = "what color is the sky in story 150"
    sentences = [sky(150, color) for color in ("green", "red", "blue", "purple")]
    scores = {}
    for native, dtype in [(True, torch.bfloat16), (False, torch.float32)]:
        monkeypatch.setattr(quote_scorer, "cpu_has_native_bf16", lambda native=native: native)
        scorer = QuoteScorer(ranker_checkpoint, device="cpu")
        try:
            assert scorer._local is not None
            assert {p.dtype for p in scorer._local.model.parameters()} == {dtype}
            scores[dtype] = await scorer.rank(question, "Sky notes", sentences)
        finally:
            await scorer.aclose()
    assert scores[torch.bfloat16].index(max(scores[torch.bfloat16])) == 2
    assert scores[torch.bfloat16] == pytest.approx(scores[torch.float32], abs=0.5)


async def test_a_sentence_seen_again_is_not_scored_again(
    ranker_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scorer = QuoteScorer(ranker_checkpoint)
    scored: list[list[str]] = []
    score_texts = scorer._scorer.score_texts

    def counted(texts: list[str]) -> list[float]:
        scored.append(texts)
        return score_texts(texts)

    monkeypatch.setattr(scorer._scorer, "score_texts", counted)
    try:
        question = "what color is the sky in story 7"
        first = await scorer.rank(question, "Sky notes", [sky(7, "blue"), sky(7, "red")])
        again = await scorer.rank(
            question, "Sky notes", [sky(7, "red"), sky(7, "green"), sky(7, "blue")]
        )
        assert again[0] == first[1] and again[2] == first[0]
        assert scored == [
            [quote_text(question, "Sky notes", sky(7, c)) for c in ("blue", "red")],
            [quote_text(question, "Sky notes", sky(7, "green"))],  # the one new sentence
        ]
    finally:
        await scorer.aclose()


def test_bad_quote_rows_are_reported_and_skipped(tmp_path: Path) -> None:
    good = {"question": "q", "title": "T", "quote_a": "one", "quote_b": "two", "preference": "a"}
    path = tmp_path / "quotes.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(row)
            for row in [
                good,
                {**good, "title_a": "U", "title_b": "V", "preference": "b"},  # two pages
                {**good, "quote_b": "one"},
                {**good, "preference": "tie"},
                {**good, "quote_a": ""},
                {**good, "title": 3},
                {**good, "title_b": None},
            ]
        )
    )
    comparisons, report = load_comparisons([path])
    assert [c.label for c in comparisons] == [1.0, 0.0]
    assert comparisons[0].text_a == quote_text("q", "T", "one")
    assert comparisons[1].text_a == quote_text("q", "U", "one")
    assert comparisons[1].text_b == quote_text("q", "V", "two")
    reasons = [reason for _, _, reason in report.skipped]
    assert reasons == [
        "quote_a and quote_b are the same sentence",
        "preference must be a or b; got 'tie'",
        "quote_a must be a non-empty string",
        "the title of quote_a must be a string",
        "the title of quote_b must be a string",
    ]


async def test_a_margin_chosen_on_dev_is_recorded_in_the_ranker_s_manifest(
    ranker_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """scripts/evidence_declines.py --record writes it into the checkpoint's manifest and
    each --also folder's; the files' digests still verify, and the loaded ranker offers it
    to the episodes as their decline margin."""
    import shutil
    import sys

    from tests.scripts import load_script
    from webgpt.reward.manifest import load_reward_manifest

    folder, also = tmp_path / "ranker", tmp_path / "adapter"
    for copy in (folder, also):
        shutil.copytree(ranker_checkpoint, copy)
    unrecorded = QuoteScorer(folder)
    assert unrecorded.evidence_margin is None  # trained without a margin
    await unrecorded.aclose()
    script = ["evidence_declines.py", "--ranker", str(folder), "--record", "-4.5"]
    monkeypatch.setattr(sys, "argv", [*script, "--also", str(also)])
    load_script("evidence_declines").main()
    for copy in (folder, also):
        manifest = load_reward_manifest(copy, verify=True)
        assert manifest.metrics["evidence_margin"] == -4.5
        assert (
            manifest.metrics["offset"] == load_reward_manifest(ranker_checkpoint).metrics["offset"]
        )
        assert sorted(p.name for p in copy.iterdir()) == sorted(
            p.name for p in ranker_checkpoint.iterdir()
        )
    recorded = QuoteScorer(folder)
    assert recorded.evidence_margin == -4.5
    await recorded.aclose()
