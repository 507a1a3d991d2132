"""The service's reward scorer: built from settings, and swapped while the service runs.

Placement: with `WEBGPT_REWARD_URL`, on a vLLM pooling server (reward.remote, no torch in
this process); without, in this process (reward.scorer). Either way the agent sees a
`Scorer`.

Hot reload (DESIGN.md): `WEBGPT_REWARD_MODEL` may name an alias, a symlink such as
`registry/reward/current` that operators re-point at a published version
(`ln -sfn rm-0002 current.new && mv -T current.new current` is atomic). Every
`WEBGPT_REWARD_RELOAD_S` seconds the service resolves it; when it names another version, a
new scorer is built off the event loop and must score a probe before it replaces the old
one (service.versions, shared with the policy). Answers in flight keep the scorer they
started with; the old one is closed when the last of them finishes. A version that fails
to load is logged, retried now and then, and never served; the old version goes on.
Every replica resolves the same alias on the shared registry, so all converge on it
within one period, and each answer's
`versions.reward` names the model that scored it.
"""

import asyncio
import math
from collections.abc import Callable
from pathlib import Path

from webgpt.agent.answer import ScoredAnswer, Scorer
from webgpt.agent.errors import ConfigurationError
from webgpt.reward.factory import open_scorer
from webgpt.service.settings import ServiceSettings
from webgpt.service.versions import Slot

PROBE = ScoredAnswer("ready?", "ready?■", "yes")


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


def scorer_slot(scorer: Scorer | None) -> Slot[Scorer]:
    """The slot answers take their scorer from; a replaced scorer is closed when drained."""
    return Slot(scorer, retire=lambda old: old.aclose())


async def bring_up_scorer(build: Callable[[Path], Scorer], target: Path) -> Scorer:
    """A scorer for target, built off the event loop, that has scored the probe."""
    scorer = await asyncio.to_thread(build, target)
    try:
        await probe(scorer)
    except BaseException:
        await scorer.aclose()
        raise
    return scorer
