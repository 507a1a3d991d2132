"""Reward models on a vLLM pooling server (reward.remote) behind the agent's Scorer.

The wire format, failures and the service wiring are tested against a loopback server
speaking vLLM's /classify (tests/reward/fake_vllm.py); the last test serves a checkpoint on
the real vLLM (CPU build) and checks it scores what the in-process scorer does.
"""

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.agent.fake_policy import Script
from tests.reward.fake_vllm import ClassifyScript, fake_vllm_classify_app
from tests.reward.tiny import answer
from tests.servers import free_port, serve
from webgpt.infra.errors import CheckpointError
from webgpt.infra.vllm_server import ServerConfig, start, stop
from webgpt.reward.errors import RewardServerError
from webgpt.reward.remote import RemoteRewardScorer
from webgpt.reward.scorer import RewardScorer

PROMPT = (
    "what color is the sky in story 150■"
    "[1] Sky notes (example.org)\n\nin story 150 the sky is blue■"
)
COLORS = ["green", "blue", "red", "purple"]


@pytest.fixture
def classify(reward_checkpoint: Path) -> Iterator[tuple[str, ClassifyScript]]:
    """A loopback vLLM /classify serving the trained checkpoint as "rm-bon"."""
    script = ClassifyScript(reward_checkpoint, served_name="rm-bon")
    with serve(fake_vllm_classify_app(script)) as base:
        yield base + "/v1", script


async def _scores(scorer: RemoteRewardScorer, texts: list[str]) -> list[float]:
    try:
        return await scorer.score_texts(texts)
    finally:
        await scorer.aclose()


async def test_remote_scores_equal_in_process_scores(
    classify: tuple[str, ClassifyScript], reward_checkpoint: Path
) -> None:
    url, script = classify
    texts = [PROMPT + answer(150, color) for color in COLORS]
    local = RewardScorer(reward_checkpoint, max_length=96)
    remote = RemoteRewardScorer(url, reward_checkpoint, max_length=96, batch_size=3)

    scores = await _scores(remote, texts)

    assert remote.name == "rm-bon"
    assert scores == pytest.approx(local.score_texts(texts), abs=1e-5)  # offset subtracted
    assert max(scores) == scores[COLORS.index("blue")]
    # Split into batches of at most 3, reassembled in order; raw logits, keep the answer.
    # The batches are sent at once, so the server may see them in either order.
    assert sorted(len(r["input"]) for r in script.requests) == [1, 3]
    assert all(
        r["model"] == "rm-bon"
        and r["use_activation"] is False
        and r["truncate_prompt_tokens"] == 96
        and r["truncation_side"] == "left"
        for r in script.requests
    )


async def test_a_server_serving_another_version_is_an_error(
    reward_checkpoint: Path, classify: tuple[str, ClassifyScript]
) -> None:
    url, script = classify
    script.served_name = "rm-0002"
    remote = RemoteRewardScorer(url, reward_checkpoint)
    with pytest.raises(RewardServerError, match=r"404: The model `rm-bon` does not exist"):
        await _scores(remote, ["in story 1 the sky is blue"])
    assert len(script.requests) == 1  # a 404 is not retried


async def test_a_restarting_server_is_retried(
    reward_checkpoint: Path, classify: tuple[str, ClassifyScript]
) -> None:
    url, script = classify
    script.faults = [503, 429]
    remote = RemoteRewardScorer(url, reward_checkpoint, retries=2, backoff_s=0.01)
    [score] = await _scores(remote, ["in story 1 the sky is blue"])
    assert score == score and len(script.requests) == 3
    script.requests.clear()
    script.faults = [502]  # a proxy's answer after the request went through: not again
    remote = RemoteRewardScorer(url, reward_checkpoint, retries=2, backoff_s=0.01)
    with pytest.raises(RewardServerError, match="answered 502"):
        await _scores(remote, ["a"])
    assert len(script.requests) == 1


async def test_failures_are_reward_server_errors(
    reward_checkpoint: Path, classify: tuple[str, ClassifyScript]
) -> None:
    url, script = classify
    script.faults = [503, 503, 503]
    remote = RemoteRewardScorer(url, reward_checkpoint, retries=2, backoff_s=0.01)
    with pytest.raises(RewardServerError, match="answered 503: simulated failure"):
        await _scores(remote, ["a"])

    script.faults = ["garbage"]
    remote = RemoteRewardScorer(url, reward_checkpoint)
    with pytest.raises(RewardServerError, match="one logit per text"):
        await _scores(remote, ["a"])

    closed = f"http://127.0.0.1:{free_port()}/v1"
    remote = RemoteRewardScorer(closed, reward_checkpoint, retries=1, backoff_s=0.01)
    with pytest.raises(RewardServerError, match="cannot reach the reward model server"):
        await _scores(remote, ["a"])


def test_the_checkpoint_manifest_is_required(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match=r"manifest\.json"):
        RemoteRewardScorer("http://127.0.0.1:9/v1", tmp_path)


def test_service_best_of_n_scores_on_the_reward_server(
    service_url: Callable[..., Any],
    script: Script,
    classify: tuple[str, ClassifyScript],
    reward_checkpoint: Path,
) -> None:
    url, classify_script = classify
    script.answers = [answer(7, color) for color in COLORS]
    # One readiness check, at start-up: a periodic one would take a fault meant for the
    # answer's three attempts whenever the first answer takes past its period.
    with service_url(
        reward_model=reward_checkpoint, reward_url=url, readiness_check_s=3600
    ) as base:
        ready = httpx.get(f"{base}/readyz")
        response = httpx.post(
            f"{base}/answer", json={"question": "crow corvus", "n": 4}, timeout=120
        )
        classify_script.faults = [503, 503, 503]
        failed = httpx.post(f"{base}/answer", json={"question": "crow corvus", "n": 2}, timeout=120)

    assert ready.status_code == 200, ready.text
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["answer"] == answer(7, "blue")
    assert body["versions"]["reward"] == "rm-bon"
    assert all(c["reward"] is not None for c in body["candidates"])
    assert failed.status_code == 503
    assert failed.json()["error"]["type"] == "reward_unavailable"
    assert "retry-after" in failed.headers


def test_blank_reward_settings_mean_the_default_and_none_means_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Compose files and ConfigMaps leave the reward variables blank for the default: the
    shipped reward model, loaded on first use (nothing at start); `none` turns it off."""
    from pathlib import Path

    from webgpt.agent.model import DEFAULT_REWARD
    from webgpt.service.scoring import build_scorer
    from webgpt.service.settings import ServiceSettings

    monkeypatch.setenv("WEBGPT_REWARD_MODEL", "")
    monkeypatch.setenv("WEBGPT_REWARD_URL", "")
    settings = ServiceSettings()
    assert settings.reward_model == Path(DEFAULT_REWARD) and settings.reward_url is None
    assert build_scorer(settings) is None
    monkeypatch.setenv("WEBGPT_REWARD_MODEL", "none")
    assert ServiceSettings().reward_model is None


@pytest.mark.slow  # starts a process
def test_scoring_on_pooling_servers_needs_no_torch(reward_checkpoint: Path) -> None:
    """The slim service image has no torch: neither the reward model's nor the quote
    ranker's remote path may import it."""
    folder = f"Path({str(reward_checkpoint)!r})"
    code = (
        "import sys; from pathlib import Path; "
        "from service.scoring import build_quote_ranker, build_scorer; "
        "from service.settings import ServiceSettings; url = 'http://127.0.0.1:9/v1'; "
        f"s = build_scorer(ServiceSettings(reward_model={folder}, reward_url=url)); "
        f"r = build_quote_ranker(ServiceSettings(quote_ranker={folder}, quote_ranker_url=url)); "
        "assert s.name == r.name == 'rm-bon'; assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_reward_url_without_its_checkpoint_is_refused() -> None:
    from webgpt.agent.errors import ConfigurationError
    from webgpt.service.scoring import build_scorer
    from webgpt.service.settings import ServiceSettings

    with pytest.raises(ConfigurationError, match="WEBGPT_REWARD_MODEL"):
        build_scorer(ServiceSettings(reward_model="none", reward_url="http://127.0.0.1:9/v1"))


async def test_a_quote_ranker_on_a_pooling_server_ranks_as_in_process(
    classify: tuple[str, ClassifyScript], reward_checkpoint: Path
) -> None:
    """QuoteScorer with a url: the same scores as in this process, asked of the server by
    the checkpoint's version, cut from the left at the ranker's length."""
    from webgpt.reward.quote_scorer import QUOTE_MAX_TOKENS, QuoteScorer

    url, script = classify
    sentences = [answer(150, color) for color in COLORS]
    # the fake server scores in float32 (fake_vllm), so this process does too
    local = QuoteScorer(reward_checkpoint, bf16=False)
    remote = QuoteScorer(reward_checkpoint, url=url)
    try:
        expected = await local.rank("what color is the sky", "Sky notes", sentences)
        scores = await remote.rank("what color is the sky", "Sky notes", sentences)
        assert scores == pytest.approx(expected, abs=1e-5)
        assert remote.name == "rm-bon" and remote.evidence_margin is None
        assert [r["truncate_prompt_tokens"] for r in script.requests] == [QUOTE_MAX_TOKENS]
        with pytest.raises(CheckpointError, match="use rank"):
            remote.best("what color is the sky", "Sky notes", sentences)
    finally:
        await local.aclose()
        await remote.aclose()


def test_service_quote_choice_on_a_pooling_server(
    service_url: Callable[..., Any],
    script: Script,
    classify: tuple[str, ClassifyScript],
    reward_checkpoint: Path,
) -> None:
    """WEBGPT_QUOTE_RANKER_URL: the service's quote ranker scores on the server, and the
    answer names the version it served; a server serving another version leaves the
    service not ready, saying so."""
    url, classify_script = classify
    script.answers = ["Crows remember faces for years [1]."]
    with service_url(quote_ranker=reward_checkpoint, quote_ranker_url=url) as base:
        ready = httpx.get(f"{base}/readyz")
        response = httpx.post(
            f"{base}/answer", json={"question": "Do crows remember human faces?"}, timeout=60
        )
    assert ready.status_code == 200, ready.text
    assert ready.json()["checks"]["quote_ranker"]["ok"] is True
    assert response.status_code == 200, response.text
    assert response.json()["versions"]["quote_ranker"] == "rm-bon"
    assert classify_script.requests and all(
        r["model"] == "rm-bon" for r in classify_script.requests
    )
    other = ClassifyScript(reward_checkpoint, served_name="quotes-other")
    with (
        serve(fake_vllm_classify_app(other)) as other_url,
        service_url(quote_ranker=reward_checkpoint, quote_ranker_url=other_url + "/v1") as base,
    ):
        unready = httpx.get(f"{base}/readyz")
    assert unready.status_code == 503
    check = unready.json()["checks"]["quote_ranker"]
    assert check["ok"] is False and "quote ranker" in check["detail"]


def test_a_quote_ranker_url_without_its_checkpoint_is_refused() -> None:
    from webgpt.agent.errors import ConfigurationError
    from webgpt.service.scoring import build_quote_ranker
    from webgpt.service.settings import ServiceSettings

    settings = ServiceSettings(quote_ranker="none", quote_ranker_url="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigurationError, match="WEBGPT_QUOTE_RANKER is none"):
        build_quote_ranker(settings)


@pytest.mark.slow
async def test_real_vllm_serves_the_checkpoint_as_trained(reward_checkpoint: Path) -> None:
    """The checkpoint folder as published, on vLLM's pooling runner: same rewards."""
    config = ServerConfig(
        model_dir=reward_checkpoint,
        served_name="rm-bon",
        port=free_port(),
        max_model_len=256,
        kv_cache_gib=1,
        extra_args=("--runner", "pooling"),
    )
    running = start(config, print, timeout_s=900, record=False)
    try:
        long_prompt = "the sky is " * 60 + PROMPT  # over max_length: truncated from the left
        texts = [long_prompt + answer(150, color) for color in COLORS] + [answer(3, "red")]
        remote = RemoteRewardScorer(running.url, reward_checkpoint, max_length=96)
        scores = await _scores(remote, texts)
    finally:
        stop(running)
    local = RewardScorer(reward_checkpoint, max_length=96).score_texts(texts)
    # vLLM's CPU kernels sum in another order than torch's: 1.6e-3 apart was seen on one
    # CPU, so the bound leaves room for any CPU; the ranking below is what best-of-n uses.
    assert scores == pytest.approx(local, abs=1e-2)
    assert max(scores[:4]) == scores[COLORS.index("blue")]
