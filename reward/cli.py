"""`webgpt train rm`: options come from RewardTrainConfig's fields and their help."""

import argparse
import dataclasses
import typing
from typing import Any

from webgpt.reward.config import RewardTrainConfig


def add_dataclass_options(parser: argparse.ArgumentParser, config: type) -> None:
    """One --option per dataclass field; list fields repeat, fields without default are required."""
    hints = typing.get_type_hints(config)
    for field in dataclasses.fields(config):
        kind = hints[field.name]
        option = "--" + field.name.replace("_", "-")
        kwargs: dict[str, Any] = {"help": field.metadata.get("help", ""), "dest": field.name}
        if typing.get_origin(kind) is list:
            kwargs.update(type=typing.get_args(kind)[0], action="append")
        elif kind is bool:  # a flag: --name sets it, --no-name clears it
            kwargs["action"] = argparse.BooleanOptionalAction
        elif type(None) in typing.get_args(kind):  # `X | None`: the option takes an X
            kwargs["type"] = next(a for a in typing.get_args(kind) if a is not type(None))
        else:
            kwargs["type"] = kind
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            kwargs["required"] = True
        else:
            kwargs["default"] = field.default
            kwargs["help"] += f" (default: {field.default})"
        parser.add_argument(option, **kwargs)


def register_train(kinds: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """`webgpt train rm` (service.cli makes the `train` group every trainer joins)."""
    rm = kinds.add_parser("rm", help="train a reward model on pairwise comparisons")
    add_dataclass_options(rm, RewardTrainConfig)
    rm.set_defaults(run=_train_rm)


def _train_rm(args: argparse.Namespace) -> int:
    from webgpt.reward.train import train_reward_model  # torch: only when training

    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(RewardTrainConfig)}
    result = train_reward_model(RewardTrainConfig(**values))
    print(result.checkpoint)
    return 0
