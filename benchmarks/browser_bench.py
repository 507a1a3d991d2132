"""Browser benchmark: render time, main-text retention, fetch throughput with the shared
page cache, the offline web's build and its longest pages, and memory. Prints figures;
docs/benchmarks.md records them.

    .venv/bin/python benchmarks/browser_bench.py [--pages 200] [--docs DIR] [--longest 50]
        [--only render|fetch|offline-web]

Render: every strategy runs in this process on the same Sphinx pages (a seeded sample of
the Python 3.11 docs) so the figures compare like with like:
- ours: browser.render.render_html (declared main / readability / body, then html2text);
- whole-page html2text: lxml parse + html2text over the whole page, an approximation of
  gpt-oss simple_browser's processing (lxml + html2text, no readability);
- readability + html2text: readability's summary, then html2text.
Retention: share of the words of Sphinx's `[role=main]` element (the ground-truth main
text) that each output keeps, as a multiset. Qualified signatures: the time "ours" spends
writing Sphinx's Python signatures with their qualified names (docs/rendering.md), timed
alone on the parsed pages.

Fetch: a real HTTP server on 127.0.0.1 serves the same pages; 4 episodes open the same 50
pages concurrently, once with one shared PageCache (as one request does) and once with a
cache each.

Offline web: `webgpt corpus build` into a temporary file (the Wikipedia summaries are
downloaded once and cached; the Debian manuals installed here), timed, with the pages of
each source and the file's size; then the `--longest` pages of that offline web by
document size, each rendered in this process as the browser renders it: the time, and the
text the policy can scroll through (characters and 100-column display lines; a window
shows 20 lines).
"""

import argparse
import asyncio
import heapq
import random
import re
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import html2text
import lxml.html
from readability import Document

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for tests.servers

from webgpt.browser.fetch import FetchLimits, HttpFetcher
from webgpt.browser.loader import PageCache, PageLoader
from webgpt.browser.netguard import AddressPolicy, AllowList
from webgpt.browser.render import RenderOptions, qualify_signatures, render_html
from webgpt.browser.workers import RenderWorkers

WORD = re.compile(r"\w+")
URL = "https://docs.python.org/3.11/"


def html_to_text(html: str) -> str:
    converter = html2text.HTML2Text()
    converter.body_width = 0
    converter.ignore_links = True
    converter.ignore_images = True
    return str(converter.handle(html))


def whole_page(raw: bytes, url: str) -> str:
    doc = lxml.html.document_fromstring(raw)
    return html_to_text(lxml.html.tostring(doc, encoding="unicode"))


def readability_page(raw: bytes, url: str) -> str:
    return html_to_text(Document(raw, url=url).summary(html_partial=True))


def ours(raw: bytes, url: str) -> str:
    return "\n".join(render_html(raw, url, None, RenderOptions()).lines)


def main_words(raw: bytes) -> Counter[str]:
    doc = lxml.html.document_fromstring(raw)
    main = doc.xpath("//*[@role='main']") or doc.xpath("//body")
    return Counter(WORD.findall(main[0].text_content().lower()))


def retention(expected: Counter[str], text: str) -> float:
    got = Counter(WORD.findall(text.lower()))
    total = sum(expected.values())
    return sum(min(n, got[w]) for w, n in expected.items()) / total if total else 1.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_render(files: list[Path]) -> None:
    strategies: dict[str, Callable[[bytes, str], str]] = {
        "ours (declared main/readability/body + html2text)": ours,
        "whole-page html2text (gpt-oss-like)": whole_page,
        "readability + html2text": readability_page,
    }
    print(f"render, {len(files)} Python-docs pages, in-process, single core")
    print(f"  {'strategy':52} {'p50 ms':>7} {'p95 ms':>7} {'keep':>6} {'<90%':>5}")
    pages = [(f.read_bytes(), URL + f.name) for f in files]
    expected = [main_words(raw) for raw, _ in pages]
    for name, render in strategies.items():
        times, kept = [], []
        for (raw, url), words in zip(pages, expected, strict=True):
            start = time.perf_counter()
            text = render(raw, url)
            times.append((time.perf_counter() - start) * 1000)
            kept.append(retention(words, text))
        low = sum(k < 0.9 for k in kept)
        print(
            f"  {name:52} {percentile(times, 0.5):7.1f} {percentile(times, 0.95):7.1f}"
            f" {statistics.mean(kept):6.1%} {low:5d}"
        )


def bench_signatures(files: list[Path]) -> None:
    times, count = [], 0
    for f in files:
        doc = lxml.html.document_fromstring(f.read_bytes())
        start = time.perf_counter()
        count += qualify_signatures(doc)
        times.append((time.perf_counter() - start) * 1000)
    print(
        f"  qualified signatures ({count} on these pages)           "
        f"{percentile(times, 0.5):7.2f} {percentile(times, 0.95):7.2f}"
    )


async def bench_fetch(files: list[Path], root: Path) -> None:
    from starlette.applications import Starlette
    from starlette.staticfiles import StaticFiles

    from tests.servers import serve

    app = Starlette()
    app.mount("/", StaticFiles(directory=root))
    urls_rel = [f.relative_to(root).as_posix() for f in files[:50]]
    with serve(app) as base:
        allow = AllowList.parse([base.removeprefix("http://")])
        http = HttpFetcher(policy=AddressPolicy(allow=allow), limits=FetchLimits())
        workers = RenderWorkers(size=2)
        loader = PageLoader(fetcher=http, workers=workers)
        urls = [f"{base}/{u}" for u in urls_rel]
        await loader.load(urls[0])  # start the workers outside the timing
        try:
            for label, shared in (("one shared cache", True), ("a cache per episode", False)):
                common = PageCache(loader)
                caches = [common if shared else PageCache(loader) for _ in range(4)]

                async def episode(cache: PageCache) -> None:
                    for url in urls:
                        await cache.get(url)

                start = time.perf_counter()
                await asyncio.gather(*(episode(c) for c in caches))
                elapsed = time.perf_counter() - start
                loads = sum(c.misses for c in set(caches))
                print(
                    f"  4 episodes x {len(urls)} pages, {label:20}: {elapsed:5.2f} s,"
                    f" {4 * len(urls) / elapsed:6.1f} page views/s, {loads} fetch+render"
                )
        finally:
            await http.aclose()
            workers.close()


def bench_offline_web(longest: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "offline-web.sqlite"
        command = [sys.executable, "-m", "webgpt.service.cli", "corpus", "build", "--out"]
        start = time.perf_counter()
        built = subprocess.run([*command, str(store)], capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - start
        if built.returncode != 0:
            raise SystemExit(f"corpus build failed:\n{built.stderr}")
        print(f"offline web: `webgpt corpus build` in {elapsed:.1f} s, "
              f"{store.stat().st_size / 2**20:.0f} MiB")  # fmt: skip
        for line in built.stderr.splitlines():
            if line.strip().endswith("pages done") or line.startswith("note:"):
                print(f"  {line.strip()}")
        db = sqlite3.connect(store)
        rows = db.execute("SELECT url, source, content_type, body FROM pages")
        pages = heapq.nlargest(
            longest,
            ((url, source, zlib.decompress(body)) for url, source, kind, body in rows
             if kind == "text/html"),
            key=lambda page: len(page[2]),
        )  # fmt: skip
        db.close()
    times, chars, lines = [], [], []
    for url, _, body in pages:
        start = time.perf_counter()
        page = render_html(body, url, "utf-8", RenderOptions())
        times.append((time.perf_counter() - start) * 1000)
        chars.append(sum(len(line) + 1 for line in page.lines))
        lines.append(len(page.lines))
    sources = Counter(source for _, source, _ in pages)
    sizes = [len(body) / 1024 for _, _, body in pages]
    print(f"the {len(pages)} longest pages ({min(sizes):.0f}-{max(sizes):.0f} KiB of HTML; "
          + ", ".join(f"{source} {n}" for source, n in sources.most_common()) + ")")  # fmt: skip
    print(f"  {'':24} {'p50':>8} {'p95':>8} {'max':>8}")
    for name, values in (
        ("render ms", times),
        ("text characters", chars),
        ("display lines", lines),
    ):
        print(
            f"  {name:24} {percentile(values, 0.5):8.0f} {percentile(values, 0.95):8.0f}"
            f" {max(values):8.0f}"
        )
    slowest = max(range(len(pages)), key=lambda i: times[i])
    print(f"  slowest: {pages[slowest][0]} ({times[slowest]:.0f} ms, {lines[slowest]} lines)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--docs", type=Path, default=Path("/usr/share/doc/python3.11/html"))
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--longest", type=int, default=50)
    parser.add_argument("--only", choices=["render", "fetch", "offline-web"], default=None)
    args = parser.parse_args()
    files = sorted(
        p for p in args.docs.rglob("*.html") if not any(part.startswith("_") for part in p.parts)
    )
    random.seed(0)
    sample = random.sample(files, min(args.pages, len(files)))
    if args.only in (None, "render"):
        bench_render(sample)
        bench_signatures(sample)
    if args.only in (None, "fetch"):
        print("fetch through real HTTP on 127.0.0.1, render in 2 worker processes")
        asyncio.run(bench_fetch(sample, args.docs))
    if args.only in (None, "offline-web"):
        bench_offline_web(args.longest)
    self_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"memory: peak RSS {self_mb:.0f} MiB (this process), {child_mb:.0f} MiB (largest worker)")


if __name__ == "__main__":
    main()
