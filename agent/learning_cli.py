"""`webgpt demos generate`, `webgpt train bc`, `webgpt eval`, `webgpt browse` and
`webgpt comparisons generate`."""

import argparse
import asyncio
import contextlib
import dataclasses
import math
import random
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from agent.demonstrations import Demonstration, Recorder, write_demonstrations
from agent.errors import ConfigurationError, DataError
from agent.openai_policy import OpenAIPolicy
from agent.questions import Question, generate_questions, load_questions
from browser.cli import add_web_arguments, web_options
from browser.session import SessionConfig
from browser.web import Web, WebOptions
from infra.vllm_server import print_progress
from reward.cli import add_dataclass_options

if TYPE_CHECKING:
    from agent.best_of_n import BestOfSamples
    from agent.comparisons import QuotedQuestion
    from agent.episode import EpisodeConfig
    from agent.evaluate import PolicyReport


POLICY_HELP = (
    "`default` (the trained default), `base` (the untrained base), a checkpoint folder "
    "(full weights, or a LoRA adapter merged into its base first; served by a local vLLM "
    "for the run), or URL,MODEL of a running OpenAI-compatible "
    "server (default: `default`)"
)


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    demos = commands.add_parser("demos", help="demonstrations for behavior cloning")
    demo_commands = demos.add_subparsers(dest="demos_command", required=True)
    generate = demo_commands.add_parser(
        "generate", help="write demonstrations (JSONL) by the scripted demonstrator or a teacher"
    )
    source = generate.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--scripted", action="store_true", help="the scripted demonstrator on the offline web"
    )
    source.add_argument("--policy-url", help="a teacher model's OpenAI-compatible URL (…/v1)")
    generate.add_argument("--policy-model", help="the teacher's model name at --policy-url")
    generate.add_argument("--policy-key", default=None)
    generate.add_argument("--out", type=Path, required=True, help="demonstrations JSONL")
    generate.add_argument(
        "--questions",
        type=Path,
        default=None,
        help="questions JSONL (default: from the offline web)",
    )
    generate.add_argument(
        "--questions-out", type=Path, default=None, help="also write the questions used (JSONL)"
    )
    generate.add_argument(
        "--per-split",
        default="train=1200,dev=150,test=150",
        help="questions per split, e.g. train=1200,dev=150,test=150",
    )
    generate.add_argument("--detour-share", type=float, default=0.3)
    generate.add_argument("--attempts", type=int, default=2, help="teacher: tries per question")
    generate.add_argument("--temperature", type=float, default=0.8, help="teacher sampling")
    generate.add_argument("--seed", type=int, default=0)
    generate.add_argument("--store", type=Path, default=None, help="offline web file")
    generate.set_defaults(run=_generate)

    check = demo_commands.add_parser(
        "check", help="validate files and replay demonstrations on the offline web"
    )
    check.add_argument("files", type=Path, nargs="+")
    check.add_argument("--store", type=Path, default=None, help="offline web file")
    check.add_argument("--no-replay", action="store_true", help="only validate the schema")
    check.set_defaults(run=_check)

    browse = commands.add_parser(
        "browse", help="browse interactively: commands on stdin, observations on stdout"
    )
    browse.add_argument("--question", "-q", required=True)
    browse.add_argument("--max-actions", type=int, default=100)
    browse.add_argument(
        "--no-censor", action="store_true", help="show pages that contain the question"
    )
    browse.add_argument(
        "--record",
        type=Path,
        default=None,
        metavar="FILE",
        help="append the episode to FILE as a demonstration; after `End: Answer` the "
        "remaining input lines are the answer",
    )
    browse.add_argument("--gold", action="append", default=[], help="a gold answer (recorded)")
    add_web_arguments(browse, with_engine=True)
    browse.set_defaults(run=_browse)

    comparisons = commands.add_parser("comparisons", help="comparisons for the reward model")
    comparison_commands = comparisons.add_subparsers(dest="comparisons_command", required=True)
    synthetic = comparison_commands.add_parser(
        "generate",
        help="sample answers from a policy and label every pair by rule (gold answer, "
        "faithful citations): synthetic comparisons for `webgpt train rm`",
    )
    source = synthetic.add_mutually_exclusive_group(required=True)
    source.add_argument("--questions", type=Path, help="questions JSONL")
    source.add_argument(
        "--quotes-from",
        type=Path,
        metavar="DEMOS",
        help="demonstrations JSONL: --samples answers are written from each one's quotes, "
        "with no browsing (questions, gold answers and splits from the file; answer-level "
        "pairs at the cost of the answers alone)",
    )
    synthetic.add_argument("--split", default="train", help="only rows of this split")
    synthetic.add_argument("--limit", type=int, default=0, help="at most this many questions")
    synthetic.add_argument("--policy", default="default", metavar="TARGET", help=POLICY_HELP)
    synthetic.add_argument("--policy-key", default=None)
    synthetic.add_argument("--samples", type=int, default=4, help="answers per question")
    synthetic.add_argument(
        "--answer-only",
        action="store_true",
        help="one browsing episode a question and --samples answers from its quotes (the "
        "pairs differ only in the answer, as in RL's answer-only groups; cheaper a row)",
    )
    synthetic.add_argument("--temperature", type=float, default=0.9)
    synthetic.add_argument("--max-actions", type=int, default=20)
    synthetic.add_argument("--out", type=Path, required=True, help="comparisons JSONL")
    synthetic.add_argument("--store", type=Path, default=None, help="offline web file")
    synthetic.set_defaults(run=_generate_comparisons)


def register_eval(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    evaluate = commands.add_parser(
        "eval", help="measure answer quality on questions with gold answers"
    )
    evaluate.add_argument(
        "--questions", type=Path, default=None, help="JSONL with question + gold_answers"
    )
    evaluate.add_argument("--split", default=None, help="only rows of this split (e.g. dev)")
    evaluate.add_argument("--limit", type=int, default=0, help="at most this many questions")
    evaluate.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="[LABEL=]TARGET",
        help=f"repeatable: {POLICY_HELP}",
    )
    evaluate.add_argument("--policy-key", default=None)
    evaluate.add_argument("--no-guided", action="store_true", help="do not constrain commands")
    evaluate.add_argument("--max-actions", type=int, default=20)
    evaluate.add_argument("--temperature", type=float, default=0.0)
    evaluate.add_argument("--reward-model", type=Path, default=None, help="also score answers")
    evaluate.add_argument("--json-out", type=Path, default=None, help="figures and outcomes")
    evaluate.add_argument(
        "--best-of",
        type=int,
        default=0,
        metavar="N",
        help="instead: sample N answers per question (needs --reward-model and --temperature "
        "> 0) and estimate the reward and correctness of best-of-n for n = 1..N; every later "
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


def register_train(kinds: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    from agent.bc import BCTrainConfig
    from agent.rl import RLTrainConfig
    from agent.verl_loop import VerlRunConfig

    bc = kinds.add_parser("bc", help="behavior cloning on demonstrations")
    add_dataclass_options(bc, BCTrainConfig)
    bc.set_defaults(run=_train_bc)
    rl = kinds.add_parser(
        "rl", help="RL in the browsing environment against a reward model (TRL GRPO, KL to BC)"
    )
    add_dataclass_options(rl, RLTrainConfig)
    rl.set_defaults(run=_train_rl)
    verl = kinds.add_parser(
        "verl",
        help="prepare PPO on many GPUs with verl: data, agent-loop config, launch command",
    )
    add_dataclass_options(verl, VerlRunConfig)
    verl.set_defaults(run=_train_verl)


def offline_web(store: Path | None) -> Web:
    """The offline web alone (no live fallback, no Chromium): where demonstrations are
    generated, replayed and evaluated, so their figures are reproducible."""
    options = WebOptions.from_env(js_mode="never", offline_store=store)
    return Web(dataclasses.replace(options, engine="offline", offline_only=True))


def _per_split(spec: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for part in spec.split(","):
        name, _, number = part.partition("=")
        if name.strip() not in ("train", "dev", "test") or not number.strip().isdigit():
            raise ConfigurationError(f"--per-split wants train=N,dev=N,test=N, not {spec!r}")
        counts[name.strip()] = int(number)
    return counts


# What a generated set is made of: mostly factoids, then long-form and unanswerable ones.
KIND_SHARES = {"factoid": 0.6, "longform": 0.25, "unanswerable": 0.15}


def pick_questions(
    questions: list[Question], per_split: dict[str, int], seed: int
) -> list[Question]:
    """Up to N questions of each split, kinds in KIND_SHARES and, within a kind, styles
    balanced (no factoid style over a third, no other style over two thirds)."""
    rng = random.Random(seed)
    shuffled = sorted(questions, key=lambda q: (q.question, q.url or ""))
    rng.shuffle(shuffled)
    picked: list[Question] = []
    for split, wanted in per_split.items():
        for kind, share in KIND_SHARES.items():
            quota = round(wanted * share)
            # factoids have many styles, a third each at most; the other kinds have two or
            # three, and one (a two-page question, a future event) can be rare
            cap = max(1, -(-quota // 3) if kind == "factoid" else -(-quota * 2 // 3))
            styles: Counter[str] = Counter()
            for question in shuffled:
                if sum(styles.values()) >= quota:
                    break
                if question.split != split or question.kind != kind:
                    continue
                if styles[question.style or ""] >= cap:
                    continue
                picked.append(question)
                styles[question.style or ""] += 1
    return picked


def _generate(args: argparse.Namespace) -> int:
    if args.policy_url and not args.policy_model:
        raise ConfigurationError("--policy-url needs --policy-model")
    return asyncio.run(_generate_async(args))


async def _generate_async(args: argparse.Namespace) -> int:
    from agent.scripted import ScriptedConfig, demonstrate

    web = offline_web(args.store)
    try:
        if args.questions is not None:
            questions = load_questions(args.questions)
        else:
            assert web.offline is not None
            questions = pick_questions(
                list(generate_questions(web.offline, seed=args.seed)),
                _per_split(args.per_split),
                args.seed,
            )
        if args.questions_out is not None:
            args.questions_out.write_text("".join(q.model_dump_json() + "\n" for q in questions))
        rng = random.Random(args.seed)
        config = ScriptedConfig(detour_share=args.detour_share)
        demos: list[Demonstration] = []
        teacher = None
        if args.policy_url:
            teacher = OpenAIPolicy(
                args.policy_url, args.policy_model, api_key=args.policy_key, guided=True
            )
        for number, question in enumerate(questions, start=1):
            if teacher is None:
                session = web.session(
                    config=SessionConfig(max_actions=rng.choice(config.max_actions))
                )
                demo = await demonstrate(question, session, rng, config)
            else:
                from agent.teacher import teacher_demonstration

                demo = await teacher_demonstration(
                    question, web, teacher, attempts=args.attempts, temperature=args.temperature
                )
            if demo is not None:
                demos.append(demo)
            if number % 50 == 0 or number == len(questions):
                print_progress(f"{number}/{len(questions)} questions, {len(demos)} demonstrations")
        if teacher is not None:
            await teacher.aclose()
    finally:
        await web.aclose()
    count = write_demonstrations(args.out, demos)
    splits = Counter(d.split or "-" for d in demos)
    print_progress(f"wrote {count} demonstrations to {args.out} ({dict(splits)})")
    return 0 if count else 1


def _check(args: argparse.Namespace) -> int:
    return asyncio.run(_check_async(args))


async def _check_async(args: argparse.Namespace) -> int:
    from agent.demonstrations import load_demonstrations, replay

    demos, report = load_demonstrations(args.files)
    print(report.summary())
    failures = len(report.skipped)
    if not args.no_replay:
        web = offline_web(args.store)
        try:
            for demo in demos:
                problems = await replay(demo, web.session())
                if problems:
                    failures += 1
                    print(f"{demo.id}: {'; '.join(problems)}")
        finally:
            await web.aclose()
        print(f"replayed {len(demos)} demonstrations: {failures} problems")
    return 1 if failures else 0


def _train_bc(args: argparse.Namespace) -> int:
    from agent.bc import BCTrainConfig, train_bc  # torch: only when training

    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(BCTrainConfig)}
    result = train_bc(BCTrainConfig(**values), log=print_progress)
    print(result.checkpoint)
    return 0


def _train_rl(args: argparse.Namespace) -> int:
    from agent.rl import RLTrainConfig, train_rl  # torch and TRL: only when training

    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(RLTrainConfig)}
    result = train_rl(RLTrainConfig(**values), log=print_progress)
    print(result.checkpoint)
    return 0


def _train_verl(args: argparse.Namespace) -> int:
    from agent.verl_loop import VerlRunConfig, prepare_verl_run

    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(VerlRunConfig)}
    script = prepare_verl_run(VerlRunConfig(**values))
    print(f"prepared; launch it (verl installed, from this checkout): sh {script}")
    return 0


def _browse(args: argparse.Namespace) -> int:
    return asyncio.run(browse(args, sys.stdin, sys.stdout))


async def browse(args: argparse.Namespace, commands_in: TextIO, out: TextIO) -> int:
    """A person drives the policy's browser; with --record the episode becomes a
    demonstration (source "person") appended to the file."""
    web = Web(web_options(args, engine=args.engine or WebOptions.from_env().engine))
    lines = iter(commands_in)
    try:
        session = web.session(
            config=SessionConfig(max_actions=args.max_actions, censor=not args.no_censor)
        )
        recorder = Recorder(session, args.question)
        print(recorder.observation, file=out, flush=True)
        for line in lines:
            if not line.strip():
                continue
            result = await recorder.step(line.rstrip("\n"))
            print(f"\n# {result.event.model_dump_json(exclude_none=True)}\n", file=out)
            print(result.observation, file=out, flush=True)
            if result.done:
                break
        print(file=out)
        if session.end_reason == "answer" and session.quotes:
            print("♦Answer prompt", file=out)
            print(session.answer_prompt(), file=out)
        elif session.end_reason == "answer":
            print("Browsing ended without quotes: there is nothing to answer from.", file=out)
        else:
            print(f"Browsing ended: {session.end_reason or 'no more commands'}", file=out)
        if args.record is not None:
            answer = " ".join(line.strip() for line in lines if line.strip()) or None
            if not recorder.steps:
                raise ConfigurationError("nothing to record: no command was given")
            demo = recorder.finish(
                id=f"person-{random.getrandbits(64):016x}",
                source="person",
                answer=answer,
                gold_answers=args.gold,
            )
            args.record.parent.mkdir(parents=True, exist_ok=True)
            with args.record.open("a", encoding="utf-8") as file:
                file.write(demo.to_json() + "\n")
            print(f"# recorded {len(demo.steps)} steps to {args.record}", file=out)
    finally:
        await web.aclose()
    return 0


@dataclasses.dataclass(frozen=True)
class PolicyTarget:
    label: str
    url: str | None = None  # a running server ...
    model: str | None = None
    folder: Path | None = None  # ... or a checkpoint served by a local vLLM for the run


def parse_policy_target(spec: str) -> PolicyTarget:
    label, sep, target = spec.partition("=")
    if not sep:
        label, target = "", spec
    if target in ("default", "base"):
        from agent.model import prepare_base_model, prepare_default_model

        folder = (
            prepare_default_model(print_progress)
            if target == "default"
            else prepare_base_model(print_progress)
        )
        return PolicyTarget(label or target, folder=folder)
    if target.startswith(("http://", "https://")):
        url, comma, model = target.partition(",")
        if not comma or not model:
            raise ConfigurationError(f"--policy {spec!r}: give URL,MODEL")
        return PolicyTarget(label or model, url=url, model=model)
    folder = Path(target).expanduser()
    if not folder.is_dir():
        raise ConfigurationError(f"--policy {spec!r}: no checkpoint folder at {folder}")
    return PolicyTarget(label or folder.name, folder=folder)


def _eval(args: argparse.Namespace) -> int:
    import json

    from agent.evaluate import format_table

    if args.pool:
        if args.questions is not None or args.best_of:
            raise ConfigurationError("--pool reports earlier samples: no --questions or --best-of")
        return _report_best_of(args, _pooled_samples(args.pool))
    if args.questions is None:
        raise ConfigurationError("eval needs --questions (or --pool)")
    questions = load_questions(args.questions, args.split)
    if args.limit:
        questions = questions[: args.limit]
    if args.best_of:
        return _eval_best_of(args, questions)
    if args.plot is not None:
        raise ConfigurationError("--plot draws best-of-n curves: give --best-of N too")
    targets = [parse_policy_target(spec) for spec in args.policy or ["default"]]
    reports = [asyncio.run(_eval_one(args, target, questions)) for target in targets]
    print(format_table(reports))
    if args.json_out is not None:
        args.json_out.write_text(json.dumps([r.to_json() for r in reports], indent=2))
    return 0


@contextlib.asynccontextmanager
async def serving(
    target: PolicyTarget, api_key: str | None, guided: bool
) -> AsyncIterator[OpenAIPolicy]:
    """A client of target's policy; a checkpoint folder is served by a local vLLM (started
    here, stopped on exit)."""
    from agent.model import merged_adapter
    from agent.registry import is_adapter
    from infra.vllm_server import DEFAULT_PORT, ServerConfig, start, stop

    running = None
    url, model = target.url, target.model
    if target.folder is not None:
        folder = target.folder
        if is_adapter(folder):  # served merged: vLLM's CPU LoRA ops cost ~4x a prefill
            folder = merged_adapter(folder, print_progress)
        print_progress(f"starting vLLM for {folder} (first start compiles: minutes)")
        running = start(
            ServerConfig(model_dir=folder, served_name=target.label, port=DEFAULT_PORT + 10),
            print_progress,
            record=False,
        )
        url, model = running.url, running.model
    assert url is not None and model is not None
    policy = OpenAIPolicy(url, model, api_key=api_key, guided=guided)
    try:
        yield policy
    finally:
        await policy.aclose()
        if running is not None:
            stop(running)


def _episode_settings(args: argparse.Namespace) -> "tuple[EpisodeConfig, SessionConfig]":
    """The episode and session options of `webgpt eval`, with or without --best-of."""
    from agent.episode import EpisodeConfig

    episode = EpisodeConfig(temperature=args.temperature, guided=not args.no_guided)
    return episode, SessionConfig(max_actions=args.max_actions)


async def _eval_one(
    args: argparse.Namespace, target: PolicyTarget, questions: list[Question]
) -> "PolicyReport":
    from agent.evaluate import evaluate_policy, progress_bar

    web = offline_web(args.store)
    scorer = None
    if args.reward_model is not None:
        from reward.factory import open_scorer

        scorer = open_scorer(args.reward_model, None)
    try:
        episode, session = _episode_settings(args)
        async with serving(target, args.policy_key, not args.no_guided) as policy:
            return await evaluate_policy(
                target.label,
                policy,
                web,
                questions,
                episode=episode,
                session=session,
                scorer=scorer,
                progress=progress_bar(sys.stderr),
            )
    finally:
        await web.aclose()
        if scorer is not None:
            await scorer.aclose()


def _eval_best_of(args: argparse.Namespace, questions: list[Question]) -> int:
    from agent.best_of_n import format_best_of

    if args.reward_model is None:
        raise ConfigurationError("--best-of needs --reward-model: it picks the best answer")
    if args.temperature <= 0 or not 1 <= args.best_of <= 64:
        raise ConfigurationError("--best-of N needs 1 <= N <= 64 and --temperature > 0")
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

    from agent.best_of_n import BestOfSamples

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

    from agent.best_of_n import format_best_of, format_paired, paired_difference, plot_best_of

    # every later policy against the first (e.g. RL against its BC parent), per question
    [base, *others] = collected.values()
    try:  # pooled files may disagree on N or on the questions
        curves = {label: samples.table() for label, samples in collected.items()}
        paired = {other.policy: paired_difference(base, other) for other in others}
    except ValueError as error:
        raise DataError(f"best-of samples: {error}") from error
    if not tables_printed:
        for label, table in curves.items():
            print(format_best_of(label, table))
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
    from agent.best_of_n import sample_best_of
    from reward.factory import open_scorer

    def progress(done: int, total: int) -> None:
        if done % 10 == 0 or done == total:
            print_progress(f"{target.label}: {done}/{total} questions sampled")

    web = offline_web(args.store)
    scorer = open_scorer(args.reward_model, None)
    try:
        episode, session = _episode_settings(args)
        async with serving(target, args.policy_key, not args.no_guided) as policy:
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


def _generate_comparisons(args: argparse.Namespace) -> int:
    if not 1 <= args.samples <= 64:
        raise ConfigurationError("--samples must be between 1 and 64")
    questions: list[Question] | list[QuotedQuestion]
    if args.quotes_from:
        questions = _quoted_questions(args.quotes_from, args.split)
    else:
        questions = load_questions(args.questions, args.split)
    if args.limit:
        questions = questions[: args.limit]
    target = parse_policy_target(args.policy)
    return asyncio.run(_generate_comparisons_async(args, target, questions))


def _quoted_questions(path: Path, split: str) -> "list[QuotedQuestion]":
    from agent.comparisons import quoted_question
    from agent.demonstrations import load_demonstrations

    demos, report = load_demonstrations([path], splits=[split])
    print_progress(report.summary())
    quoted = [q for q in map(quoted_question, demos) if q is not None]
    if len(quoted) < len(demos):
        print_progress(f"{len(demos) - len(quoted)} demonstrations without quotes or gold answers")
    if not quoted:
        raise DataError(f"{path} has no demonstrations with quotes and gold answers in {split!r}")
    return quoted


async def _generate_comparisons_async(
    args: argparse.Namespace,
    target: PolicyTarget,
    questions: "list[Question] | list[QuotedQuestion]",
) -> int:
    import json

    from agent.comparisons import GenerationReport, generate_comparisons
    from agent.episode import EpisodeConfig

    def progress(done: int, report: GenerationReport) -> None:
        if done % 10 == 0 or done == len(questions):
            print_progress(f"{done}/{len(questions)}: {report.summary()}")

    web = offline_web(args.store)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_name(args.out.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8") as out:
            async with serving(target, args.policy_key, guided=True) as policy:
                report = await generate_comparisons(
                    questions,
                    policy,
                    web,
                    lambda row: out.write(json.dumps(row) + "\n"),
                    samples=args.samples,
                    answer_only=args.answer_only,
                    episode=EpisodeConfig(temperature=args.temperature),
                    session=SessionConfig(max_actions=args.max_actions),
                    progress=progress,
                )
    finally:
        await web.aclose()
    partial.replace(args.out)  # a file that is there is complete
    print_progress(f"wrote {args.out}: {report.summary()}")
    return 0 if report.rows else 1
