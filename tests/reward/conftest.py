from pathlib import Path

import pytest

from reward.config import RewardTrainConfig
from reward.train import train_reward_model
from tests.reward.tiny import build_tiny_backbone, write_comparisons


@pytest.fixture(scope="session")
def reward_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny reward model trained to prefer answers saying the sky is blue ("rm-bon")."""
    folder = tmp_path_factory.mktemp("bon")
    comparisons = folder / "c.jsonl"
    write_comparisons(comparisons, stories=120)
    config = RewardTrainConfig(
        comparisons=[comparisons],
        backbone=build_tiny_backbone(folder / "backbone"),
        out=folder / "registry",
        version="rm-bon",
        epochs=4,
        learning_rate=3e-3,
        ema_decay=0.9,
        validation_fraction=0.2,
        max_length=96,
    )
    return train_reward_model(config, log=lambda _: None).checkpoint
