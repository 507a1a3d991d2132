"""`webgpt fetch` and `webgpt corpus ...`: the browser from a terminal (`webgpt browse`, which
can record a demonstration, is in learning.cli)."""

import argparse
import asyncio
import dataclasses
import sys
from collections.abc import Iterable
from pathlib import Path

from webgpt.browser.corpus import (
    MANUALS,
    PYTHON_DOCS,
    PYTHON_DOCS_DIR,
    CorpusPage,
    build_corpus,
    download_wiki_summaries,
    folder_pages,
    installed,
    manual_pages,
    wikipedia_pages,
)
from webgpt.browser.errors import BrowserError
from webgpt.browser.netguard import AllowList
from webgpt.browser.offline import OfflineWeb, default_store_path
from webgpt.browser.web import ENGINES, Web, WebOptions


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    fetch = commands.add_parser("fetch", help="print a page as the model sees it")
    fetch.add_argument("url")
    add_web_arguments(fetch, with_engine=False)
    fetch.set_defaults(run=_fetch)

    render = commands.add_parser(
        "render-server",
        help="render script-built pages in Chromium for a service elsewhere (WEBGPT_RENDER_URL)",
    )
    render.add_argument("--host", default="127.0.0.1")
    render.add_argument("--port", type=int, default=8090)
    render.add_argument(
        "--allow", action="append", default=[], metavar="HOST[:PORT]",
        help="a private host pages may reach (testing only)",
    )  # fmt: skip
    render.set_defaults(run=_render_server)

    corpus = commands.add_parser("corpus", help="build or query the offline web")
    corpus_commands = corpus.add_subparsers(dest="corpus_command", required=True)
    build = corpus_commands.add_parser("build", help="build the offline web")
    build.add_argument(
        "--out", type=Path, default=None, help="default: $WEBGPT_HOME/offline-web.sqlite"
    )
    build.add_argument("--no-wikipedia", action="store_true")
    build.add_argument("--no-python-docs", action="store_true")
    build.add_argument("--python-docs", type=Path, default=PYTHON_DOCS_DIR)
    others = ", ".join(f"{m.name} ({m.package})" for m in MANUALS if m.name != PYTHON_DOCS)
    build.add_argument(
        "--no-manuals",
        action="store_true",
        help=f"leave out the other Debian manuals, which are added when installed: {others}",
    )
    build.add_argument(
        "--wiki-json",
        type=Path,
        default=None,
        help="summaries JSON to use instead of downloading the package",
    )
    build.add_argument(
        "--add",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="add a folder of HTML/PDF/text files (repeatable)",
    )
    build.add_argument(
        "--base-url",
        action="append",
        default=[],
        metavar="URL",
        help="the URL each --add folder is served at, in the same order",
    )
    build.set_defaults(run=_corpus_build)
    search = corpus_commands.add_parser("search", help="search the offline web")
    search.add_argument("query")
    search.add_argument("--count", type=int, default=10)
    search.add_argument("--store", type=Path, default=None)
    search.set_defaults(run=_corpus_search)


def add_web_arguments(parser: argparse.ArgumentParser, with_engine: bool) -> None:
    if with_engine:
        parser.add_argument(
            "--engine",
            choices=sorted(ENGINES),
            default=None,
            help="search engine (default: $WEBGPT_ENGINE or offline)",
        )
    parser.add_argument(
        "--allow",
        type=_allow_entry,
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="let this exact host be reached although not public (testing only)",
    )
    parser.add_argument(
        "--js",
        choices=["auto", "never", "always"],
        default="auto",
        help="render with Chromium: when the HTML has no text (auto), never, always",
    )
    parser.add_argument("--store", type=Path, default=None, help="offline web file")


def _allow_entry(spec: str) -> str:
    try:
        AllowList.parse([spec])
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return spec


def web_options(args: argparse.Namespace, engine: str | None) -> WebOptions:
    options = WebOptions.from_env(js_mode=args.js, offline_store=args.store)
    return dataclasses.replace(options, engine=engine, allow=options.allow + tuple(args.allow))


def _fetch(args: argparse.Namespace) -> int:
    return asyncio.run(_fetch_async(args))


async def _fetch_async(args: argparse.Namespace) -> int:
    web = Web(web_options(args, engine=None))
    try:
        page = await web.loader.load(args.url)
    finally:
        await web.aclose()
    if page.kind == "error":
        print(f"error: {' '.join(page.lines)}", file=sys.stderr)
        return 1
    print(page.display_title)
    for line in page.lines:
        print(line)
    return 0


def _render_server(args: argparse.Namespace) -> int:
    import uvicorn

    from webgpt.browser.chromium import ChromiumRenderer
    from webgpt.browser.fetch import FetchLimits, HttpFetcher
    from webgpt.browser.netguard import AddressPolicy
    from webgpt.browser.render_server import render_app

    if not 1 <= args.port <= 65535:
        raise SystemExit(f"error: --port must be 1..65535, not {args.port}")
    try:
        allow = AllowList.parse(WebOptions.from_env().allow + tuple(args.allow))
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None
    limits = FetchLimits()
    fetcher = HttpFetcher(policy=AddressPolicy(allow=allow), limits=limits)
    renderer = ChromiumRenderer(fetcher, owns_fetcher=True)
    app = render_app(renderer, limits.max_bytes)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def _corpus_build(args: argparse.Namespace) -> int:
    if len(args.add) != len(args.base_url):
        raise SystemExit("error: give one --base-url for each --add folder")
    sources: list[tuple[str, Iterable[CorpusPage]]] = []
    if not args.no_wikipedia:
        wiki_json = args.wiki_json or download_wiki_summaries()
        sources.append(("wikipedia", wikipedia_pages(wiki_json)))
    python = next(manual for manual in MANUALS if manual.name == PYTHON_DOCS)
    if not args.no_python_docs:
        if not args.python_docs.is_dir():  # the embedded default's manual: not optional
            raise SystemExit(
                f"error: no Python docs at {args.python_docs} (apt-get install {python.package})"
            )
        python = dataclasses.replace(python, folder=args.python_docs)
        sources.append((python.name, manual_pages(python)))
    if not args.no_manuals:
        manuals, note = installed(m for m in MANUALS if m.name != PYTHON_DOCS)
        if note is not None:
            print(note, file=sys.stderr)
        sources.extend((manual.name, manual_pages(manual)) for manual in manuals)
    for folder, base_url in zip(args.add, args.base_url, strict=True):
        sources.append((str(folder), folder_pages(folder, base_url, str(folder))))
    out = args.out or default_store_path()
    total = build_corpus(out, sources, _print_progress)
    print(f"offline web: {total} pages in {out}", file=sys.stderr)
    return 0


def _print_progress(source: str, count: int, finished: int) -> None:
    end = "\n" if finished or not sys.stderr.isatty() else "\r"
    state = "done" if finished else "..."
    if finished or sys.stderr.isatty() or count % 2500 == 0:
        print(f"  {source}: {count} pages {state}", end=end, file=sys.stderr, flush=True)


def _corpus_search(args: argparse.Namespace) -> int:
    try:
        web = OfflineWeb(args.store)
    except BrowserError as error:
        raise SystemExit(f"error: {error}") from error
    for result in web.search_sync(args.query, args.count):
        opens = "" if result.passage is None else f"  (opens at: {result.passage})"
        print(f"{result.title}\n  {result.url}{opens}\n  {result.snippet}\n")
    return 0
