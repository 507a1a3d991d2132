"""`webgpt demos generate`, `webgpt train bc|rl|verl`, `webgpt browse` and
`webgpt comparisons generate`."""

import argparse
import asyncio
import random
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from webgpt.agent.cli import add_policy_format, add_quote_ranker
from webgpt.agent.episode import EpisodeConfig
from webgpt.agent.errors import ConfigurationError, DataError
from webgpt.agent.model import load_quote_ranker
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.targets import POLICY_HELP, PolicyTarget, parse_policy_target, serving
from webgpt.browser.cli import add_web_arguments, web_options
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web, WebOptions, offline_web
from webgpt.evals.evaluate import recorded_outcomes
from webgpt.evals.questions import Question, load_questions
from webgpt.infra.trainer_options import add_trainer_command, parse_config
from webgpt.infra.vllm_server import print_progress
from webgpt.learning.demonstrations import Demonstration, Recorder, write_demonstrations
from webgpt.learning.question_generator import (
    generate_questions,
    pick_manual_factoids,
    pick_questions,
)

if TYPE_CHECKING:
    from webgpt.learning.comparisons import QuotedQuestion


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
    source.add_argument(
        "--teacher",
        metavar="TARGET",
        help="a policy that drives the episodes, keeping those that end right (rejection "
        "sampling; the current policy: expert iteration): " + POLICY_HELP,
    )
    generate.add_argument("--policy-key", default=None, help="bearer key for a URL teacher")
    add_policy_format(generate)
    add_quote_ranker(generate)  # a teacher's episodes decode as the service's
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
    generate.add_argument(
        "--answers",
        choices=["reference", "quoted"],
        default="reference",
        help="a scripted factoid's answer: the question's reference answer, or its quote's "
        "sentence in the quote's words",
    )
    generate.add_argument("--attempts", type=int, default=2, help="teacher: tries per question")
    generate.add_argument("--temperature", type=float, default=0.8, help="teacher sampling")
    generate.add_argument(
        "--concurrency",
        type=int,
        default=4,
        help="teacher: questions in flight at once (the server batches them)",
    )
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
    browse.add_argument(
        "--split",
        choices=["train", "dev", "test"],
        default=None,
        help="the question's split (recorded); `webgpt train bc` trains on split train, and "
        "on demonstrations without one only with --include-untagged",
    )
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
    add_quote_ranker(synthetic)
    synthetic.add_argument("--out", type=Path, required=True, help="comparisons JSONL")
    synthetic.add_argument("--store", type=Path, default=None, help="offline web file")
    synthetic.set_defaults(run=_generate_comparisons)
    declines = comparison_commands.add_parser(
        "declines",
        help="answer against decline from the same quotes, labelled by rule over the offline "
        "web's pages of one split: what the decline judgment learns (`webgpt train rm`)",
    )
    declines.add_argument("--out", type=Path, required=True, help="comparisons JSONL")
    declines.add_argument(
        "--questions",
        type=int,
        default=1500,
        help="questions drawn (kinds at their generated shares); rows: about 1.7 a "
        "question, half each way",
    )
    declines.add_argument(
        "--split",
        choices=["train", "dev"],
        default="train",
        help="the pages questions and quotes come from (dev: held-out rows, `--held-out`)",
    )
    declines.add_argument(
        "--episodes",
        type=Path,
        nargs="+",
        default=None,
        metavar="EVAL.json",
        help="instead of rule-written rows: the policy's own drafts against the decline, from "
        "`webgpt eval --json-out` files recorded on questions of --split (docs/reward.md)",
    )
    declines.add_argument("--seed", type=int, default=0)
    declines.add_argument("--store", type=Path, default=None, help="offline web file")
    add_quote_ranker(declines)  # which sentence a page offers to the rule-written rows
    declines.set_defaults(run=_decline_comparisons)
    quotes = comparison_commands.add_parser(
        "quotes",
        help="the sentence that answers a factoid against another of its page, over the "
        "offline web's train pages: what a quote ranker learns (`webgpt train rm`, then "
        "--quote-ranker)",
    )
    quotes.add_argument("--out", type=Path, required=True, help="comparisons JSONL")
    quotes.add_argument(
        "--questions",
        type=Path,
        action="append",
        default=[],
        help="repeatable: a question file whose train-split factoids carry their evidence "
        "(e.g. data/questions/train-later-sentences.jsonl)",
    )
    quotes.add_argument(
        "--generated",
        type=int,
        default=1000,
        metavar="N",
        help="also the factoids among N questions of question_generator's over the train "
        "pages, drawn at its kinds' shares (0: none)",
    )
    quotes.add_argument(
        "--manual-questions",
        type=int,
        default=0,
        metavar="N",
        help="also N of question_generator's factoids over the software manuals' train pages "
        "(PostgreSQL, Git, SQLite, Django), drawn beside --generated and --limit: long pages, "
        "where the answering sentence is one of hundreds",
    )
    quotes.add_argument(
        "--limit",
        type=int,
        default=0,
        help="at most this many questions of the question files and --generated, drawn at random",
    )
    quotes.add_argument("--negatives", type=int, default=3, help="rows a question, at most")
    quotes.add_argument(
        "--page-negatives",
        type=int,
        default=0,
        help="more rows a question, at most, against sentences far from its evidence that a "
        "Quote at the page's opening view has the ranker read (on long pages, what the "
        "answer must beat)",
    )
    quotes.add_argument(
        "--other-pages",
        type=int,
        default=0,
        metavar="N",
        help="more rows a question, at most N, against the best sentence of another page of "
        "the question's own search's first results (with --quote-ranker: the one it would "
        "pick there), so that the ranker can order a search's results by their best sentence",
    )
    quotes.add_argument(
        "--declines",
        action="store_true",
        help="also the decline against sentences that answer and sentences that do not, "
        "the generated long-form and unanswerable questions included: a ranker that also "
        'decides declines (docs/reward.md, "Declines by evidence")',
    )
    quotes.add_argument(
        "--episodes",
        type=Path,
        action="append",
        default=[],
        metavar="EVAL.json",
        help="repeatable, with --declines: the quotes of the policy's own episodes on training "
        "questions (`webgpt eval --json-out`) against the decline",
    )
    quotes.add_argument("--seed", type=int, default=0)
    quotes.add_argument("--store", type=Path, default=None, help="offline web file")
    add_quote_ranker(quotes)  # with --declines or --other-pages: which sentence a page offers
    quotes.set_defaults(run=_quote_comparisons)


def register_train(kinds: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """`webgpt train bc|rl|verl`: each parses its own options when it runs
    (infra.trainer_options)."""
    add_trainer_command(kinds, "bc", "behavior cloning on demonstrations", _train_bc)
    add_trainer_command(
        kinds,
        "rl",
        "RL in the browsing environment against a reward model (TRL GRPO, KL to BC)",
        _train_rl,
    )
    add_trainer_command(
        kinds,
        "verl",
        "prepare PPO on many GPUs with verl: data, agent-loop config, launch command",
        _train_verl,
    )
    answerability = kinds.add_parser(
        "answerability",
        help="the model that decides, from the collected quotes, whether to answer or decline",
        description="Fits agent.answerability's model on the policy's own episodes: `webgpt "
        "eval --json-out` runs on training questions, recorded with --no-grounded-declines "
        '(learning/answerability.py; docs/agent.md, "Declines by answerability").',
    )
    answerability.add_argument(
        "--episodes",
        type=Path,
        action="append",
        required=True,
        help="eval --json-out file, repeatable",
    )
    answerability.add_argument("--out", type=Path, required=True, help="the model's folder")
    answerability.add_argument("--store", type=Path, default=None, help="offline web file")
    answerability.set_defaults(run=_train_answerability)
    question_kind = kinds.add_parser(
        "question-kind",
        help="the model that reads whether a question asks for an explanation",
        description="Fits agent.question_kind's model on training questions that name their "
        "kind, long-form or factoid (learning/question_kind.py; docs/agent.md, "
        '"Explanations read by a learned model").',
    )
    question_kind.add_argument(
        "--questions",
        type=Path,
        action="append",
        required=True,
        help="a question file of split train, repeatable",
    )
    question_kind.add_argument("--out", type=Path, required=True, help="the model's folder")
    question_kind.set_defaults(run=_train_question_kind)


def _train_answerability(args: argparse.Namespace) -> int:
    from webgpt.browser.offline import default_store_path
    from webgpt.learning.answerability import train

    train(args.episodes, args.store or default_store_path(), args.out, print_progress)
    return 0


def _train_question_kind(args: argparse.Namespace) -> int:
    from webgpt.learning.question_kind import train

    train(args.questions, args.out, print_progress)
    return 0


def _per_split(spec: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for part in spec.split(","):
        name, _, number = part.partition("=")
        if name.strip() not in ("train", "dev", "test") or not number.strip().isdigit():
            raise ConfigurationError(f"--per-split wants train=N,dev=N,test=N, not {spec!r}")
        counts[name.strip()] = int(number)
    return counts


def _generate(args: argparse.Namespace) -> int:
    if args.concurrency < 1:
        raise ConfigurationError(f"--concurrency wants 1 or more, not {args.concurrency}")
    teacher = parse_policy_target(args.teacher) if args.teacher else None
    return asyncio.run(_generate_async(args, teacher))


async def _generate_async(args: argparse.Namespace, teacher: PolicyTarget | None) -> int:
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
        if teacher is None:
            demos = await _scripted_demonstrations(args, questions, web)
        else:
            demos = await _teacher_demonstrations(args, questions, web, teacher)
    finally:
        await web.aclose()
    count = write_demonstrations(args.out, demos)
    splits = Counter(d.split or "-" for d in demos)
    print_progress(f"wrote {count} demonstrations to {args.out} ({dict(splits)})")
    return 0 if count else 1


def _generate_progress(done: int, total: int, kept: int) -> None:
    if done % 50 == 0 or done == total:
        print_progress(f"{done}/{total} questions, {kept} demonstrations")


async def _scripted_demonstrations(
    args: argparse.Namespace, questions: list[Question], web: Web
) -> list[Demonstration]:
    from webgpt.learning.scripted import ScriptedConfig, demonstrate

    rng = random.Random(args.seed)
    config = ScriptedConfig(detour_share=args.detour_share, answers=args.answers)
    demos: list[Demonstration] = []
    for number, question in enumerate(questions, start=1):
        session = web.session(config=SessionConfig(max_actions=rng.choice(config.max_actions)))
        demo = await demonstrate(question, session, rng, config)
        if demo is not None:
            demos.append(demo)
        _generate_progress(number, len(questions), len(demos))
    return demos


async def _teacher_demonstrations(
    args: argparse.Namespace, questions: list[Question], web: Web, target: PolicyTarget
) -> list[Demonstration]:
    """The teacher's kept episodes, in question order; `--concurrency` questions are in
    flight at once so that the server batches their steps."""
    from webgpt.learning.teacher import teacher_demonstration

    kept: list[Demonstration | None] = [None] * len(questions)
    gate = asyncio.Semaphore(args.concurrency)
    done = 0
    guided = args.policy_format == "completion"  # a chat teacher's tool calls have no grammar

    ranker = load_quote_ranker(args.quote_ranker if guided else None, print_progress)
    episode = EpisodeConfig(temperature=args.temperature, guided=guided, quote_ranker=ranker)

    async def one(index: int, teacher: OpenAIPolicy) -> None:
        nonlocal done
        async with gate:
            kept[index] = await teacher_demonstration(
                questions[index], web, teacher, episode, attempts=args.attempts
            )
        done += 1
        _generate_progress(done, len(questions), sum(d is not None for d in kept))

    try:
        async with serving(target, args.policy_key, guided, args.policy_format) as teacher:
            await asyncio.gather(*(one(i, teacher) for i in range(len(questions))))
    finally:
        if ranker is not None:
            await ranker.aclose()
    return [demo for demo in kept if demo is not None]


def _check(args: argparse.Namespace) -> int:
    return asyncio.run(_check_async(args))


async def _check_async(args: argparse.Namespace) -> int:
    from webgpt.learning.demonstrations import load_demonstrations, replay

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
    from webgpt.learning.bc import BCConfig, train_bc  # torch: only when training

    config = parse_config(BCConfig, args.options, "webgpt train bc")
    result = train_bc(config, log=print_progress)
    print(result.checkpoint)
    return 0


def _train_rl(args: argparse.Namespace) -> int:
    from webgpt.learning.rl.config import RLConfig  # torch and TRL: only when training
    from webgpt.learning.rl.trainer import train_rl

    config = parse_config(RLConfig, args.options, "webgpt train rl")
    result = train_rl(config, log=print_progress)
    print(result.checkpoint)
    return 0


def _train_verl(args: argparse.Namespace) -> int:
    from webgpt.learning.rl.verl import VerlRunConfig, prepare_verl_run

    config = parse_config(VerlRunConfig, args.options, "webgpt train verl")
    script = prepare_verl_run(config)
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
                split=args.split,
            )
            args.record.parent.mkdir(parents=True, exist_ok=True)
            with args.record.open("a", encoding="utf-8") as file:
                file.write(demo.to_json() + "\n")
            print(f"# recorded {len(demo.steps)} steps to {args.record}", file=out)
    finally:
        await web.aclose()
    return 0


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


def _decline_comparisons(args: argparse.Namespace) -> int:
    import json

    from webgpt.browser.offline import OfflineWeb
    from webgpt.learning.decline_comparisons import (
        balanced,
        decline_rows,
        episode_rows,
        first_sentence,
    )

    if args.episodes:
        outcomes = [o for path in args.episodes for o in recorded_outcomes(path)]
        found = list(episode_rows(outcomes, split=args.split, seed=args.seed))
    else:
        ranker = load_quote_ranker(args.quote_ranker, print_progress)
        store = OfflineWeb(args.store)
        try:
            generated = list(generate_questions(store, seed=args.seed))
            questions = pick_questions(generated, {args.split: args.questions}, args.seed)
            pick = ranker.best if ranker is not None else first_sentence
            found = list(
                decline_rows(questions, store, split=args.split, seed=args.seed, pick=pick)
            )
        finally:
            store.close()
            if ranker is not None:
                asyncio.run(ranker.aclose())
    rows = balanced(found, seed=args.seed)
    args.out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    print_progress(
        f"wrote {len(rows)} comparisons to {args.out}: "
        + ", ".join(f"{n} {why}" for why, n in sorted(Counter(r["why"] for r in rows).items()))
    )
    return 0 if rows else 1


def _quote_comparisons(args: argparse.Namespace) -> int:
    import json

    from webgpt.browser.offline import OfflineWeb
    from webgpt.learning.quote_comparisons import (
        ServedSentences,
        episode_evidence_rows,
        evidence_rows,
        first_sentence,
        other_page_rows,
        quote_rows,
    )

    if args.episodes and not args.declines:
        raise ConfigurationError("--episodes makes decline rows: it needs --declines")
    if args.page_negatives < 0:
        raise ConfigurationError(f"--page-negatives wants 0 or more, not {args.page_negatives}")
    if args.manual_questions < 0:
        raise ConfigurationError(f"--manual-questions wants 0 or more, not {args.manual_questions}")
    if args.other_pages < 0:
        raise ConfigurationError(f"--other-pages wants 0 or more, not {args.other_pages}")
    written = [q for path in args.questions for q in load_questions(path, split="train")]
    recorded = [o for path in args.episodes for o in recorded_outcomes(path)]
    picks = args.declines or args.other_pages
    ranker = load_quote_ranker(args.quote_ranker, print_progress) if picks else None
    store = OfflineWeb(args.store)
    try:
        wanted = args.generated or args.manual_questions
        generated = list(generate_questions(store, seed=args.seed)) if wanted else []
        picked = pick_questions(generated, {"train": args.generated}, args.seed)
        questions = written + [q for q in picked if q.kind == "factoid" or args.declines]
        if args.limit:
            questions = random.Random(args.seed).sample(questions, min(args.limit, len(questions)))
        drawn = {(q.question, q.url) for q in picked}
        unpicked = [q for q in generated if (q.question, q.url) not in drawn]
        manual = pick_manual_factoids(unpicked, args.manual_questions, args.seed)
        questions += manual
        pages = ServedSentences(store)
        rows = list(
            quote_rows(
                questions,
                pages,
                negatives=args.negatives,
                page_negatives=args.page_negatives,
                seed=args.seed,
            )
        )
        pick = ranker.best if ranker is not None else first_sentence
        if args.other_pages:
            rows += other_page_rows(
                questions, pages, store, pick=pick, other_pages=args.other_pages, seed=args.seed
            )
        if args.declines:
            rows += evidence_rows(questions, pages, store, pick=pick, seed=args.seed)
            rows += episode_evidence_rows(recorded, seed=args.seed)
    finally:
        store.close()
        if ranker is not None:
            asyncio.run(ranker.aclose())
    args.out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    asked = len({row["question"] for row in rows})
    print_progress(
        f"wrote {len(rows)} comparisons of {asked} questions to {args.out} "
        f"(of {len(written)} from question files, {len(picked)} generated, "
        f"{len(manual)} of the manuals and {len(recorded)} episodes)"
    )
    return 0 if rows else 1


def _quoted_questions(path: Path, split: str) -> "list[QuotedQuestion]":
    from webgpt.learning.comparisons import quoted_question
    from webgpt.learning.demonstrations import load_demonstrations

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

    from webgpt.learning.comparisons import GenerationReport, generate_comparisons

    def progress(done: int, report: GenerationReport) -> None:
        if done % 10 == 0 or done == len(questions):
            print_progress(f"{done}/{len(questions)}: {report.summary()}")

    web = offline_web(args.store)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_name(args.out.name + ".partial")
    ranker = load_quote_ranker(args.quote_ranker, print_progress)
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
                    episode=EpisodeConfig(temperature=args.temperature, quote_ranker=ranker),
                    session=SessionConfig(max_actions=args.max_actions),
                    progress=progress,
                )
    finally:
        await web.aclose()
        if ranker is not None:
            await ranker.aclose()
    partial.replace(args.out)  # a file that is there is complete
    print_progress(f"wrote {args.out}: {report.summary()}")
    return 0 if report.rows else 1
