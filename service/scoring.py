"""The service's reward scorer: built from settings, and swapped while the service runs.

Placement: with `WEBGPT_REWARD_URL`, on a vLLM pooling server (reward.remote, no torch in
this process); without, in this process (reward.scorer). Either way the agent sees a
`Scorer`.

Hot reload (DESIGN.md): `WEBGPT_REWARD_MODEL` may name an alias, a symlink such as
`registry/reward/current` that operators re-point at a published version
(`ln -sfn rm-0002 current.new && mv -T current.new current` is atomic). Every
`WEBGPT_REWARD_RELOAD_S` seconds the service resolves it; when it names another version, a
new scorer is built off the event loop and must score a probe before it replaces the old
one. Answers in flight keep the scorer they started with; the old one is closed when the
last of them finishes. A version that fails to load is logged, retried now and then, and
never served; the old version goes on. Every replica resolves the same alias on the
shared registry, so all converge on it within one period, and each answer's
`versions.reward` names the model that scored it.
"""

import asyncio
import contextlib
import json
import logging
import math
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from agent.answer import ScoredAnswer, Scorer
from agent.errors import ConfigurationError
from reward.checkpoints import load_manifest
from reward.protocol import open_scorer
from service.settings import ServiceSettings

logger = logging.getLogger("webgpt.service")

PROBE = ScoredAnswer("ready?", "ready?■", "yes")
RETRY_FAILED_S = 60.0  # a version that failed to load is tried again this often


def build_scorer(settings: ServiceSettings) -> Scorer | None:
    """The scorer the settings ask for, or None without a reward model."""
    if settings.reward_model is None:
        if settings.reward_url is not None:
            raise ConfigurationError(
                "WEBGPT_REWARD_URL needs WEBGPT_REWARD_MODEL: the served checkpoint's folder, "
                "whose manifest gives the version and offset"
            )
        return None
    return scorer_for(settings, settings.reward_model)


def scorer_for(settings: ServiceSettings, folder: Path) -> Scorer:
    """A scorer for the checkpoint in folder, placed as the settings say."""
    key = settings.reward_key.get_secret_value() if settings.reward_key else None
    return open_scorer(folder, settings.reward_url, key)


async def probe(scorer: Scorer) -> None:
    """Raise unless the scorer scores a probe answer to a finite number."""
    [score] = await scorer.score([PROBE])
    if not math.isfinite(score):
        raise ValueError(f"the reward model returned {score}")


class ScorerSlot:
    """The current scorer; a replaced one is closed once no answer uses it any more."""

    def __init__(self, scorer: Scorer | None) -> None:
        self.current = scorer
        self._users: dict[Scorer, int] = {}

    @contextlib.asynccontextmanager
    async def use(self) -> AsyncIterator[Scorer | None]:
        scorer = self.current
        if scorer is None:
            yield None
            return
        self._users[scorer] = self._users.get(scorer, 0) + 1
        try:
            yield scorer
        finally:
            self._users[scorer] -= 1
            if not self._users[scorer]:
                del self._users[scorer]
                if scorer is not self.current:
                    await scorer.aclose()

    async def replace(self, scorer: Scorer) -> None:
        old, self.current = self.current, scorer
        if old is not None and old not in self._users:
            await old.aclose()

    async def aclose(self) -> None:
        if self.current is not None:
            await self.current.aclose()


async def follow_reward_checkpoint(
    slot: ScorerSlot,
    configured: Path,
    build: Callable[[Path], Scorer],
    interval_s: float,
    on_reload: Callable[[str], None] = lambda outcome: None,
) -> None:
    """Poll forever; swap the scorer when the configured path names another version."""
    failed: dict[Path, float] = {}  # target -> when it last failed to load
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(interval_s)
        target = configured.resolve()
        if loop.time() - failed.get(target, -math.inf) < RETRY_FAILED_S:
            continue
        scorer = None
        try:
            # Compare versions, not paths: the scorer in use knows which one it scores.
            if slot.current is not None and load_manifest(target).version == slot.current.name:
                continue
            scorer = await asyncio.to_thread(build, target)
            await probe(scorer)
        except Exception as error:  # any failure: keep serving the loaded version
            if scorer is not None:
                await scorer.aclose()
            _log("reward_reload_failed", target, str(error))
            failed[target] = loop.time()
            on_reload("failed")
            continue
        await slot.replace(scorer)
        failed.pop(target, None)
        _log("reward_reloaded", target, scorer.name)
        on_reload("loaded")


def _log(event: str, target: Path, detail: str) -> None:
    logger.info(json.dumps({"event": event, "checkpoint": str(target), "detail": detail}))
