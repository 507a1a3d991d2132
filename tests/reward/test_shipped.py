"""The shipped reward model (agent/weights/rm-synthetic-v5) and quote ranker
(agent/weights/quotes-v2): `webgpt model prepare` merges each adapter onto the weights of
the policy it was trained on (v5, shipped for that; v14, the default's parent), and the
result scores what the model scored when it was trained.

shipped_reference.json holds the first three decided pairs (file order) of the held-out
comparisons the reward model was measured on (`cmp-q-dev.jsonl`, docs/reward.md) with the
rewards the trained full-precision checkpoint gave them (`RewardScorer(...).score_texts`);
shipped_quote_reference.json three of the ranker's training comparisons (the sentence that
answers a question against another of its page) with its checkpoint's scores. Adapters
ship in bf16, which moves rewards by about 1e-3.
"""

import asyncio
import json
from pathlib import Path

import pytest

from webgpt.agent.model import (
    DEFAULT_QUOTE_RANKER_VERSION,
    DEFAULT_REWARD_VERSION,
    SHIPPED_QUOTE_RANKER,
    prepare_default_quote_ranker,
    prepare_default_reward_model,
)
from webgpt.infra.checkpoints import load_manifest

pytestmark = pytest.mark.slow

REFERENCE = Path(__file__).parent / "shipped_reference.json"
QUOTE_REFERENCE = Path(__file__).parent / "shipped_quote_reference.json"
SHIPPED_LIMIT = 20_000_000  # bytes: what the repository may hold of a trained artifact


def test_the_shipped_adapter_is_small_and_says_what_it_measured() -> None:
    from webgpt.agent.model import SHIPPED_REWARD_ADAPTER

    manifest = load_manifest(SHIPPED_REWARD_ADAPTER, verify=True)
    size = sum(p.stat().st_size for p in SHIPPED_REWARD_ADAPTER.iterdir())
    assert size <= SHIPPED_LIMIT
    assert manifest.kind == "reward" and manifest.version == DEFAULT_REWARD_VERSION
    held_out = manifest.metrics["held_out"]  # docs/reward.md reports these figures
    assert held_out["pairs"] >= 100 and held_out["accuracy"] > 0.5
    assert (SHIPPED_REWARD_ADAPTER / "DATA_CARD.md").is_file()


def test_the_prepared_reward_model_scores_what_training_measured() -> None:
    from webgpt.reward.scorer import RewardScorer

    folder = prepare_default_reward_model(print)
    assert (folder.parent / "current").is_symlink()
    reference = json.loads(REFERENCE.read_text())
    assert reference["version"] == DEFAULT_REWARD_VERSION
    scorer = RewardScorer(folder)
    texts = [text for pair in reference["pairs"] for text in (pair["better"], pair["worse"])]
    scores = scorer.score_texts(texts)
    expected = [
        r for pair in reference["pairs"] for r in (pair["better_reward"], pair["worse_reward"])
    ]
    assert scores == pytest.approx(expected, abs=0.05)


def test_the_shipped_quote_ranker_is_small_and_ranks_as_training_measured() -> None:
    from webgpt.reward.quote_scorer import QuoteScorer

    manifest = load_manifest(SHIPPED_QUOTE_RANKER, verify=True)
    assert sum(p.stat().st_size for p in SHIPPED_QUOTE_RANKER.iterdir()) <= SHIPPED_LIMIT
    assert manifest.kind == "reward" and manifest.version == DEFAULT_QUOTE_RANKER_VERSION
    assert manifest.metrics["validation_accuracy"] > 0.9  # docs/reward.md reports it
    assert (SHIPPED_QUOTE_RANKER / "DATA_CARD.md").is_file()

    reference = json.loads(QUOTE_REFERENCE.read_text())
    assert reference["version"] == DEFAULT_QUOTE_RANKER_VERSION
    # float32 gives the trained checkpoint's scores; bf16 (what a CPU with native bf16
    # scores in) moves them by up to about 0.2 on scores 4 to 22 apart, not their order
    for bf16, within in [(False, 0.05), (True, 0.5)]:
        ranker = QuoteScorer(prepare_default_quote_ranker(print), bf16=bf16)
        try:
            for row in reference["rows"]:
                sentences = [row["better"], row["worse"]]
                scores = asyncio.run(ranker.rank(row["question"], row["title"], sentences))
                expected = [row["better_score"], row["worse_score"]]
                assert scores == pytest.approx(expected, abs=within)
                assert scores[0] > scores[1]
        finally:
            asyncio.run(ranker.aclose())
