"""Censoring pages that contain the question (or reference answer): a 10-gram overlap."""

import re
from collections.abc import Iterable

from webgpt.browser.page import Page

NGRAM = 10
_WORD = re.compile(r"\w+")


def _ngrams(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


class Censor:
    """Flags pages that share any 10 consecutive words with one of the given texts."""

    def __init__(self, texts: Iterable[str], n: int = NGRAM) -> None:
        self._n = n
        self._grams: set[tuple[str, ...]] = set()
        for text in texts:
            self._grams |= _ngrams(_WORD.findall(text.lower()), n)

    def hits(self, page: Page) -> bool:
        if not self._grams:
            return False
        words = _WORD.findall(page.text_index.text.lower())
        return any(
            tuple(words[i : i + self._n]) in self._grams for i in range(len(words) - self._n + 1)
        )
