"""The service's reward scorer: built from settings, and swapped while the service runs.

Placement: with `WEBGPT_REWARD_URL`, on a vLLM pooling server (reward.remote, no torch in
this process); without, in this process (reward.scorer). Either way the agent sees a
`Scorer`.

Hot reload (docs/design.md): `WEBGPT_REWARD_MODEL` may name an alias, a symlink such as
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

By default (`WEBGPT_REWARD_MODEL=default`) the reward model is the shipped one, and nothing
of it is loaded until a request asks for more than one episode (`FirstUse`): a fresh clone
has only its adapter, merging it takes a while, and a service whose answers all have one
episode never needs it. That first request prepares it, loads it and then follows
`registry/reward/current` as above; requests arriving meanwhile wait for the same load.
"""

import asyncio
import logging
import math
from collections.abc import Callable
from pathlib import Path

from webgpt.agent.errors import ConfigurationError
from webgpt.agent.model import load_quote_ranker, prepare_default_reward_model
from webgpt.agent.quote_ranking import QuoteRanker
from webgpt.agent.registry import CURRENT
from webgpt.agent.scoring import ScoredAnswer, Scorer
from webgpt.reward.factory import open_scorer
from webgpt.service.errors import RewardUnavailable
from webgpt.service.settings import ServiceSettings
from webgpt.service.versions import Slot, follow_alias, log_event, reload_outcome

PROBE = ScoredAnswer("ready?", "ready?■", "yes")


def build_scorer(settings: ServiceSettings) -> Scorer | None:
    """The scorer the settings ask to load at start; None without a reward model, or with
    the shipped one, which is loaded on first use (FirstUse)."""
    if settings.reward_model is None:
        if settings.reward_url is not None:
            raise ConfigurationError(
                "WEBGPT_REWARD_URL needs a reward model: WEBGPT_REWARD_MODEL is none, so "
                "best-of-n is off; set it to the served checkpoint's folder, whose manifest "
                "gives the version and offset (or to default, the shipped one)"
            )
        return None
    if settings.reward_on_first_use():
        return None
    return scorer_for(settings, settings.reward_model)


def build_decline_judge(settings: ServiceSettings) -> Scorer | None:
    """The decline judgment the settings name, loaded in this process at start; None when
    it is off."""
    if settings.decline_judge is None:
        return None
    return open_scorer(settings.decline_judge)


def build_quote_ranker(settings: ServiceSettings) -> QuoteRanker | None:
    """The quote ranker the settings name (`default`: the shipped one, prepared now if it is
    not yet), loaded at start in this process or on its vLLM pooling server
    (WEBGPT_QUOTE_RANKER_URL); None when it is off, or for a chat policy, whose tool calls
    carry no grammar for it to narrow."""
    if settings.quote_ranker is None and settings.quote_ranker_url is not None:
        raise ConfigurationError(
            "WEBGPT_QUOTE_RANKER_URL needs a quote ranker: WEBGPT_QUOTE_RANKER is none; set "
            "it to the served checkpoint's folder, whose manifest gives its version (or to "
            "default, the shipped one)"
        )
    if settings.policy_format == "chat":
        return None
    key = settings.quote_ranker_key.get_secret_value() if settings.quote_ranker_key else None
    return load_quote_ranker(
        settings.quote_ranker,
        lambda step: log_event("quote_ranker_prepare", "default", step),
        settings.quote_ranker_url,
        key,
    )


def scorer_for(settings: ServiceSettings, folder: Path) -> Scorer:
    """A scorer for the checkpoint in folder, placed as the settings say."""
    key = settings.reward_key.get_secret_value() if settings.reward_key else None
    return open_scorer(folder, settings.reward_url, key)


async def probe(scorer: Scorer) -> None:
    """Raise unless the scorer scores a probe answer to a finite number."""
    [score] = await scorer.score([PROBE])
    if not math.isfinite(score):
        raise ValueError(f"the reward model returned {score}")


async def probe_quote_ranker(ranker: QuoteRanker) -> None:
    """Raise unless the ranker scores a probe sentence to a finite number."""
    [score] = await ranker.rank(PROBE.question, "ready?", [PROBE.answer])
    if not math.isfinite(score):
        raise ValueError(f"the quote ranker returned {score}")


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


def prepare_shipped(progress: Callable[[str], None]) -> Path:
    """The registry alias that names the shipped reward model (made on first use), so that
    a version an operator promotes over it is followed too."""
    return prepare_default_reward_model(progress).parent / CURRENT


class FirstUse:
    """Loads a reward model into the slot when the first answer needs one, then follows
    its alias: the shipped reward model, by default.

    The load is one task that every waiting answer shares, shielded from their
    cancellation (a deadline, a client gone): the next answer finds it loaded, or still
    loading. A load that fails is logged and tried again by the next answer that needs it.
    """

    def __init__(
        self,
        slot: Slot[Scorer],
        prepare: Callable[[], Path],
        build: Callable[[Path], Scorer],
        reload_s: float,
        on_reload: Callable[[str], None],
    ) -> None:
        self.slot = slot
        self._prepare = prepare  # blocking: the alias to load and follow
        self._build = build
        self._reload_s = reload_s
        self._on_reload = on_reload
        self._loading: asyncio.Task[None] | None = None
        self._following: asyncio.Task[None] | None = None

    async def load(self) -> None:
        """Return once the slot holds a scorer; RewardUnavailable if the load failed."""
        if self.slot.current is not None:
            return
        if self._loading is None or self._loading.done():
            self._loading = asyncio.get_running_loop().create_task(self._load())
            # Retrieved here, logged in _load: every answer waiting for it may be gone.
            self._loading.add_done_callback(lambda task: task.cancelled() or task.exception())
        try:
            await asyncio.shield(self._loading)
        except Exception as error:
            raise RewardUnavailable(
                "the reward model that picks among episodes could not be loaded (the "
                "service's log says why); ask for one episode, or retry later"
            ) from error

    async def _load(self) -> None:
        try:
            alias = await asyncio.to_thread(self._prepare)
            scorer = await bring_up_scorer(self._build, alias.resolve())
        except Exception as error:
            log_event("reward_load_failed", "first use", repr(error), logging.WARNING)
            self._on_reload(reload_outcome(error))
            raise
        await self.slot.replace(scorer)
        log_event("reward_loaded", str(alias), scorer.name)
        self._on_reload("loaded")
        if self._reload_s > 0:
            self._following = asyncio.get_running_loop().create_task(
                follow_alias(
                    self.slot,
                    alias,
                    lambda target: bring_up_scorer(self._build, target),
                    self._reload_s,
                    self._on_reload,
                    "reward",
                )
            )

    async def aclose(self) -> None:
        """Stop a load under way and the following (the slot closes the scorer)."""
        tasks = [task for task in (self._loading, self._following) if task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
