"""`webgpt fetch` and `webgpt browse` as a user runs them."""

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.browser.fixture_site import HitCounter
from tests.servers import COMMAND_ENV
from webgpt.browser.corpus import build_corpus, wikipedia_pages
from webgpt.browser.offline import OfflineWeb


def webgpt(
    *args: str, stdin: str = "", home: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**COMMAND_ENV, "WEBGPT_HOME": str(home or "/nonexistent-webgpt-home")}
    return subprocess.run(
        [sys.executable, "-m", "webgpt.service.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


@pytest.mark.slow  # starts a process
def test_fetch_prints_the_page_as_the_model_sees_it(site: str) -> None:
    result = webgpt(
        "fetch", f"{site}/pages/links.html", "--allow", urlsplit(site).netloc, "--js", "never"
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Crows and their gifts (127.0.0.1)"
    assert "【1†Outside My Window†www.birdsoutsidemywindow.org】" in result.stdout


@pytest.mark.slow  # starts a process
def test_fetch_refuses_private_addresses_with_a_one_line_reason(
    site: str, internal: tuple[str, HitCounter]
) -> None:
    internal_url, counter = internal
    for url in (
        f"{site}/pages/links.html",
        f"{internal_url}/x",
        "file:///etc/passwd",
        "http://169.254.169.254/latest/meta-data/",
    ):
        result = webgpt("fetch", url, "--js", "never")
        assert result.returncode == 1, url
        assert result.stdout == ""
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert result.stderr.startswith("error: ")
    assert counter.hits == 0


@pytest.mark.slow  # starts a process
def test_bad_arguments_are_usage_errors() -> None:
    assert webgpt("fetch").returncode == 2
    assert webgpt("browse", "--question", "q", "--engine", "altavista").returncode == 2
    bad_allow = webgpt("fetch", "http://x.example", "--allow", ":80")
    assert bad_allow.returncode == 2 and "not HOST[:PORT]" in bad_allow.stderr


@pytest.mark.slow  # starts a process
def test_browse_without_an_offline_web_says_how_to_build_it(tmp_path: Path) -> None:
    result = webgpt("browse", "--question", "q", home=tmp_path)
    assert result.returncode == 1
    assert "webgpt corpus build" in result.stderr


@pytest.mark.slow  # starts a process
def test_browse_reads_commands_and_prints_the_answer_prompt(tmp_path: Path) -> None:
    summaries = tmp_path / "s.json"
    summaries.write_text(
        json.dumps({"Crow": {"title": "Crow", "extract": "Crows are clever birds."}})
    )
    build_corpus(tmp_path / "offline-web.sqlite", [("wikipedia", wikipedia_pages(summaries))])
    commands = (
        "Search clever birds\nnot a command\nClicked on link 0\nQuote: clever birds\nEnd: Answer\n"
    )
    result = webgpt(
        "browse", "-q", "Are crows clever?", "--js", "never", stdin=commands, home=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert '# {"type":"invalid_action"' in result.stdout
    assert "♦Actions left: 95" in result.stdout
    assert result.stdout.rstrip().endswith(
        "♦Answer prompt\nAre crows clever?■[1] Crow (en.wikipedia.org)\n\nclever birds■"
    )


@pytest.mark.slow  # starts a process
def test_corpus_build_adds_folders_at_their_base_url(tmp_path: Path) -> None:
    pages = Path(__file__).parent.parent / "data" / "pages"
    count = len([p for p in pages.iterdir() if p.suffix in (".html", ".txt")])
    out = tmp_path / "web.sqlite"
    built = webgpt(
        "corpus",
        "build",
        "--no-wikipedia",
        "--no-python-docs",
        "--no-manuals",
        "--out",
        str(out),
        "--add",
        str(pages),
        "--base-url",
        "https://fixtures.example/site",
    )
    assert built.returncode == 0, built.stderr
    assert f"offline web: {count} pages in {out}" in built.stderr
    found = webgpt("corpus", "search", "secret ingredient patience", "--store", str(out))
    assert (
        "A long article about bread\n  https://fixtures.example/site/article.html" in found.stdout
    )
    mismatched = webgpt(
        "corpus", "build", "--no-wikipedia", "--no-python-docs", "--add", str(pages)
    )
    assert mismatched.returncode != 0 and "--base-url" in mismatched.stderr
    missing = str(tmp_path / "nope")
    not_a_folder = webgpt(
        *("corpus", "build", "--no-wikipedia", "--no-python-docs", "--no-manuals"),
        *("--out", str(out)),
        *("--add", missing, "--base-url", "https://x.example/"),
    )
    assert not_a_folder.returncode == 1 and "is not a folder" in not_a_folder.stderr
    assert OfflineWeb(out).page_count() == count  # the failed build left the file intact
    assert list(tmp_path.glob("*.partial")) == []


@pytest.mark.slow  # starts a process
def test_blocked_domains_come_from_the_environment(site: str) -> None:
    env_blocked = subprocess.run(
        [
            sys.executable,
            "-m",
            "webgpt.service.cli",
            "fetch",
            f"{site}/pages/links.html",
            "--js",
            "never",
            "--allow",
            urlsplit(site).netloc,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={
            **COMMAND_ENV,
            "WEBGPT_HOME": "/nonexistent",
            "WEBGPT_BLOCKED_DOMAINS": "birdsoutsidemywindow.org",
        },
    )
    assert env_blocked.returncode == 0, env_blocked.stderr
    assert "birdsoutsidemywindow" not in env_blocked.stdout
    assert "【1†a blocked forum†www.reddit.com】" in env_blocked.stdout  # no longer blocked
