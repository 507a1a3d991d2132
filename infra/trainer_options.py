"""How every `webgpt train` command reads its options.

A trainer's options are the fields of its config dataclass, help from their metadata, as
TRL's scripts take theirs: TRL's `TrlParser` (transformers' `HfArgumentParser`) makes one
flag a field (`--learning-rate` and `--learning_rate` alike), and `--config run.yaml` gives
values that flags on the command line override. The configs of `webgpt train bc` and
`webgpt train rl` subclass transformers' `TrainingArguments` and TRL's `GRPOConfig`, so
every option of the underlying trainer is reachable too. Those import torch, so the parser
is built when the command runs, not when `webgpt` starts: `webgpt serve` and the slim
service image never import a trainer. In infra, the lowest layer, because the configs of
reward and learning both use it (`Repeatable`).
"""

import argparse
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from webgpt.infra.errors import OptionsError
from webgpt.infra.known_warnings import trainer_import_warnings_silenced

Config = TypeVar("Config")

# The `webgpt train NAME` subparser passes every string on to the trainer's own parser:
# with a prefix no option uses, argparse takes none of them for an option of its own.
_PASS_THROUGH = "\x00"


class Repeatable(argparse.Action):
    """A list option that may be given many times (`--demonstrations a.jsonl b.jsonl
    --demonstrations c.jsonl`: all three); its first use on the command line replaces a
    list that a `--config` file gave, as every other flag replaces a value of the file."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        current = getattr(namespace, self.dest, None)
        given = [] if current is None or current is self.default else list(current)
        setattr(namespace, self.dest, [*given, *values])


def add_trainer_command(
    kinds: "argparse._SubParsersAction[argparse.ArgumentParser]",
    name: str,
    help: str,
    run: Callable[[argparse.Namespace], int],
) -> None:
    """`webgpt train NAME`: `run` gets the strings after NAME as `args.options` and parses
    them with `parse_config` (so `--help` lists the trainer's options, all of them)."""
    command = kinds.add_parser(
        name,
        help=f"{help} (--help lists every option; --config FILE.yaml)",
        add_help=False,
        prefix_chars=_PASS_THROUGH,
    )
    command.add_argument("options", nargs=argparse.REMAINDER)
    command.set_defaults(run=run)


def config_parser(config_class: type, prog: str) -> Any:
    """TRL's parser for one config dataclass; YAML keys may be spelt as the options are
    (`epochs`, `batch-size`: aliases of `num_train_epochs`, `per_device_train_batch_size`)."""
    with trainer_import_warnings_silenced():
        from trl.scripts.utils import TrlParser

    class Parser(TrlParser):
        def set_defaults_with_config(self, **values: Any) -> list[str]:
            names = {
                option.lstrip("-").replace("-", "_"): action.dest
                for action in self._actions
                for option in action.option_strings
            }
            by_dest = {names.get(key.replace("-", "_"), key): v for key, v in values.items()}
            remaining: list[str] = super().set_defaults_with_config(**by_dest)
            return remaining

    dataclass_type: Any = config_class
    # no abbreviations: among TrainingArguments' many options a prefix often names another
    # (`--num_generations` is one of `--num_generations_eval`)
    parser = Parser(
        dataclass_type,
        prog=prog,
        allow_abbrev=False,
        description="--config FILE.yaml gives options from a file (its keys the options' "
        "names, e.g. `learning_rate: 3.0e-4`); flags on the command line override them.",
    )
    # --help lists the config's own fields (and the inherited ones it redefines) first,
    # then the trainer's ~150 others
    own = {name: at for at, name in enumerate(["help", *config_class.__annotations__])}
    parser._actions.sort(key=lambda action: own.get(action.dest, len(own)))
    for group in parser._action_groups:
        group._group_actions.sort(key=lambda action: own.get(action.dest, len(own)))
    return parser


def parse_config(config_class: type[Config], options: Sequence[str], prog: str) -> Config:
    """The config of one run: `--config FILE` (YAML, its keys the options' names) gives
    values, flags override them. A value the config refuses is a OptionsError."""
    strings: list[str] = []
    for option in options:  # `--config=FILE` as well as `--config FILE`
        strings.extend(option.split("=", 1) if option.startswith("--config=") else [option])
    if "--config" in strings:
        at = strings.index("--config")
        if at + 1 >= len(strings):
            raise OptionsError("--config wants a YAML file")
        path = strings[at + 1]
        try:
            open(path).close()
        except OSError as error:
            raise OptionsError(f"--config {path}: {error.strerror}") from error
    parser = config_parser(config_class, prog)
    try:
        (config,) = parser.parse_args_and_config(strings)
    except ValueError as error:  # a YAML key no option has; a value TrainingArguments refuses
        raise OptionsError(str(error)) from error
    assert isinstance(config, config_class)
    return config
