"""A quote ranker: a reward checkpoint trained on quote comparisons (`webgpt comparisons
quotes`, then `webgpt train rm`) scores each sentence in view as the quote of an answer to
the question, and the Quote grammar offers the best (agent.quote_ranking).

`QuoteScorer` satisfies agent.quote_ranking.QuoteRanker structurally (reward/ never imports
agent/). It scores in this process (reward.scorer, torch), or with a url on a vLLM pooling
server serving the checkpoint (reward.remote: no torch here, so the slim service image can
rank too). An episode meets the same sentences again (a page seen twice, scrolled past and
back, best-of-n's episodes on one question), so scores are kept by text, a bounded number.

In this process it scores in bf16 on a CPU that computes bf16 itself (as vLLM serves it
there, infra.hardware): half float32's time for 0.26 GB more memory, and on the 223
dev and manuals factoids' own pages the same pick of 24 sentences every time
(docs/benchmarks.md, "The quote ranker"); elsewhere in float32. Its scores move by up to
about 0.2, which a margin recorded for declines by evidence reads as it is.
"""

from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from webgpt.infra.errors import CheckpointError
from webgpt.infra.hardware import cpu_has_native_bf16
from webgpt.reward.data import quote_text
from webgpt.reward.manifest import EVIDENCE_MARGIN, is_margin, load_reward_manifest

if TYPE_CHECKING:
    from webgpt.reward.remote import RemoteRewardScorer
    from webgpt.reward.scorer import RewardScorer

# A question and one sentence of at most 300 characters (agent.grammar.MAX_QUOTE_CHARS).
QUOTE_MAX_TOKENS = 256
CACHED_SCORES = 8192


class QuoteScorer:
    def __init__(
        self,
        folder: Path,  # the checkpoint; with url, only its manifest is read
        device: str | None = None,
        *,
        url: str | None = None,  # a vLLM pooling server's base URL serving the checkpoint
        api_key: str | None = None,
        bf16: bool | None = None,  # in this process; None: where the CPU computes bf16
    ) -> None:
        # checked before a model or a client is made, so an error leaves nothing to close
        margin = load_reward_manifest(folder).metrics.get(EVIDENCE_MARGIN)
        if margin is not None and not is_margin(margin):
            raise CheckpointError(f"{folder}: its {EVIDENCE_MARGIN} {margin!r} is not a number")
        self._evidence_margin = None if margin is None else float(margin)
        self._local: RewardScorer | None = None
        self._remote: RemoteRewardScorer | None = None
        if url is None:
            import torch  # only in this process

            from webgpt.reward import scorer

            if bf16 is None:
                on_cpu = scorer.scoring_device(device).type == "cpu"
                bf16 = on_cpu and cpu_has_native_bf16()
            self._local = scorer.RewardScorer(
                folder,
                max_length=QUOTE_MAX_TOKENS,
                device=device,
                dtype=torch.bfloat16 if bf16 else torch.float32,
            )
        else:
            from webgpt.reward import remote

            self._remote = remote.RemoteRewardScorer(
                url, folder, api_key=api_key, max_length=QUOTE_MAX_TOKENS, role="quote ranker"
            )
        either = self._local or self._remote
        assert either is not None
        self._scorer: RewardScorer | RemoteRewardScorer = either
        self._scores: OrderedDict[str, float] = OrderedDict()

    @property
    def name(self) -> str:
        return self._scorer.version

    @property
    def evidence_margin(self) -> float | None:
        """The margin its manifest records for declines by evidence; None: none chosen."""
        return self._evidence_margin

    async def rank(self, question: str, title: str, sentences: Sequence[str]) -> list[float]:
        """A score for each sentence as the quote answering question (higher: better)."""
        texts = [quote_text(question, title, sentence) for sentence in sentences]
        scores = {text: self._scores[text] for text in texts if text in self._scores}
        new = [text for text in dict.fromkeys(texts) if text not in scores]
        if new:
            scores.update(zip(new, await self._score(new), strict=True))
        for text, score in scores.items():  # the most recently used last
            self._scores[text] = score
            self._scores.move_to_end(text)
        while len(self._scores) > CACHED_SCORES:
            self._scores.popitem(last=False)
        return [scores[text] for text in texts]

    def best(self, question: str, title: str, sentences: Sequence[str]) -> str:
        """The sentence scored highest as the quote answering question (of equals, the
        first), scored in the calling thread: for data written offline, in this process."""
        if self._local is None:
            raise CheckpointError("a quote ranker on a server scores asynchronously: use rank")
        texts = [quote_text(question, title, sentence) for sentence in sentences]
        scores = self._local.score_texts(texts)
        return sentences[max(range(len(sentences)), key=lambda i: (scores[i], -i))]

    async def _score(self, texts: list[str]) -> list[float]:
        if self._remote is not None:
            return await self._remote.score_texts(texts)
        assert self._local is not None
        return await self._local.score_in_thread(texts)

    async def aclose(self) -> None:
        await self._scorer.aclose()
