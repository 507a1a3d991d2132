"""Golden files: each tests/data/pages/NAME.html with NAME.commands is browsed by a real
session, and every observation is compared with NAME.golden.txt.

Regenerate after an intended change (then read the diff):  make goldens
"""

import argparse
import asyncio
from pathlib import Path

from tests.browser.fakes import PAGES, FixtureWeb
from webgpt.browser.loader import PageCache, PageLoader
from webgpt.browser.session import BrowserSession, SessionConfig
from webgpt.browser.workers import RenderWorkers

QUESTION = "How do crows, bread and keywords relate?"


def golden_path(name: str) -> Path:
    return PAGES / f"{name}.golden.txt"


def golden_names() -> list[str]:
    return sorted(p.stem for p in PAGES.glob("*.commands"))


async def transcript(name: str, workers: RenderWorkers) -> str:
    """Search for the page, open it, then run its commands; everything the policy sees."""
    web = FixtureWeb()
    session = BrowserSession(
        web, PageCache(PageLoader(fetcher=web, workers=workers)), SessionConfig()
    )
    parts = [session.reset(QUESTION)]
    commands = [f"Search {name}", "Clicked on link 0"]
    commands += (PAGES / f"{name}.commands").read_text().splitlines()
    for command in commands:
        result = await session.step(command)
        parts.append(f"### {command}\n# {result.event.model_dump_json(exclude_none=True)}")
        parts.append(result.observation)
        if result.done:
            break
    if session.end_reason == "answer" and session.quotes:
        parts.append("### answer prompt\n" + session.answer_prompt())
    return "\n".join(parts) + "\n"


async def _regenerate() -> None:
    workers = RenderWorkers(size=1)
    try:
        for name in golden_names():
            golden_path(name).write_text(await transcript(name, workers), encoding="utf-8")
            print(f"wrote {golden_path(name)}")
    finally:
        workers.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--regenerate", action="store_true", required=True)
    parser.parse_args()
    asyncio.run(_regenerate())
