"""The `webgpt` command: one entry point, each package contributes its subcommands."""

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from webgpt.agent import cli as agent_cli
from webgpt.agent.errors import AgentError, ConfigurationError
from webgpt.agent.model import DEFAULT_REWARD
from webgpt.browser import cli as browser_cli
from webgpt.browser.errors import BrowserError
from webgpt.evals import cli as evals_cli
from webgpt.infra.errors import InfraError
from webgpt.learning import cli as learning_cli
from webgpt.reward import cli as reward_cli
from webgpt.reward.errors import RewardError

if TYPE_CHECKING:
    from webgpt.service.settings import ServiceSettings
    from webgpt.service.store import FeedbackStore

REWARD_HELP = (
    "the reward model that picks the best of a request's episodes (n > 1): a checkpoint "
    f"folder or registry alias; `{DEFAULT_REWARD}`: the shipped one, prepared and loaded by the "
    "first request for more than one episode, then followed through registry/reward/current; "
    f"`none`: best-of-n off, n must be 1 (default: $WEBGPT_REWARD_MODEL, else {DEFAULT_REWARD})"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="webgpt", description="Answer questions by browsing the web, WebGPT style."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    commands = parser.add_subparsers(dest="command", required=True)
    browser_cli.register(commands)
    model_commands = agent_cli.register(commands)
    learning_cli.register(commands)
    evals_cli.register(commands)
    evals_cli.register_promote(model_commands)
    train = commands.add_parser("train", help="offline training")
    kinds = train.add_subparsers(dest="train_command", required=True)
    learning_cli.register_train(kinds)
    reward_cli.register_train(kinds)
    serve = commands.add_parser("serve", help="run the answering service (HTTP)")
    serve.add_argument("--host", default=None, help="default: $WEBGPT_HOST or 127.0.0.1")
    serve.add_argument("--port", type=int, default=None, help="default: $WEBGPT_PORT or 8080")
    serve.add_argument("--engine", default=None, help="default: $WEBGPT_ENGINE or offline")
    serve.add_argument("--policy-url", default=None)
    serve.add_argument("--policy-model", default=None)
    serve.add_argument("--reward-model", default=None, help=REWARD_HELP)
    serve.set_defaults(run=_serve)
    mcp = commands.add_parser(
        "mcp",
        help="the MCP server on stdin/stdout, for an agent host or IDE (docs/mcp.md)",
    )
    mcp.add_argument("--engine", default=None, help="default: $WEBGPT_ENGINE or offline")
    mcp.add_argument("--policy-url", default=None)
    mcp.add_argument("--policy-model", default=None)
    mcp.add_argument("--reward-model", default=None, help=REWARD_HELP)
    mcp.set_defaults(run=_mcp)
    feedback = commands.add_parser("feedback", help="human feedback the service recorded")
    feedback_commands = feedback.add_subparsers(dest="feedback_command", required=True)
    export = feedback_commands.add_parser(
        "export",
        help="comparisons as JSONL for `webgpt train rm`, or with --demonstrations the "
        "demonstrations for `webgpt train bc` (stdout or --out)",
    )
    export.add_argument(
        "--demonstrations",
        action="store_true",
        help="export demonstrations (their commands replayed on the offline web to record "
        "the observations)",
    )
    export.add_argument("--store", type=Path, default=None, help="offline web file")
    export.add_argument(
        "--db",
        default=None,
        help="a SQLite file or a PostgreSQL URL; default: $WEBGPT_DATABASE_URL, else "
        "$WEBGPT_FEEDBACK_DB or $WEBGPT_HOME/feedback.sqlite",
    )
    export.add_argument("--out", type=Path, default=None)
    export.set_defaults(run=_export_feedback)
    return parser


def _export_feedback(args: argparse.Namespace) -> int:
    from webgpt.service.settings import ServiceSettings
    from webgpt.service.store import FeedbackStore, is_url

    database: str | Path
    if args.db is None:
        database = ServiceSettings().database()
    else:
        database = args.db if is_url(args.db) else Path(args.db)
    if isinstance(database, Path) and not database.is_file():
        raise SystemExit(f"error: no feedback database at {database}")
    store = FeedbackStore(database)
    # Row by row from the database to the file: memory stays flat however many rows there
    # are; a file is written beside its name and renamed when whole.
    partial = None if args.out is None else args.out.with_name(args.out.name + ".partial")
    try:
        with contextlib.nullcontext(sys.stdout) if partial is None else partial.open("w") as out:
            if args.demonstrations:
                count = asyncio.run(_write_demonstrations(store, args.store, out))
            else:
                count = 0
                for row in store.export_comparisons():
                    out.write(json.dumps(row) + "\n")
                    count += 1
        if partial is not None:
            partial.replace(args.out)
    finally:
        store.close()
        if partial is not None:
            partial.unlink(missing_ok=True)
    kind = "demonstrations" if args.demonstrations else "comparisons"
    print(f"{count} {kind} exported", file=sys.stderr)
    return 0


async def _write_demonstrations(
    store: "FeedbackStore", offline_store: Path | None, out: TextIO
) -> int:
    """Records recorded in the page as they are; posted commands replayed to record them.
    The number written."""
    from webgpt.browser.web import offline_web
    from webgpt.learning.demonstrations import Demonstration, record_commands

    web = offline_web(offline_store)
    count = 0
    try:
        for row_id, question, format, stored in store.export_demonstrations():
            if format == "demonstration":
                demo = Demonstration.model_validate(stored)
            else:
                demo = await record_commands(
                    web.session(),
                    question,
                    stored["commands"],
                    stored["answer"],
                    f"feedback-{row_id}",
                )
            out.write(demo.to_json() + "\n")
            count += 1
    finally:
        await web.aclose()
    return count


def _settings(args: argparse.Namespace) -> "ServiceSettings":
    """The service's settings, the command line's options over the environment's."""
    from pydantic import ValidationError

    from webgpt.service.settings import ServiceSettings

    names = ("host", "port", "engine", "policy_url", "policy_model", "reward_model")
    overrides = {name: value for name in names if (value := getattr(args, name, None)) is not None}
    try:
        settings = ServiceSettings(**overrides)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}" for e in error.errors()
        )
        raise ConfigurationError(f"invalid settings: {problems}") from None
    return settings


def _serve(args: argparse.Namespace) -> int:
    from webgpt.service.server import serve

    serve(_settings(args))
    return 0


def _mcp(args: argparse.Namespace) -> int:
    """stdout carries the protocol: everything else (progress, logs) goes to stderr."""
    from webgpt.service.mcp_server import run_stdio
    from webgpt.service.server import build_service

    asyncio.run(run_stdio(build_service(_settings(args))))
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # SIGTERM (a job scheduler, `kill`, a container stop) ends a command as Ctrl-C does, so
    # its cleanup runs: a vLLM server started for the run is stopped, not left holding the
    # port and the cores. (`webgpt serve` runs uvicorn, which installs its own handlers.)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        return int(args.run(args))
    except (BrowserError, AgentError, RewardError, InfraError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
