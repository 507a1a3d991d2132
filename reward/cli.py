"""`webgpt train rm`: options from RewardTrainConfig's fields (infra.trainer_options)."""

import argparse

from webgpt.infra.trainer_options import add_trainer_command, parse_config


def register_train(kinds: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """`webgpt train rm` (service.cli makes the `train` group every trainer joins)."""
    add_trainer_command(kinds, "rm", "train a reward model on pairwise comparisons", _train_rm)


def _train_rm(args: argparse.Namespace) -> int:
    from webgpt.reward.config import RewardTrainConfig
    from webgpt.reward.train import train_reward_model  # torch: only when training

    config = parse_config(RewardTrainConfig, args.options, "webgpt train rm")
    result = train_reward_model(config)
    print(result.checkpoint)
    return 0
