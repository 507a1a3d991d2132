"""`webgpt eval`: answer quality on questions with gold answers, and best-of-n estimates."""

import argparse
import asyncio
import dataclasses
import functools
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webgpt.agent.cli import (
    REGISTRY_HELP,
    add_answer_rules,
    add_policy_format,
    add_quote_ranker,
    answer_rules,
    is_guided,
    open_decline_judge,
    open_quote_ranker,
    registry_of,
)
from webgpt.agent.episode import ANSWER_MAX_ACTIONS, EpisodeConfig
from webgpt.agent.errors import ConfigurationError, DataError, PromotionRefused
from webgpt.agent.model import DEFAULT_REWARD, load_quote_ranker, reward_model_folder
from webgpt.agent.promotion import DEFAULT_MARGIN, Evaluate, format_comparison, promote_gated
from webgpt.agent.registry import PROMOTIONS, Figures, PolicyRegistry
from webgpt.agent.targets import POLICY_HELP, PolicyTarget, parse_policy_target, serving
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import offline_web
from webgpt.evals.questions import (
    PEOPLE_QUESTIONS,
    SEALED_QUESTIONS,
    Question,
    load_questions,
    questions_digest,
)
from webgpt.infra.vllm_server import print_progress

if TYPE_CHECKING:
    from webgpt.agent.quote_ranking import QuoteRanker
    from webgpt.agent.scoring import Scorer
    from webgpt.evals.best_of_n import BestOfSamples
    from webgpt.evals.evaluate import PolicyReport


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    evaluate = commands.add_parser(
        "eval", help="measure answer quality on questions with gold answers"
    )
    evaluate.add_argument(
        "--questions", type=Path, default=None, help="JSONL with question + gold_answers"
    )
    evaluate.add_argument("--split", default=None, help="only rows of this split (e.g. dev)")
    evaluate.add_argument("--limit", type=int, default=0, help="at most this many questions")
    evaluate.add_argument(
        "--sealed",
        action="store_true",
        help="evaluate the sealed test set (data/questions/sealed-test.jsonl) whole and append "
        "each policy's figures to docs/eval/test-ledger.md: once per released default, never "
        "to choose",
    )
    evaluate.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="[LABEL=]TARGET",
        help=f"repeatable: {POLICY_HELP}",
    )
    evaluate.add_argument("--policy-key", default=None)
    evaluate.add_argument("--no-guided", action="store_true", help="do not constrain commands")
    add_policy_format(evaluate)
    evaluate.add_argument("--max-actions", type=int, default=ANSWER_MAX_ACTIONS)
    evaluate.add_argument("--temperature", type=float, default=0.0)
    add_answer_rules(evaluate)
    evaluate.add_argument(
        "--as-typed",
        action="store_true",
        help="browse each follow-up (a question with a `history`) as typed, not made "
        "standalone from its conversation as the service does: to measure that",
    )
    evaluate.add_argument(
        "--reward-model",
        type=Path,
        default=None,
        help=f"also score answers; `{DEFAULT_REWARD}`: the shipped reward model (the default "
        "with --best-of), prepared on first use",
    )
    evaluate.add_argument("--json-out", type=Path, default=None, help="figures and outcomes")
    evaluate.add_argument(
        "--best-of",
        type=int,
        default=0,
        metavar="N",
        help="instead: sample N answers per question (needs --temperature > 0), score them "
        "with --reward-model and estimate the reward and correctness of best-of-n for "
        "n = 1..N; every later "
        "--policy is compared with the first question by question, with standard errors",
    )
    evaluate.add_argument(
        "--plot", type=Path, default=None, help="with --best-of or --pool: the curves as a PNG"
    )
    evaluate.add_argument(
        "--pool",
        type=Path,
        action="append",
        default=[],
        metavar="JSON",
        help="repeatable, instead of sampling: report the samples of earlier --best-of "
        "--json-out files (the same policies, other questions: a question set evaluated in "
        "parts) as one run, with its tables, paired differences, --plot and --json-out",
    )
    evaluate.add_argument("--store", type=Path, default=None, help="offline web file")
    evaluate.set_defaults(run=_eval)


def register_promote(model_commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """`webgpt model promote`, in the `model` group agent.cli makes: its quality gate
    evaluates the version (agent.promotion), and evaluation builds on agent."""
    promote = model_commands.add_parser(
        "promote",
        help="point `current` at a version if it answers about as well as the serving one "
        "(evaluated on pinned questions); a service following `current` swaps it in",
    )
    promote.add_argument("version")
    promote.add_argument("--registry", type=Path, default=None, help=REGISTRY_HELP)
    add_quote_ranker(promote)
    promote.add_argument(
        "--questions",
        type=Path,
        default=None,
        help="JSONL with question + gold_answers (default: data/questions/people.jsonl, split dev)",
    )
    promote.add_argument("--split", default=None, help="only rows of this split")
    promote.add_argument(
        "--limit", type=int, default=0, help="only the first N questions (0: all), for cost"
    )
    promote.add_argument(
        "--margin",
        type=float,
        default=DEFAULT_MARGIN,
        help="refuse a version worse than the serving one by more than this many points "
        "of correct, or of declines (default: %(default)g)",
    )
    promote.add_argument(
        "--force",
        action="store_true",
        help="promote without the gate; recorded as forced, with the figures of the refusal "
        "it overrides",
    )
    promote.add_argument(
        "--policy-url",
        default=None,
        help="evaluate on this OpenAI-compatible server (…/v1), which serves each version "
        "under its version name (default: a local vLLM per version, for the run)",
    )
    promote.add_argument("--policy-key", default=None, help="bearer key for --policy-url")
    promote.add_argument("--max-actions", type=int, default=ANSWER_MAX_ACTIONS)
    promote.add_argument("--store", type=Path, default=None, help="offline web file")
    promote.set_defaults(run=_promote)


def _promote(args: argparse.Namespace) -> int:
    registry = registry_of(args)
    evaluate, setup, close_ranker = _gate_evaluation(args, registry)
    try:
        record = promote_gated(
            registry,
            args.version,
            evaluate,
            margin=args.margin,
            force=args.force,
            setup=setup,
            progress=print_progress,
        )
    except PromotionRefused:
        print(format_comparison(registry.promotions()[-1]))  # the refusal just recorded
        raise
    finally:
        close_ranker()
    if record is None:
        print(f"{args.version} is current already")
        return 0
    if record.outcome == "ungated":
        print(f"no serving version to compare {args.version} with: promoted without the gate")
    elif record.outcome == "forced":
        over = f"over the gate's refusal of {record.forced_over}" if record.forced_over else ""
        print(
            f"forced {over or 'without evaluating it'} (recorded in {registry.root / PROMOTIONS})"
        )
    else:
        count = record.figures[args.version].get("questions")
        print(f"the gate passed on {count} questions, margin {args.margin:g}")
    if record.figures:
        print(format_comparison(record))
    aliases = registry.aliases()
    print(f"current -> {aliases.current} (previous -> {aliases.previous})")
    return 0


def _gate_evaluation(
    args: argparse.Namespace, registry: PolicyRegistry
) -> tuple[Evaluate, dict[str, Any], Callable[[], None]]:
    """The gate's evaluation (`webgpt eval`'s, greedy, with the quote ranker, of one version
    on the pinned questions), the setup it records, and what closes the ranker it loads.
    The questions and the ranker are read on the first evaluation: a forced or first
    promotion needs neither."""
    from webgpt.evals.evaluate import evaluate_target, progress_bar

    if args.limit < 0:
        raise ConfigurationError(f"--limit {args.limit}: give 0 (all) or more")
    path, split = args.questions, args.split
    if path is None:
        path, split = PEOPLE_QUESTIONS, split or "dev"
    episode = EpisodeConfig(temperature=0.0, guided=True)  # greedy: figures that reproduce
    session = SessionConfig(max_actions=args.max_actions)
    setup = {
        "questions": str(path.resolve()),
        "split": split,
        "limit": args.limit,
        "temperature": episode.temperature,
        "guided": episode.guided,
        "explanation_quotes": episode.explanation_quotes,
        "grounded_declines": episode.grounded_declines,
        "evidence_declines": episode.evidence_declines,
        "evidence_margin": episode.evidence_margin,
        "relevant_quotes": episode.relevant_quotes,
        "question_search": episode.question_search,
        "quote_ranker": str(args.quote_ranker) if args.quote_ranker else None,
        "max_actions": session.max_actions,
        "policy_url": args.policy_url,
        "store": str(args.store) if args.store else None,
    }

    @functools.cache
    def pinned() -> "tuple[list[Question], str]":
        if not path.is_file():
            raise ConfigurationError(f"no question set at {path}: give --questions FILE")
        questions = load_questions(path, split)[: args.limit or None]
        return questions, questions_digest(questions)

    @functools.cache
    def ranker() -> "QuoteRanker | None":  # loaded once, for the first version evaluated
        return load_quote_ranker(args.quote_ranker, print_progress)

    def evaluate(version: str) -> Figures:
        questions, digest = pinned()
        if args.policy_url:
            target = PolicyTarget(version, url=args.policy_url, model=version)
        else:
            target = PolicyTarget(version, folder=registry.root / version)
        ranked = dataclasses.replace(episode, quote_ranker=ranker())
        setup["evidence_margin"] = ranked.evidence_threshold()  # the ranker's, as it decided
        report = asyncio.run(
            evaluate_target(
                target,
                questions,
                store=args.store,
                policy_key=args.policy_key,
                episode=ranked,
                session=session,
                progress=progress_bar(sys.stderr),
            )
        )
        return {**report.figures(), "questions_sha256": digest}

    def close() -> None:  # the ranker, where an evaluation loaded it
        if ranker.cache_info().currsize and (loaded := ranker()) is not None:
            asyncio.run(loaded.aclose())

    return evaluate, setup, close


def _eval(args: argparse.Namespace) -> int:
    import json

    from webgpt.evals.evaluate import format_table

    if args.pool:
        if args.questions is not None or args.best_of:
            raise ConfigurationError("--pool reports earlier samples: no --questions or --best-of")
        return _report_best_of(args, _pooled_samples(args.pool))
    if args.sealed:
        if args.questions is not None or args.split or args.limit or args.best_of:
            raise ConfigurationError(
                "--sealed evaluates the whole sealed set: no --questions, --split, --limit "
                "or --best-of"
            )
        args.questions = SEALED_QUESTIONS
    if args.questions is None:
        raise ConfigurationError("eval needs --questions (or --pool, or --sealed)")
    questions = load_questions(args.questions, args.split)
    if args.limit:
        questions = questions[: args.limit]
    if args.best_of:
        return _eval_best_of(args, questions)
    if args.plot is not None:
        raise ConfigurationError("--plot draws best-of-n curves: give --best-of N too")
    args.reward_model = reward_model_folder(
        args.reward_model, print_progress, default_when_none=False
    )
    targets = [parse_policy_target(spec) for spec in args.policy or ["default"]]
    reports = [asyncio.run(_eval_one(args, target, questions)) for target in targets]
    print(format_table(reports))
    if args.json_out is not None:
        args.json_out.write_text(json.dumps([r.to_json() for r in reports], indent=2))
    if args.sealed:
        from webgpt.evals.ledger import LEDGER, record

        for line in record(reports):
            print(f"{LEDGER}: {line}")
    return 0


def _episode_settings(
    args: argparse.Namespace,
    judge: "Scorer | None" = None,
    ranker: "QuoteRanker | None" = None,
) -> "tuple[EpisodeConfig, SessionConfig]":
    """The episode and session options of `webgpt eval`, with or without --best-of."""
    from webgpt.agent.episode import EpisodeConfig

    episode = EpisodeConfig(
        temperature=args.temperature,
        guided=is_guided(args),
        decline_judge=judge,
        quote_ranker=ranker,
        **answer_rules(args),
    )
    return episode, SessionConfig(max_actions=args.max_actions)


async def _eval_one(
    args: argparse.Namespace, target: PolicyTarget, questions: list[Question]
) -> "PolicyReport":
    from webgpt.evals.evaluate import evaluate_target, progress_bar

    scorer = None
    if args.reward_model is not None:
        from webgpt.reward.factory import open_scorer

        scorer = open_scorer(args.reward_model, None)
    judge, ranker = open_decline_judge(args), open_quote_ranker(args)
    try:
        episode, session = _episode_settings(args, judge, ranker)
        return await evaluate_target(
            target,
            questions,
            store=args.store,
            policy_key=args.policy_key,
            policy_format=args.policy_format,
            episode=episode,
            session=session,
            scorer=scorer,
            progress=progress_bar(sys.stderr),
            follow_ups=not args.as_typed,
        )
    finally:
        for model_in_process in (scorer, judge, ranker):
            if model_in_process is not None:
                await model_in_process.aclose()


def _eval_best_of(args: argparse.Namespace, questions: list[Question]) -> int:
    from webgpt.evals.best_of_n import format_best_of

    if args.decline_judge is not None:
        raise ConfigurationError("--best-of estimates answers as sampled: no --decline-judge")
    if args.temperature <= 0 or not 1 <= args.best_of <= 64:
        raise ConfigurationError("--best-of N needs 1 <= N <= 64 and --temperature > 0")
    args.reward_model = reward_model_folder(
        args.reward_model, print_progress, default_when_none=True
    )
    targets = [parse_policy_target(spec) for spec in args.policy or ["default"]]
    labels = [target.label for target in targets]
    if len(set(labels)) != len(labels):
        raise ConfigurationError(f"policies need distinct labels (LABEL=TARGET), got {labels}")
    collected = {}
    for target in targets:
        collected[target.label] = asyncio.run(_best_of_one(args, target, questions))
        print(format_best_of(target.label, collected[target.label].table()))
    return _report_best_of(args, collected, tables_printed=True)


def _pooled_samples(paths: list[Path]) -> "dict[str, BestOfSamples]":
    """Each policy's samples from earlier `--best-of --json-out` files, questions joined."""
    import json

    from webgpt.evals.best_of_n import BestOfSamples

    pooled: dict[str, BestOfSamples] = {}
    for path in paths:
        try:
            samples = json.loads(path.read_text())["samples"]
            labels = list(samples)
            if pooled and labels != list(pooled):
                raise ValueError(f"policies {labels}, the first file's are {list(pooled)}")
            for label in labels:
                part = BestOfSamples.from_json(label, samples[label])
                if label in pooled:
                    pooled[label].extend(part)
                else:
                    pooled[label] = part
        except OSError as error:
            raise DataError(f"--pool {path}: {error.strerror or error}") from error
        except (ValueError, KeyError, TypeError) as error:
            raise DataError(f"--pool {path}: not a --best-of --json-out file: {error}") from error
    return pooled


def _report_best_of(
    args: argparse.Namespace, collected: "dict[str, BestOfSamples]", tables_printed: bool = False
) -> int:
    """Best-of-n tables, every later policy paired with the first, --plot, --json-out."""
    import json

    from webgpt.evals.best_of_n import (
        format_best_of,
        format_paired,
        gain_over_one,
        paired_difference,
        plot_best_of,
    )

    # every later policy against the first (e.g. RL against its BC parent), per question
    [base, *others] = collected.values()
    try:  # pooled files may disagree on N or on the questions
        curves = {label: samples.table() for label, samples in collected.items()}
        gains = {label: gain_over_one(samples) for label, samples in collected.items()}
        paired = {other.policy: paired_difference(base, other) for other in others}
    except ValueError as error:
        raise DataError(f"best-of samples: {error}") from error
    if not tables_printed:
        for label, table in curves.items():
            print(format_best_of(label, table))
    for label, gain in gains.items():
        print(format_paired(label, label, len(base.questions), gain))
    for label, differences in paired.items():
        print(format_paired(base.policy, label, len(base.questions), differences))
    if args.plot is not None:
        plot_best_of(curves, str(args.plot))
        print_progress(f"wrote {args.plot}")
    if args.json_out is not None:
        figures = {
            "best_of": {
                label: [dataclasses.asdict(r) for r in rows] for label, rows in curves.items()
            },
            "gain_over_one": {
                label: [_finite(dataclasses.asdict(r)) for r in rows]
                for label, rows in gains.items()
            },
            "paired": {
                label: {
                    "against": base.policy,
                    "rows": [_finite(dataclasses.asdict(r)) for r in rows],
                }
                for label, rows in paired.items()
            },
            "samples": {label: samples.to_json() for label, samples in collected.items()},
        }
        args.json_out.write_text(json.dumps(figures, indent=2))
    return 0


def _finite(row: dict[str, float]) -> dict[str, float | None]:
    """JSON has no nan: an undefined figure (a standard error of one question) is null."""
    return {key: None if math.isnan(value) else value for key, value in row.items()}


async def _best_of_one(
    args: argparse.Namespace, target: PolicyTarget, questions: list[Question]
) -> "BestOfSamples":
    from webgpt.evals.best_of_n import sample_best_of
    from webgpt.reward.factory import open_scorer

    def progress(done: int, total: int) -> None:
        if done % 10 == 0 or done == total:
            print_progress(f"{target.label}: {done}/{total} questions sampled")

    web = offline_web(args.store)
    scorer, ranker = open_scorer(args.reward_model, None), open_quote_ranker(args)
    try:
        episode, session = _episode_settings(args, ranker=ranker)
        async with serving(target, args.policy_key, is_guided(args), args.policy_format) as policy:
            return await sample_best_of(
                target.label,
                policy,
                web,
                scorer,
                questions,
                args.best_of,
                episode=episode,
                session=session,
                progress=progress,
            )
    finally:
        await web.aclose()
        await scorer.aclose()
        if ranker is not None:
            await ranker.aclose()
