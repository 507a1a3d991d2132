"""`webgpt model prepare | serve | stop | publish | promote | rollback | list`, `webgpt answer`."""

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from webgpt.agent.answer import Agent, AnswerResult
from webgpt.agent.answerability import AnswerabilitySettings, load_answerability
from webgpt.agent.episode import (
    ANSWER_MAX_ACTIONS,
    MAX_EXPLANATION_QUOTES,
    REWRITES,
    EpisodeConfig,
    answer_temperature,
)
from webgpt.agent.errors import ConfigurationError
from webgpt.agent.model import (
    DEFAULT_REWARD,
    DEFAULT_VERSION,
    default_policy_server,
    default_quote_ranker_name,
    load_quote_ranker,
    merged_adapter,
    policy_registry_dir,
    prepare_default_adapter,
    prepare_default_model,
    prepare_default_quote_ranker,
    prepare_default_reward_model,
    quote_ranker_path,
    reward_model_folder,
)
from webgpt.agent.question_kind import QuestionKindSettings, load_question_kind
from webgpt.agent.quote_ranking import QuoteRanker
from webgpt.agent.registry import PolicyRegistry, describe, is_adapter
from webgpt.agent.scoring import Scorer
from webgpt.agent.targets import POLICY_FORMAT_HELP, policy_client
from webgpt.agent.trace import (
    ActionEvent,
    EpisodeErrorEvent,
    FollowUpEvent,
    ShapedEvent,
    TraceEvent,
)
from webgpt.browser.events import (
    BrowserEvent,
    EndEvent,
    FindEvent,
    PageEvent,
    QuoteEvent,
    ScrollEvent,
    SearchEvent,
)
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import ENGINES, Web, WebOptions
from webgpt.infra.vllm_server import (
    DEFAULT_PORT,
    ServerConfig,
    find_running,
    print_progress,
    start,
    stop,
)

REGISTRY_HELP = "policy registry folder (default: $WEBGPT_HOME/registry/policy)"


def add_answer_rules(parser: argparse.ArgumentParser) -> None:
    """How answers are chosen, shared by `webgpt answer` and `webgpt eval`: the answer
    rules of guided decoding."""
    parser.add_argument(
        "--explanation-quotes",
        type=int,
        choices=range(1, MAX_EXPLANATION_QUOTES + 1),
        default=3,
        help="quotes a how/why question collects before it answers "
        '(default 3; 1: as any question; docs/questions.md, "Answer rules")',
    )
    parser.add_argument(
        "--question-kind",
        type=Path,
        default=QuestionKindSettings().question_kind,
        metavar="FOLDER",
        help="the model that reads whether a question asks how or why (`webgpt train "
        "question-kind`; default: $WEBGPT_QUESTION_KIND, as the service reads it, else the "
        'shipped one; docs/agent.md, "Explanations read by a learned model")',
    )
    parser.add_argument(
        "--no-grounded-declines",
        action="store_true",
        help="answer even when the question names something (a year, a name) no quote shows",
    )
    add_quote_ranker(parser)
    parser.add_argument(
        "--answerability",
        default=AnswerabilitySettings().answerability,
        metavar="FOLDER",
        help="decline where this answerability model (`webgpt train answerability`) judges "
        "that the collected quotes do not answer, in place of the grounded declines; `none`: "
        'off (default: $WEBGPT_ANSWERABILITY, else none; docs/agent.md, "Declines by '
        'answerability")',
    )
    parser.add_argument(
        "--evidence-declines",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with a quote ranker trained with decline rows (`webgpt comparisons quotes "
        "--declines`), decline where it scores no collected quote above the decline by more "
        "than its margin, else answer with citations; a ranker with no margin recorded "
        "decides no declines without --evidence-margin (default: on; docs/agent.md, "
        '"Declines by evidence")',
    )
    parser.add_argument(
        "--evidence-margin",
        type=float,
        default=None,
        metavar="M",
        help="how far the best quote's score must pass the decline's for an answer (default: "
        "the margin chosen on dev that the ranker's checkpoint records; "
        "scripts/evidence_declines.py)",
    )
    parser.add_argument(
        "--relevant-quotes",
        type=_quote_count,
        default=1,
        metavar="K",
        help="how many of the sentences the quote ranker scores highest a factoid's Quote may "
        "take: of those in view, or of the whole page where the policy quotes from the view "
        "the page opened at (default 1; 0: any sentence in view)",
    )
    parser.add_argument(
        "--question-search",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="an episode's first Search is the question's own words (default: on; "
        'docs/questions.md, "The question\'s own search")',
    )
    parser.add_argument(
        "--result-order",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="where the quote ranker narrows a factoid's Quote, each search shows its first "
        "results best page first, by the ranker's score of each page's best sentence "
        '(default: off; docs/agent.md, "Learned result order")',
    )
    parser.add_argument(
        "--allow-refusal",
        action="store_true",
        help="guided: offer End: Nonsense / End: Controversial, which end browsing with no "
        'answer (default: not offered; docs/agent.md, "Hand rules")',
    )
    parser.add_argument(
        "--no-rewrite",
        action="append",
        choices=sorted(REWRITES),
        default=[],
        metavar="PART",
        help="repeatable: leave out this rewrite of the policy's draft, to measure its worth "
        f'on against off ({", ".join(sorted(REWRITES))}; docs/agent.md, "Hand rules")',
    )
    parser.add_argument(
        "--decline-judge",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="a reward checkpoint that scores the drafted answer and the decline from the "
        "same quotes; the decline is served where it scores higher by more than "
        '--judge-margin (docs/agent.md, "The decline judgment")',
    )
    parser.add_argument(
        "--judge-margin",
        type=float,
        default=0.0,
        metavar="M",
        help="with --decline-judge: how far the decline's score must pass the answer's",
    )


def add_quote_ranker(parser: argparse.ArgumentParser) -> None:
    """--quote-ranker: for every command that runs episodes as the service does."""
    parser.add_argument(
        "--quote-ranker",
        type=quote_ranker_path,
        default=default_quote_ranker_name(),
        metavar="FOLDER",
        help="the learned quote ranker: a Quote for a question that asks for no explanation "
        "may take only the --relevant-quotes sentences in view it scores highest. `default`: "
        "the shipped one, prepared on first use; a folder (`webgpt comparisons quotes`, "
        "`webgpt train rm`); `none`: any sentence (default: $WEBGPT_QUOTE_RANKER, as the "
        'service reads it, else `default`; docs/agent.md, "Learned quote choice")',
    )


def add_policy_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--policy-format", choices=["completion", "chat"], default="completion",
        help=POLICY_FORMAT_HELP,
    )  # fmt: skip


def is_guided(args: argparse.Namespace) -> bool:
    """Guided decoding: on unless --no-guided, and never for a chat policy, whose tool
    calls carry no grammar (the browser's command contract still holds them)."""
    return not args.no_guided and args.policy_format == "completion"


def answer_rules(args: argparse.Namespace) -> dict[str, Any]:
    """The EpisodeConfig fields that add_answer_rules' options set."""
    return {
        "explanation_quotes": args.explanation_quotes,
        "question_kind": load_question_kind(args.question_kind),
        "grounded_declines": not args.no_grounded_declines,
        "answerability": load_answerability(args.answerability, getattr(args, "store", None)),
        "evidence_declines": args.evidence_declines,
        "evidence_margin": args.evidence_margin,
        "relevant_quotes": args.relevant_quotes or None,
        "question_search": args.question_search,
        "result_order": args.result_order,
        "allow_refusal": args.allow_refusal,
        "judge_margin": args.judge_margin,
        "rewrites": REWRITES - set(args.no_rewrite),
    }


def open_decline_judge(args: argparse.Namespace) -> Scorer | None:
    """The reward checkpoint --decline-judge names, loaded in this process; the caller
    closes it."""
    return _load_scorer(args.decline_judge, None)


def open_quote_ranker(args: argparse.Namespace) -> QuoteRanker | None:
    """The ranker --quote-ranker names, loaded in this process (none for unguided decoding,
    which has no grammar for it to narrow); the caller closes it."""
    return load_quote_ranker(args.quote_ranker if is_guided(args) else None, print_progress)


def _quote_count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of quotes, 0 for any")
    return int(text)


def register(
    commands: "argparse._SubParsersAction[argparse.ArgumentParser]",
) -> "argparse._SubParsersAction[argparse.ArgumentParser]":
    """The `model` and `answer` commands; returns the `model` group, which `webgpt model
    promote` joins from evals (its quality gate evaluates, and evals builds on agent)."""
    model = commands.add_parser("model", help="prepare, serve or stop the local policy model")
    model_commands = model.add_subparsers(dest="model_command", required=True)
    prepare = model_commands.add_parser("prepare", help="download and convert the default model")
    prepare.set_defaults(run=_prepare)
    serve = model_commands.add_parser("serve", help="run the vLLM server until Ctrl-C")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT)
    serve.add_argument(
        "--model-dir",
        type=Path,
        default=None,
        help="a checkpoint or LoRA adapter folder, served under the folder's name (default: "
        "the embedded model, under its version, for `webgpt answer` to use)",
    )
    serve.set_defaults(run=_serve)
    stopper = model_commands.add_parser("stop", help="stop the server `webgpt answer` started")
    stopper.set_defaults(run=_stop)
    publish = model_commands.add_parser(
        "publish", help="copy a policy checkpoint (LoRA adapter or full weights) into the registry"
    )
    publish.add_argument("folder", type=Path)
    publish.add_argument("--version", required=True)
    publish.add_argument("--base-model", default=None, help="needed when folder has no manifest")
    publish.add_argument("--registry", type=Path, default=None, help=REGISTRY_HELP)
    publish.set_defaults(run=_publish)
    rollback = model_commands.add_parser("rollback", help="point `current` back at `previous`")
    rollback.add_argument("--registry", type=Path, default=None, help=REGISTRY_HELP)
    rollback.set_defaults(run=_rollback)
    versions = model_commands.add_parser("list", help="the registry's policy versions")
    versions.add_argument("--registry", type=Path, default=None, help=REGISTRY_HELP)
    versions.set_defaults(run=_list)

    answer = commands.add_parser("answer", help="answer a question by browsing")
    answer.add_argument("question")
    answer.add_argument(
        "--n", type=int, default=1, help="episodes; the reward model picks the best of them"
    )
    answer.add_argument(
        "--reward-model",
        type=Path,
        default=None,
        help=f"reward checkpoint folder; `{DEFAULT_REWARD}` (and the default with --n > 1): "
        "the shipped one, prepared on first use",
    )
    answer.add_argument(
        "--reward-url", default=None, help="score on this vLLM server (…/v1) serving --reward-model"
    )
    answer.add_argument("--engine", choices=sorted(ENGINES), default=None)
    answer.add_argument("--policy-url", default=None, help="OpenAI-compatible base URL (…/v1)")
    answer.add_argument("--policy-model", default=None, help="model name at --policy-url")
    answer.add_argument("--policy-key", default=None, help="bearer key for --policy-url")
    answer.add_argument("--max-actions", type=int, default=ANSWER_MAX_ACTIONS)
    answer.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="default: 0 for one episode, 0.8 for --n > 1 (docs/eval/promotion-rules-sampling.md)",
    )
    answer.add_argument("--no-guided", action="store_true", help="do not constrain commands")
    add_policy_format(answer)
    add_answer_rules(answer)
    answer.add_argument("--js", choices=["auto", "never", "always"], default="auto")
    answer.add_argument("--json", action="store_true", help="print the full result as JSON")
    answer.add_argument(
        "--trace", action="store_true", help="print each command and what shaped it to stderr"
    )
    answer.set_defaults(run=_answer)
    return model_commands


def _prepare(args: argparse.Namespace) -> int:
    print(prepare_default_model(print_progress))
    print(prepare_default_adapter(print_progress))
    print(prepare_default_reward_model(print_progress))
    print(prepare_default_quote_ranker(print_progress))
    return 0


def registry_of(args: argparse.Namespace) -> PolicyRegistry:
    """The registry a `webgpt model ...` command names (--registry), else the default."""
    return PolicyRegistry(args.registry or policy_registry_dir())


def _publish(args: argparse.Namespace) -> int:
    manifest = registry_of(args).publish(args.folder, args.version, args.base_model)
    print(f"published {manifest.version} ({len(manifest.files)} files, base {manifest.base_model})")
    return 0


def _rollback(args: argparse.Namespace) -> int:
    aliases = registry_of(args).rollback()
    print(f"current -> {aliases.current} (previous -> {aliases.previous})")
    return 0


def _list(args: argparse.Namespace) -> int:
    print(describe(registry_of(args)))
    return 0


def served_model(model_dir: Path | None, port: int) -> tuple[ServerConfig, bool]:
    """What `webgpt model serve` runs, and whether it is recorded: the embedded default
    under its version, recorded so that `webgpt answer` uses it and `webgpt model stop`
    ends it; another checkpoint (a LoRA adapter merged into its base first) under its
    folder's name, not recorded, so that nothing takes it for the default."""
    if model_dir is None:
        return ServerConfig(prepare_default_model(print_progress), DEFAULT_VERSION, port=port), True
    folder = model_dir.expanduser().resolve()
    if not folder.is_dir():
        raise ConfigurationError(f"--model-dir {model_dir}: no checkpoint folder there")
    served = merged_adapter(folder, print_progress) if is_adapter(folder) else folder
    return ServerConfig(served, folder.name, port=port), False


def _serve(args: argparse.Namespace) -> int:
    config, record = served_model(args.model_dir, args.port)
    print_progress(
        f"starting vLLM for {config.model_dir} on {config.url} (first start compiles: minutes)"
    )
    running = start(config, print_progress, record=record)
    print_progress(f"serving {running.model} at {running.url}; Ctrl-C stops it")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print_progress("stopping vLLM")
    finally:
        stop(running)
    return 0


def _stop(args: argparse.Namespace) -> int:
    running = find_running(DEFAULT_VERSION)
    if running is None:
        print_progress("no local vLLM server is running")
        return 0
    stop(running)
    print_progress(f"stopped vLLM (pid {running.pid})")
    return 0


def _local_policy_url() -> tuple[str, str]:
    running = default_policy_server(print_progress)
    return running.url, running.model


def _answer(args: argparse.Namespace) -> int:
    if args.n < 1:
        raise ConfigurationError(f"--n {args.n}: answer with one episode or more")
    if (args.policy_url is None) != (args.policy_model is None):
        raise ConfigurationError("give --policy-url and --policy-model together")
    if args.reward_url is not None and args.reward_model is None:
        raise ConfigurationError("--reward-url needs --reward-model (the served checkpoint)")
    args.reward_model = reward_model_folder(
        args.reward_model, print_progress, default_when_none=args.n > 1
    )
    scorer = _load_scorer(args.reward_model, args.reward_url)  # fails before vLLM starts
    judge, ranker = open_decline_judge(args), open_quote_ranker(args)
    url, model = (args.policy_url, args.policy_model) if args.policy_url else _local_policy_url()
    result = asyncio.run(_answer_async(args, url, model, scorer, judge, ranker))
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print(format_answer(result))
    return 0 if result.answer is not None else 1


def _load_scorer(folder: Path | None, url: str | None) -> Scorer | None:
    if folder is None:
        return None
    from webgpt.reward.factory import open_scorer

    return open_scorer(folder, url)


async def _answer_async(
    args: argparse.Namespace,
    url: str,
    model: str,
    scorer: Scorer | None,
    judge: Scorer | None,
    ranker: QuoteRanker | None,
) -> AnswerResult:
    options = WebOptions.from_env(engine=args.engine, js_mode=args.js)
    web = Web(options)
    policy = policy_client(url, model, args.policy_key, is_guided(args), args.policy_format)
    agent = Agent(
        web,
        policy,
        scorer=scorer,
        episode=EpisodeConfig(
            temperature=answer_temperature(args.n, args.temperature),
            guided=is_guided(args),
            decline_judge=judge,
            quote_ranker=ranker,
            **answer_rules(args),
        ),
        session=SessionConfig(max_actions=args.max_actions),
    )
    try:
        emit = _print_trace if args.trace else None
        return await agent.answer(args.question, n=args.n, emit=emit)
    finally:
        await policy.aclose()
        await web.aclose()
        for model_in_process in (scorer, judge, ranker):
            if model_in_process is not None:
                await model_in_process.aclose()


async def _print_trace(event: TraceEvent) -> None:
    """One line to stderr for each trace event that says what the episode did."""
    line = _trace_line(event)
    if line is not None:
        print(_printable(line), file=sys.stderr, flush=True)


def _printable(line: str) -> str:
    """The line with every character a terminal would act on (an escape sequence, a carriage
    return, a line break) written as its escape: commands and quotes carry page text."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)


def _trace_line(event: TraceEvent) -> str | None:
    """An event as a line of `webgpt answer --trace`: a command with what the browser did
    and the grammar parts that narrowed it, a part that shaped the answer, a follow-up made
    standalone; None for events the answer itself shows (its text, its references)."""
    if isinstance(event, ActionEvent):
        narrowed = f"  (narrowed: {', '.join(event.narrowed)})" if event.narrowed else ""
        return f"[{event.episode}] {event.command}  -> {_browser_outcome(event.event)}{narrowed}"
    if isinstance(event, ShapedEvent):
        detail = f": {event.detail}" if event.detail else ""
        return f"[{event.episode}] shaped by {event.part}{detail}"
    if isinstance(event, FollowUpEvent):
        return f"follow-up asked as: {event.question_asked}"
    if isinstance(event, EpisodeErrorEvent):
        return f"[{event.episode}] failed: {event.message}"
    return None


def _browser_outcome(event: BrowserEvent) -> str:
    if isinstance(event, SearchEvent):
        return event.error or f"{len(event.results)} results"
    if isinstance(event, PageEvent):
        return f"{event.url} ({event.lines} lines)"
    if isinstance(event, ScrollEvent):
        return f"lines {event.first_line}-{event.last_line}"
    if isinstance(event, FindEvent):
        return f"found at line {event.line}" if event.found else "not found"
    if isinstance(event, QuoteEvent):
        return f"quoted {event.quote.extract[:80]!r}"
    if isinstance(event, EndEvent):
        return f"ended ({event.reason})"
    return f"invalid: {event.reason}"


def format_answer(result: AnswerResult) -> str:
    if result.answer is None:
        reasons = {c.end_reason or c.error or "unknown" for c in result.candidates}
        return f"No answer: browsing ended without one ({', '.join(sorted(reasons))})."
    lines = [result.answer, ""]
    if result.declined:
        lines.append("(declined: the pages it found do not answer the question)")
    lines += [f"[{r.n}] {r.title} — {r.url}" for r in result.references]
    return "\n".join(lines)
