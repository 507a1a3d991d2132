"""A follow-up question made standalone from the conversation before it is browsed.

After "Who wrote Hamlet?" answered "William Shakespeare wrote Hamlet [1].", the question
"When did he die?" searched as it stands finds nothing about Shakespeare: its pronoun
points into the conversation. `standalone_question` puts the thing it points to in its
place ("When did William Shakespeare die?"), read off the last exchange. The last
question either asks about a thing it names ("Who was Marie Curie?", "Where is the Brandenburg
Gate?") or asks for one ("Who wrote Hamlet?": a person; "What is the capital of France?":
a thing; "where": a place), which its answer then names. A pronoun points to the thing asked
for where it is of that kind (he, she, him, his, her after "who"; it, its, they, them,
their after "what" or "which"; there after "where", "what" or "which"; "what's" and
"whats" read as "what"), else to the thing the question named.
A name is a run of capitalised words in the page's own spelling ("Leonardo da Vinci");
a question typed in lower case names what its answer spells with capitals ("who wrote
hamlet" names "Hamlet" once the answer says "Hamlet").
Left as they stand: a pronoun after a name of the follow-up's own ("Who painted the Mona
Lisa and when did he die?"), "it" that points to nothing ("how long does it take", "is it
true that"), "there" that says something exists ("is there", "there are"), and any pronoun
with nothing in the last exchange to point to.
That is a rule, for a policy that cannot rewrite a question (the trained default writes
commands and answers only). A policy that can (a chat model: agent.policy.RewritesFollowUps)
rewrites the follow-up itself, and the rule is its fallback where it fails or writes
nothing (`made_standalone`); the trace says which did (agent.trace.FollowUpEvent.by).
"""

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from webgpt.agent.errors import PolicyError
from webgpt.agent.policy import Policy, RewritesFollowUps

_PERSON = frozenset({"he", "she", "him", "his", "her", "hers"})
_THING = frozenset({"it", "its", "they", "them", "their"})
_PLACE = frozenset({"there"})
_POSSESSIVE = frozenset({"his", "its", "their", "hers"})
_PRONOUN = re.compile(r"\b(he|she|him|his|her|hers|it|its|they|them|their|there)\b", re.I)
# A capitalised word, with the small words that stand inside names between two of them.
_NAME = re.compile(
    r"\b[A-Z][\w'’.-]*(?:\s+(?:(?:of|the|da|de|del|der|di|du|van|von|la|le|and)\s+)*"
    r"[A-Z][\w'’.-]*)*"
)
# Capitalised words that open sentences and questions, or greet, without naming anything.
_NOT_NAMES = frozenset({
    "a", "an", "the", "this", "that", "these", "those", "it", "its", "he", "she", "they",
    "his", "her", "their", "there", "here", "what", "which", "who", "whom", "whose", "when",
    "where", "why", "how", "is", "are", "was", "were", "do", "does", "did", "can", "could",
    "will", "would", "should", "may", "might", "in", "on", "at", "of", "for", "from", "by",
    "with", "as", "to", "and", "or", "but", "if", "yes", "no", "not", "i", "we", "you", "my",
    "our", "your", "according", "hello", "hi", "hey", "thanks", "thank", "sorry", "please",
    "sure", "well", "ok", "okay", "also", "however", "then", "so", "ask",
})  # fmt: skip
_CITATION = re.compile(r"\s*\[\d+\]")


@dataclass(frozen=True)
class Turn:
    """One message of a conversation: the user's question or the assistant's answer."""

    role: Literal["user", "assistant"]
    content: str


@dataclass(frozen=True)
class Standalone:
    question: str  # the question to browse: the follow-up with its referents in place
    replaced: tuple[tuple[str, str], ...]  # (pronoun, what it was taken to mean), in order
    by: Literal["rule", "policy"] = "rule"
    rewritten: bool = False


async def made_standalone(question: str, history: Sequence[Turn], policy: Policy) -> Standalone:
    """The question made standalone by the policy where it can rewrite one, else (or where
    it fails or writes nothing) by the rule."""
    if history and isinstance(policy, RewritesFollowUps):
        messages = [(turn.role, turn.content) for turn in history]
        try:
            written = (await policy.rewrite_follow_up(question, messages)).strip()
        except PolicyError:
            written = ""
        if written:
            return Standalone(written, (), by="policy", rewritten=written != question)
    return standalone_question(question, history)


def standalone_question(question: str, history: Sequence[Turn]) -> Standalone:
    """The question with each pronoun that points into the last exchange of history
    replaced by what it points to (the module's docstring says how that is read)."""
    asked, answered = _last_exchange(history)
    if asked is None or not _PRONOUN.search(question):
        return Standalone(question, ())
    asked_names = _names(asked)
    answer_names = _names(answered or "")
    # a question typed in lower case names what its answer spells with capitals
    asked_names += [n for n in answer_names if n.lower() in asked.lower() and n not in asked_names]
    asked_for = [n for n in answer_names if n.lower() not in asked.lower()]
    words = asked.lower().replace("?", " ").split()
    kinds = {"who": _PERSON, "what": _THING | _PLACE, "which": _THING | _PLACE, "where": _PLACE}
    opener = _question_word(words[0], kinds) if words else ""
    about_a_name = " ".join(
        w for w in words[1:] if w not in ("is", "was", "are", "were", "the", "a")
    )
    asks_about_a_name = about_a_name in (n.lower().removeprefix("the ") for n in asked_names)
    own_names = [m.start() for m in _NAME.finditer(question) if m.start() > 0]
    replaced: list[tuple[str, str]] = []

    def replace(match: re.Match[str]) -> str:
        pronoun = match[0].lower()
        if any(start < match.start() for start in own_names) or _points_nowhere(question, match):
            return match[0]
        asked_for_first = pronoun in kinds.get(opener, ()) and not asks_about_a_name
        named = next(
            iter(asked_for + asked_names if asked_for_first else asked_names + asked_for), None
        )
        if named is None:
            return match[0]
        replaced.append((match[0], named))
        if pronoun in _POSSESSIVE or (pronoun == "her" and _possessive_her(question, match.end())):
            return f"{named}'s"
        return f"in {named}" if pronoun in _PLACE else named

    rewritten = _PRONOUN.sub(replace, question)
    return Standalone(rewritten, tuple(replaced), rewritten=bool(replaced))


def _question_word(word: str, question_words: Iterable[str]) -> str:
    """A question word as typed with "is" run into it ("what's", "whats") read as itself."""
    for question_word in question_words:
        if word.replace("’", "'") in (f"{question_word}'s", f"{question_word}s"):
            return question_word
    return word


def _last_exchange(history: Sequence[Turn]) -> tuple[str | None, str | None]:
    """The last user message with text, and the assistant's reply to it (None if none)."""
    for index in range(len(history) - 1, -1, -1):
        turn = history[index]
        if turn.role == "user" and turn.content.strip():
            reply = next((t.content for t in history[index + 1 :] if t.role == "assistant"), None)
            return turn.content, reply
    return None, None


def _names(text: str) -> list[str]:
    """The names text writes, each once, in order: runs of capitalised words, less the
    words that open a sentence without naming anything ("What"), with their "the" ("the
    Eiffel Tower")."""
    text = _CITATION.sub("", text)
    names: list[str] = []
    for match in _NAME.finditer(text):
        words = match[0].rstrip(".").split()
        the = text[: match.start()].lower().endswith("the ")
        while words and words[0].lower() in _NOT_NAMES:
            the = words[0].lower() == "the"
            words = words[1:]
        while words and words[-1].lower() in _NOT_NAMES:
            words = words[:-1]
        name = " ".join(words).removesuffix("'s").removesuffix("’s")
        name = f"the {name}" if the and name else name
        if name and name not in names:
            names.append(name)
    return names


def _points_nowhere(question: str, match: re.Match[str]) -> bool:
    """A dummy "it" ("how long does it take", "is it true that") or an existential "there"
    ("is there a cure", "there are")."""
    before = question[: match.start()].lower().split()[-1:]
    after = question[match.end() :].lower().split()[:2]
    if match[0].lower() == "it":
        takes = bool(after) and after[0] in ("take", "takes", "took", "seem", "seems", "seemed")
        judged = before in (["is"], ["was"]) and len(after) == 2 and after[1] in ("to", "that")
        return takes or judged
    if match[0].lower() == "there":
        be = ("is", "are", "was", "were", "'s")
        return (bool(before) and before[0] in be) or (bool(after) and after[0] in be)
    return False


def _possessive_her(question: str, end: int) -> bool:
    """ "her" before a noun ("her first film") rather than as an object ("who married her")."""
    following = re.match(r"\s+([A-Za-z]+)", question[end:])
    return following is not None and following[1].lower() not in _NOT_NAMES
