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
    serve = commands.add_parser("serve", help="run the answering service (HTTP)")
    serve.add_argument("--host", default=None, help="default: $WEBGPT_HOST or 127.0.0.1")
    serve.add_argument("--port", type=int, default=None, help="default: $WEBGPT_PORT or 8080")
    serve.add_argument("--engine", default=None, help="default: $WEBGPT_ENGINE or offline")
    serve.add_argument("--policy-url", default=None)
    serve.add_argument("--policy-model", default=None)
    serve.add_argument("--reward-model", default=None)
    serve.set_defaults(run=_serve)
    return parser


def _serve(args: argparse.Namespace) -> int:
    from service.server import serve
    from service.settings import ServiceSettings

    overrides = {
        name: value
        for name in ("host", "port", "engine", "policy_url", "policy_model", "reward_model")
        if (value := getattr(args, name)) is not None
    }
    serve(ServiceSettings(**overrides))
    return 0


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
