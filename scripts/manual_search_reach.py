"""How often a search of the offline web for a term of a manual's own index finds the page
the index names: a check of the search on long manual pages that no query was tuned to.

    .venv/bin/python scripts/manual_search_reach.py [--per-manual 200] [--section-words N]

Builds an offline web (the Wikipedia summaries and the installed Debian manuals, indexed
in sections of `--section-words` words; a huge number indexes whole pages) in a temporary
file, then searches, for a seeded sample of each manual's terms, `<manual> <term>` for
10 results and counts the target page first and in the first 5. The terms:
- PostgreSQL: the book index (bookindex.html), entries that name one page;
- SQLite: the keyword index (keyword_index.html), keywords that name one page;
- Django: the index of names (genindex.html) of functions, classes, methods, attributes;
- Git: each command page's first three long options (`git rebase --onto`).
"""

import argparse
import random
import re
import tempfile
from collections import defaultdict
from pathlib import Path
from urllib.parse import urldefrag

import lxml.html

from webgpt.browser.corpus import (
    MANUALS,
    SECTION_WORDS,
    Manual,
    build_corpus,
    download_wiki_summaries,
    manual_pages,
    wikipedia_pages,
)
from webgpt.browser.offline import OfflineWeb

_DJANGO_NAME = re.compile(r"([\w.]+)(?:\(\))? \((?:in module|class in|.*method|.*attribute)")


def _manual(name: str) -> Manual:
    return next(manual for manual in MANUALS if manual.name == name)


def postgresql_terms() -> list[tuple[str, str]]:
    manual = _manual("postgresql-docs")
    index = lxml.html.parse(str(manual.folder / "bookindex.html")).getroot()
    terms = []
    for entry in index.iter("dt"):
        links = entry.findall("a")
        nested = entry.getparent().getparent().tag == "dd"  # a sub-entry ("storage parameter")
        term = (entry.text or "").strip().rstrip(",").strip()
        if len(links) == 1 and not nested and len(term) > 2:
            terms.append((f"postgresql {term}", manual.url(urldefrag(links[0].get("href"))[0])))
    return terms


def sqlite_terms() -> list[tuple[str, str]]:
    manual = _manual("sqlite-docs")
    index = lxml.html.parse(str(manual.folder / "keyword_index.html")).getroot()
    pages = defaultdict(set)
    for link in index.iter("a"):
        href = link.get("href") or ""
        if ".html" in href and not href.startswith("http"):
            pages[link.text_content().strip()].add(urldefrag(href)[0])
    return [
        (f"sqlite {keyword}", manual.url(next(iter(targets))))
        for keyword, targets in pages.items()
        if len(targets) == 1 and len(keyword) > 2
    ]


def django_terms() -> list[tuple[str, str]]:
    manual = _manual("django-docs")
    index = lxml.html.parse(str(manual.folder / "genindex.html")).getroot()
    terms = []
    for link in index.iter("a"):
        href, match = link.get("href") or "", _DJANGO_NAME.match(link.text_content().strip())
        if match and "#" in href:
            terms.append((f"django {match[1]}", manual.url(urldefrag(href)[0])))
    return terms


def git_terms() -> list[tuple[str, str]]:
    manual = _manual("git-docs")
    terms = []
    for path in sorted(manual.folder.glob("git-*.html")):
        page = lxml.html.parse(str(path)).getroot()
        options = [" ".join(term.text_content().split()) for term in page.iter("dt")]
        command = path.stem.replace("-", " ", 1)
        for option in [option for option in options if option.startswith("--")][:3]:
            terms.append((f"{command} {option.split()[0].split('=')[0]}", manual.url(path.name)))
    return terms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-manual", type=int, default=200)
    parser.add_argument("--section-words", type=int, default=SECTION_WORDS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "offline-web.sqlite"
        sources = [("wikipedia", wikipedia_pages(download_wiki_summaries()))]
        sources += [(manual.name, manual_pages(manual)) for manual in MANUALS]
        build_corpus(store, sources, section_words=args.section_words)
        web = OfflineWeb(store)
        random.seed(0)
        for name, terms in (
            ("PostgreSQL", postgresql_terms()),
            ("SQLite", sqlite_terms()),
            ("Django", django_terms()),
            ("Git", git_terms()),
        ):
            sample = random.sample(terms, min(args.per_manual, len(terms)))
            first = top5 = 0
            for query, url in sample:
                urls = [result.url for result in web.search_sync(query, 10)]
                first += bool(urls) and urls[0] == url
                top5 += url in urls[:5]
            print(f"{name}: {len(sample)} terms, the page first for {first}, in 5 for {top5}")
        web.close()


if __name__ == "__main__":
    main()
