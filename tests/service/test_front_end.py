"""The page in real Chromium, driven as a person would: asking and watching the trace,
recording a demonstration by clicking and typing (the stored record replays exactly), and
rating two answers on WebGPT's graded scale (a soft label the reward trainer reads).

Screenshots of each mode go to $WEBGPT_SCREENSHOTS when it is set (docs/img is made so:
docs/service.md, "The page")."""

import os
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, async_playwright

from tests.agent.fake_policy import Script
from tests.client.fake_reward import shipped_reward_model
from tests.servers import serve
from webgpt.agent.model import DEFAULT_REWARD_VERSION
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.scoring import ScoredAnswer, Scorer
from webgpt.browser.chromium import CHROMIUM_ARGS, CHROMIUM_PATH
from webgpt.browser.web import Web, WebOptions
from webgpt.learning.demonstrations import Demonstration, replay
from webgpt.reward.data import parse_row
from webgpt.service.app import create_app
from webgpt.service.metrics import Metrics
from webgpt.service.serving import AnswerService
from webgpt.service.settings import ServiceSettings
from webgpt.service.store import FeedbackStore

pytestmark = pytest.mark.slow
CROW_QUOTE = "Crows are birds of the genus Corvus."
PHONE = {"width": 390, "height": 844}


class LengthScorer:
    """Prefers longer answers (a Scorer fake: the test is about the page, not the model)."""

    name = "length"

    async def score(self, answers: Sequence[ScoredAnswer]) -> list[float]:
        return [float(len(a.answer)) for a in answers]

    async def aclose(self) -> None:
        pass


@contextmanager
def service(
    offline_store: Path,
    policy_url: str,
    db: Path,
    scorer: Scorer | None = LengthScorer(),  # noqa: B008 (stateless)
    **overrides: Any,
) -> Iterator[str]:
    settings = ServiceSettings(policy_url=policy_url, policy_model="scripted", **overrides)
    web = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
    answers = AnswerService(
        settings,
        web,
        OpenAIPolicy(policy_url, "scripted"),
        scorer,
        Metrics(),
        FeedbackStore(db),
    )
    with serve(create_app(answers)) as base:
        yield base


@asynccontextmanager
async def chromium_page(base: str) -> AsyncIterator[Page]:
    async with async_playwright() as playwright:
        # The browser package maps every host to nothing (its pages' requests are all
        # answered through the SSRF guard); a person's browser reaches the service.
        args = [a for a in CHROMIUM_ARGS if not a.startswith("--host-resolver-rules")]
        browser = await playwright.chromium.launch(executable_path=CHROMIUM_PATH, args=args)
        page = await browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        await page.goto(base)
        try:
            yield page
        finally:
            await browser.close()
        assert not errors, errors  # no script error on the page


async def screenshot(page: Page, name: str) -> None:
    folder = os.environ.get("WEBGPT_SCREENSHOTS")
    if folder:
        await page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


async def fits_a_phone(page: Page) -> bool:
    await page.set_viewport_size(PHONE)
    fits = await page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )
    await page.set_viewport_size({"width": 1280, "height": 900})
    return bool(fits)


async def select_text(page: Page, text: str) -> None:
    """Select `text` in the page text as a person dragging over it would."""
    await page.evaluate(
        """(text) => {
            const walker = document.createTreeWalker(
                document.getElementById("demo-text"), NodeFilter.SHOW_TEXT);
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                const at = node.data.indexOf(text);
                if (at < 0) continue;
                const range = document.createRange();
                range.setStart(node, at);
                range.setEnd(node, at + text.length);
                const selection = document.getSelection();
                selection.removeAllRanges();
                selection.addRange(range);
                return;
            }
            throw new Error("not on the page: " + text);
        }""",
        text,
    )


async def test_ask_watch_and_rate_two_answers(
    offline_store: Path, policy_url: str, script: Script, tmp_path: Path
) -> None:
    script_answers = ["Crows are corvids [1].", "Crows are clever corvids that remember faces [1]."]
    script.answers = list(script_answers)
    db = tmp_path / "feedback.sqlite"
    with service(offline_store, policy_url, db) as base:
        async with chromium_page(base) as page:
            assert await page.title() == "webgpt"
            await page.keyboard.press("/")  # focuses the question
            await page.keyboard.type("crow corvus")
            await page.fill("#n", "2")
            await page.click("#submit")
            await page.wait_for_selector("#result:not([hidden])", timeout=60_000)
            assert (
                await page.text_content("#answer")
                == "Crows are clever corvids that remember faces [1]."
            )
            # [1] links to its quote, listed under the page it links to.
            assert await page.get_attribute("#answer a.citation", "href") == "#ref-1"
            assert CROW_QUOTE in (await page.text_content("#ref-1") or "")
            link = page.locator("#references > li:has(#ref-1) > a")
            assert await link.get_attribute("href") == "https://en.wikipedia.org/wiki/Crow"
            # Each episode's trace is collapsed once the answer is in, and opens on a click.
            episodes = page.locator("#episodes details")
            assert await episodes.count() == 2
            assert not await episodes.first.evaluate("box => box.open")
            await episodes.first.locator("summary").click()
            trace = await page.text_content("#episodes") or ""
            assert "Search: crow corvus" in trace and f"Quoted: “{CROW_QUOTE}”" in trace
            assert "reward" in trace and "actions" in trace
            await screenshot(page, "ask")

            await page.click("#rate-these")
            await page.wait_for_selector("#rating:not([hidden])")
            assert await page.get_attribute("#tab-compare", "aria-selected") == "true"
            a = int(await page.get_attribute("#candidate-a", "data-candidate") or "-1")
            b = int(await page.get_attribute("#candidate-b", "data-candidate") or "-1")
            assert {a, b} == {0, 1}
            versions = await page.text_content("#candidate-a .versions") or ""
            assert "policy scripted" in versions and "reward model length" in versions
            await page.check("input[name=a-supported][value=yes]")
            await page.check("input[name=b-supported][value=partly]")
            await page.check("input[name=b-useful][value=no]")
            await page.locator("#candidate-a h3").click()  # focus off the radios, then a key
            await page.keyboard.press("2")  # A better
            assert await page.is_checked("input[name=grade][value=a_better]")
            await screenshot(page, "compare")
            assert await fits_a_phone(page)
            await page.click("#rating button[type=submit]")
            await page.wait_for_function(
                "document.getElementById('status').textContent.includes('recorded')"
            )
    store = FeedbackStore(db)
    rows = list(store.export_comparisons())
    store.close()
    assert len(rows) == 1
    row = rows[0]
    answers = {row["a"]["answer"], row["b"]["answer"]}
    assert answers == set(script_answers)
    assert (row["preference"], row["label"]) == ("a", 0.75)
    assert row["ratings"] == {
        "grade": "a_better",
        "a": {"supported": "yes", "coherent": None, "useful": None},
        "b": {"supported": "partly", "coherent": None, "useful": "no"},
    }
    assert parse_row(row).label == 0.75  # what `webgpt train rm` reads


async def test_the_episodes_box_works_from_a_fresh_clone(
    offline_store: Path,
    policy_url: str,
    script: Script,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No reward model configured: a page quoted twice is one reference with both quotes,
    each [n] leading to its own; two episodes are picked among by the shipped reward model,
    loaded on first use."""
    faces = "Crows can recognise individual human faces and remember them for years."
    home = tmp_path / "home"
    db = tmp_path / "fb.sqlite"
    with (
        shipped_reward_model(home, monkeypatch) as reward,
        service(offline_store, policy_url, db, None, **reward, relevant_quotes=0) as base,
    ):
        async with chromium_page(base) as page:
            script.oracle_quote = None
            script.commands = ["Search crow", "Clicked on link 0", f"Quote: {CROW_QUOTE}",
                               f"Quote: {faces}", "End: Answer"]  # fmt: skip
            script.answers = ["Crows are corvids [1] that know faces [2]."]
            await page.fill("#question", "crow corvus")
            await page.click("#submit")
            await page.wait_for_selector("#result:not([hidden])", timeout=60_000)
            pages = page.locator("#references > li")
            assert await pages.count() == 1
            assert await pages.locator("blockquote").count() == 2
            assert faces in (await page.text_content("#ref-2") or "")
            assert await page.get_attribute("#answer a.citation >> nth=1", "href") == "#ref-2"

            # Two episodes browse by reading the page; the shortest answer wins (fake_reward).
            script.oracle_quote = CROW_QUOTE
            script.answers = ["Crows are clever corvids [1].", "Corvids [1]."]
            await page.fill("#n", "2")
            await page.click("#submit")
            await page.wait_for_function(
                "document.getElementById('answer').textContent === 'Corvids [1].'",
                timeout=120_000,
            )
            made = await page.text_content("#result-versions") or ""
            assert f"reward model {DEFAULT_REWARD_VERSION}" in made
            assert await page.locator("#episodes details").count() == 2


async def test_a_person_records_a_demonstration_that_replays_exactly(
    offline_store: Path, policy_url: str, tmp_path: Path
) -> None:
    db = tmp_path / "feedback.sqlite"
    with service(offline_store, policy_url, db) as base:
        async with chromium_page(base) as page:
            await page.click("#tab-demonstrate")
            await page.fill("#demo-question", "What genus are crows?")
            await page.click("#demo-start button[type=submit]")
            await page.wait_for_selector("#demo-browser:not([hidden])")
            assert await page.text_content("#demo-left") == "100"
            await page.fill("#demo-query", "crow")
            await page.press("#demo-query", "Enter")
            await page.click("#demo-text a.link[data-link='0']")
            await page.wait_for_function(
                "document.getElementById('demo-title').textContent.startsWith('Crow')"
            )
            await page.locator("#demo-title").click()  # focus off the search box
            await page.keyboard.press("b")  # Back, by its key
            await page.wait_for_function(
                "document.getElementById('demo-title').textContent.startsWith('Search results')"
            )
            await page.click("#demo-text a.link[data-link='0']")
            await page.wait_for_function(
                "document.getElementById('demo-title').textContent.startsWith('Crow')"
            )
            await select_text(page, CROW_QUOTE)
            await page.click("#demo-quote")
            await page.wait_for_selector("#demo-quotes li")
            assert await page.text_content("#demo-quotes blockquote") == CROW_QUOTE
            await screenshot(page, "demonstrate")
            assert await fits_a_phone(page)
            await page.click("button[data-command='End: Answer']")
            await page.wait_for_selector("#demo-answer:not([hidden])")
            await page.keyboard.type("Crows belong to the genus Corvus ")
            await page.click("#demo-cite button")  # inserts [1] at the cursor
            await page.keyboard.type(".")
            assert (
                await page.input_value("#demo-answer-text")
                == "Crows belong to the genus Corvus [1]."
            )
            await page.click("#demo-answer button[type=submit]")
            await page.wait_for_function(
                "document.getElementById('status').textContent.includes('recorded')"
            )
            assert not await page.is_visible("#demo-browser")
    store = FeedbackStore(db)
    [(_, _, format, stored)] = list(store.export_demonstrations())
    store.close()
    assert format == "demonstration"
    demo = Demonstration.model_validate(stored)
    assert [step.command for step in demo.steps] == [
        "Search crow",
        "Clicked on link 0",
        "Back",
        "Clicked on link 0",
        f"Quote: {CROW_QUOTE}",
        "End: Answer",
    ]
    assert demo.source == "person" and demo.answer == "Crows belong to the genus Corvus [1]."
    web = Web(WebOptions(offline_store=offline_store, offline_only=True, js_mode="never"))
    try:
        assert await replay(demo, web.session()) == []  # the environment shows it again
    finally:
        await web.aclose()
