"""The front end in real Chromium: it loads, streams a trace from the scripted policy, shows
the answer with references, and submits a comparison that lands in SQLite."""

from collections.abc import Sequence
from pathlib import Path

import pytest
from playwright.async_api import async_playwright

from agent.answer import ScoredAnswer
from agent.openai_policy import OpenAIPolicy
from browser.chromium import CHROMIUM_ARGS, CHROMIUM_PATH
from browser.web import Web, WebOptions
from service.app import create_app
from service.metrics import Metrics
from service.serving import AnswerService
from service.settings import ServiceSettings
from service.store import FeedbackStore
from tests.agent.fake_policy import Script
from tests.servers import serve

pytestmark = pytest.mark.slow
SCREENSHOT = Path("/tmp/webgpt-front-end.png")


class LengthScorer:
    """Prefers longer answers (a Scorer fake: the test is about the page, not the model)."""

    name = "length"

    async def score(self, answers: Sequence[ScoredAnswer]) -> list[float]:
        return [float(len(a.answer)) for a in answers]

    async def aclose(self) -> None:
        pass


async def test_ask_watch_and_compare(
    offline_store: Path, policy_url: str, script: Script, tmp_path: Path
) -> None:
    script_answers = ["Crows are corvids [1].", "Crows are clever corvids that remember faces [1]."]
    script.answers = list(script_answers)
    db = tmp_path / "feedback.sqlite"
    settings = ServiceSettings(policy_url=policy_url, policy_model="scripted")
    web = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
    service = AnswerService(
        settings,
        web,
        OpenAIPolicy(policy_url, "scripted"),
        LengthScorer(),
        Metrics(),
        FeedbackStore(db),
    )
    with serve(create_app(service)) as base:
        async with async_playwright() as playwright:
            # The browser package maps every host to nothing (its pages' requests are all
            # answered through the SSRF guard); a person's browser reaches the service.
            args = [a for a in CHROMIUM_ARGS if not a.startswith("--host-resolver-rules")]
            browser = await playwright.chromium.launch(executable_path=CHROMIUM_PATH, args=args)
            page = await browser.new_page()
            await page.goto(base)
            assert await page.title() == "webgpt"
            await page.fill("#question", "crow corvus")
            await page.fill("#n", "2")
            await page.click("#submit")
            await page.wait_for_selector("#result:not([hidden])", timeout=60_000)
            assert (
                await page.text_content("#answer")
                == "Crows are clever corvids that remember faces [1]."
            )
            assert await page.locator(".episode").count() == 2
            trace = await page.text_content("#episodes") or ""
            assert (
                "Search: crow corvus" in trace
                and "Quoted: “Crows are birds of the genus Corvus.”" in trace
            )
            link = page.locator("#references a").first
            assert await link.get_attribute("href") == "https://en.wikipedia.org/wiki/Crow"
            await page.wait_for_selector("#compare:not([hidden])")
            await page.screenshot(path=str(SCREENSHOT), full_page=True)
            right = await page.text_content("#candidate-b")
            left = await page.text_content("#candidate-a")
            await page.click("button[data-choice=b]")
            await page.wait_for_function(
                "document.getElementById('thanks').textContent.includes('recorded')"
            )
            await browser.close()
    rows = list(FeedbackStore(db).export_comparisons())
    assert len(rows) == 1 and rows[0]["preference"] == "a"
    assert (rows[0]["a"]["answer"], rows[0]["b"]["answer"]) == (right, left)  # right preferred
    assert {left, right} == set(script_answers)
