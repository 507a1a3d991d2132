"""Every WEBGPT_* variable through one mechanism (infra.settings): the browser's, the home."""

from pathlib import Path

import pytest

from webgpt.browser.render import RenderOptions
from webgpt.browser.web import WebOptions
from webgpt.infra.settings import webgpt_home


def test_web_options_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEBGPT_ENGINE", "searxng")
    monkeypatch.setenv("WEBGPT_ALLOW", " 127.0.0.1:8888, ,localhost ")
    monkeypatch.setenv("WEBGPT_SEARXNG_URL", "http://127.0.0.1:8888")
    monkeypatch.setenv("WEBGPT_BRAVE_API_KEY", "brave-key")
    monkeypatch.setenv("WEBGPT_OFFLINE_STORE", "/srv/offline-web.sqlite")
    monkeypatch.setenv("WEBGPT_RENDER_URL", "http://renderer:8090")
    monkeypatch.setenv("WEBGPT_BLOCKED_DOMAINS", "Example.COM.,  news.example.org ,.")
    options = WebOptions.from_env()
    assert options.engine == "searxng"
    assert options.allow == ("127.0.0.1:8888", "localhost")
    assert options.searxng_url == "http://127.0.0.1:8888"
    assert options.brave_api_key == "brave-key"
    assert options.offline_store == Path("/srv/offline-web.sqlite")
    assert options.render_url == "http://renderer:8090"
    # A trailing dot or capitals do not slip past the list; "." alone names nothing.
    assert options.render.blocked_domains == frozenset({"example.com", "news.example.org"})


def test_unset_and_empty_variables_leave_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ENGINE", "ALLOW", "OFFLINE_STORE", "RENDER_URL", "BRAVE_API_KEY"):
        monkeypatch.delenv(f"WEBGPT_{name}", raising=False)
    monkeypatch.setenv("WEBGPT_BLOCKED_DOMAINS", "")  # blank in a compose file: unset
    assert WebOptions.from_env() == WebOptions()
    assert WebOptions.from_env().render.blocked_domains == RenderOptions().blocked_domains


def test_arguments_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEBGPT_ENGINE", "searxng")
    monkeypatch.setenv("WEBGPT_ALLOW", "127.0.0.1:1")
    options = WebOptions.from_env(engine="offline", allow=None)  # None: not given
    assert (options.engine, options.allow) == ("offline", ("127.0.0.1:1",))


def test_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WEBGPT_HOME", str(tmp_path))
    assert webgpt_home() == tmp_path
    monkeypatch.setenv("WEBGPT_HOME", "")
    assert webgpt_home() == Path.home() / ".cache" / "webgpt"
