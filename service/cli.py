"""The `webgpt` command: one entry point, each package contributes its subcommands."""

import argparse
import logging
import sys

import agent.cli
import browser.cli
import reward.cli
from agent.errors import AgentError
from browser.errors import BrowserError
from reward.errors import RewardError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="webgpt", description="Answer questions by browsing the web, WebGPT style."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    commands = parser.add_subparsers(dest="command", required=True)
    browser.cli.register(commands)
    agent.cli.register(commands)
    reward.cli.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.run(args))
    except (BrowserError, AgentError, RewardError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
