"""Degenerate answers: text that must never be served as an answer.

A small policy under a grammar can write text that fits the grammar and says nothing: a
loop ("X.X.X.X", "in in in"), a sentence said again, blanks where the grammar allowed no
word it wanted ("was from    in     in"), a sentence cut before its citation ("... a
process that converts [1]."), or a sentence of the question's own words ("The capital is
called the capital [1]."). `degeneracy` names which; `webgpt eval` counts them, and an
episode that wrote one retries once and else declines (agent.episode.write_answer).
"""

import re

from webgpt.agent.answer_rules import CITATION, repeats_itself, restates_question
from webgpt.agent.declines import is_declined

# A run of words this long (1 to LOOP_WORDS words) repeated LOOP_TIMES times in a row.
LOOP_WORDS = 6
LOOP_TIMES = 3
_WORD = re.compile(r"\w+")
_BLANKS = re.compile(r"\S[ \t]{3,}\S")
# Words that cannot end an English sentence: a sentence whose last word before its
# citation is one of these, in lower case, was cut short. Capitalised, the word is a name
# ("the letter A", "The Who").
_OPEN_WORDS = frozenset({
    "a", "an", "the", "of", "in", "to", "for", "with", "by", "from", "on", "at", "as",
    "into", "onto", "than", "and", "or", "but", "nor", "that", "which", "whose", "who",
    "whom", "is", "are", "was", "were", "be", "been", "being", "has", "have", "had", "its",
    "their", "his", "her", "our", "your", "my", "this", "these", "those", "such", "very",
})  # fmt: skip
_ENDS = (".", "!", "?", "]", '"', "”", ")")


def degeneracy(answer: str | None, question: str) -> str | None:
    """Why the answer to the question is degenerate: "loop", "repeat", "blanks", "cut" or
    "restates" (each word before its first citation is the question's); None when it is
    not (a decline is never degenerate: its sentence is written by rule)."""
    if not answer or is_declined(answer):
        return None
    words = _WORD.findall(answer.lower())
    if _loops(words):
        return "loop"
    if repeats_itself(answer):
        return "repeat"
    if _BLANKS.search(answer):
        return "blanks"
    if _cut(answer):
        return "cut"
    if restates_question(answer, question):
        return "restates"
    return None


def _loops(words: list[str]) -> bool:
    for size in range(1, LOOP_WORDS + 1):
        span = size * LOOP_TIMES
        for start in range(len(words) - span + 1):
            run = words[start : start + size]
            if all(
                words[start + k * size : start + (k + 1) * size] == run
                for k in range(1, LOOP_TIMES)
            ):
                return True
    return False


def _cut(answer: str) -> bool:
    """The answer stops mid-sentence, or a sentence's last word before a citation is one
    that cannot end a sentence."""
    if not answer.rstrip().endswith(_ENDS):
        return True
    for citation in CITATION.finditer(answer):
        before = _WORD.findall(answer[: citation.start()])
        if (
            before
            and before[-1] in _OPEN_WORDS
            and not _cited_just_before(answer, citation.start())
        ):
            return True
    return False


def _cited_just_before(answer: str, at: int) -> bool:
    """A citation that follows another ("[1][2]", "[1], [2]") cites the same sentence."""
    return re.search(r"\]\W*$", answer[:at]) is not None
