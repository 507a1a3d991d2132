"""Honest declines: what the policy writes when the pages it found do not answer.

A decline is an answer of one fixed shape, "The pages I found do not say <what was asked>."
with no citation, so that it can be recognised exactly (`is_declined`), allowed by the
answer grammar (`DECLINE_REGEX`), demonstrated by the scripted demonstrator and never
counted as correct. Every answer result carries `declined`, and a declined answer has no
references: it cites nothing.
"""

import re

DECLINE_PREFIX = "The pages I found do not say "
MAX_DECLINE_CHARS = 160  # what was asked, after the prefix, in a demonstrated decline
# No citation and no square brackets: a decline cites nothing. Unbounded, as a bounded run
# costs the engine a state per character (agent.grammar); max_tokens ends it.
DECLINE_CLAUSE_REGEX = "[^\\[\\]■\\n]{3,}"  # what was asked, after the prefix
DECLINE_REGEX = DECLINE_PREFIX + DECLINE_CLAUSE_REGEX

_AUX = re.compile(
    r"^(?P<wh>[Ww]h\w+|[Ii]n (?:which|what) \w+"
    r"|[Hh]ow(?: (?:many|much|long|old|far|big|tall|large|high|deep|wide)(?: \w+)?)?) "
    r"(?P<aux>is|are|was|were|did|does|do|has|have|had|will|can) (?P<rest>.+)$"
)
# Past tenses of verbs asked about with "did" that do not just add -(e)d.
_IRREGULAR_PAST = {
    "become": "became", "begin": "began", "build": "built", "cost": "cost", "fall": "fell",
    "fight": "fought", "bring": "brought", "choose": "chose", "eat": "ate", "rise": "rose",
    "throw": "threw", "wear": "wore", "buy": "bought", "come": "came", "do": "did",
    "draw": "drew", "find": "found", "fly": "flew", "get": "got", "give": "gave", "go": "went",
    "grow": "grew", "have": "had", "hold": "held", "know": "knew", "lead": "led",
    "leave": "left", "lose": "lost", "make": "made", "meet": "met", "pay": "paid", "run": "ran",
    "say": "said", "see": "saw", "sell": "sold", "send": "sent", "sing": "sang",
    "speak": "spoke", "take": "took", "teach": "taught", "tell": "told", "win": "won",
    "write": "wrote",
}  # fmt: skip
# "When was X born": the last word is a participle, and the verb goes before it.
_PARTICIPLE = re.compile(r"^(?:\w+(?:ed|en|wn)|born|built|made|held|found|led|sold|won|set)$")
# "What does X do" / "How does X work" / "What does X mean": the verbs that end such questions.
_DOES = {
    "do": "does", "work": "works", "mean": "means", "stand": "stands", "contain": "contains",
    "return": "returns", "take": "takes", "cause": "causes", "have": "has",
}  # fmt: skip
# After a form of "be", these open a place, not a subject: "how many bricks are in X".
_LOCATIVE = {"in", "on", "at", "inside", "within"}
# Lower-case words inside a name: "Charles de Gaulle", "the 2031 Tour de France".
_NAME_PARTICLES = {"of", "de", "da", "van", "von", "and", "la", "le", "du", "der"}
# Lower-case words inside an event's name after "will"/"can": "the Nobel Prize in Physics".
_EVENT_PARTICLES = _NAME_PARTICLES | {"the", "in", "for"}
_PRONOUNS = {"it", "he", "she", "they", "we", "you", "i"}
# Words that end a question whose rest is not a noun phrase ("what is X used for").
_TRAILING = {
    "for", "like", "about", "of", "from", "to", "with", "in", "on", "at", "by", "as", "into",
}  # fmt: skip
_DETERMINERS = {"the", "a", "an", "his", "her", "its", "their", "my", "your", "our", "this"}
# A word and the punctuation written after it ("discover,").
_WORD_AND_MARKS = re.compile(r"^(?P<word>\w[\w'’-]*)(?P<marks>\W*)$")
_NO_BRACKETS = str.maketrans("[]", "()")


def is_declined(answer: str | None) -> bool:
    """The answer says the pages did not answer, and cites nothing."""
    return answer is not None and answer.startswith(DECLINE_PREFIX) and "[" not in answer


def uncited_decline(answer: str) -> str:
    """A decline that cites quotes anyway ("The pages I found do not say X [1]."; the
    grammar's cited branch admits the prefix too) as a decline: what the pages do not say
    has no source, so its citations go."""
    if not answer.startswith(DECLINE_PREFIX):
        return answer
    return re.sub(r"\s*\[\d+\]", "", answer).strip()


def _subject_end(words: list[str]) -> int | None:
    """Where the subject of a question's clause ends: a pronoun, or a name (capitalised
    words, possibly after "the"); None when it is neither."""
    if words[0].lower() in _PRONOUNS:
        return 1 if len(words) > 1 else None
    at = 1 if words[0].lower() == "the" else 0
    start = at
    while at < len(words) and (
        words[at][:1].isupper()
        or (words[at] in _NAME_PARTICLES and at + 1 < len(words) and words[at + 1][:1].isupper())
    ):
        at += 1
    if start < at < len(words) and words[at - 1].endswith(("'s", "’s")):
        return None  # "Ada's family": the name owns what follows, the subject goes on
    return at if start < at < len(words) else None


def _asks_subject(text: str) -> bool:
    """Whether a question whose wh-phrase is not followed by its verb ("which country has
    the most people") asks for its clause's subject, so that it reads as an indirect
    question as it stands. Not where "do" supports another verb ("what genus does X belong
    to") or it ends with a preposition or a participle ("which ocean is X on", "what year
    was X born"): there the wh-phrase is the object, and the words would need reordering."""
    words = text.lower().split(" ")
    return (
        not any(word in {"do", "does", "did"} for word in words)
        and words[-1] not in _TRAILING
        and not _PARTICIPLE.match(words[-1])
    )


def _past(verb: str) -> str:
    if verb in _IRREGULAR_PAST:
        return _IRREGULAR_PAST[verb]
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ied"
    return verb + "ed"


def indirect_question(question: str) -> str:
    """The question as a clause after "do not say": "When was Ada Lovelace born?" ->
    "when Ada Lovelace was born"; "Who won the 2026 FIFA World Cup?" -> "who won the 2026
    FIFA World Cup". Where the word order is unclear: "the answer to “<question>”". A
    decline cites nothing, so the question's square brackets (a config section, an index)
    are written as parentheses."""
    text = " ".join(question.strip().rstrip("?.! ").translate(_NO_BRACKETS).split())
    if not text:
        return "the answer to the question"
    first = text.split(" ", 1)[0]
    match = _AUX.match(text)
    if match is None:
        if first.lower() in {"who", "what", "which", "whose", "how"} and _asks_subject(text):
            return first.lower() + text[len(first) :]  # "who won ...": the wh-word's the subject
        return f"the answer to “{text}?”"
    wh = match["wh"][:1].lower() + match["wh"][1:]
    aux, rest = match["aux"], match["rest"].split(" ")
    if aux in {"will", "can"}:
        return _modal_clause(wh, aux, rest, text)
    *subject, last = rest
    if not subject:
        return f"{wh} {last} {aux}"
    if aux in {"is", "are", "was", "were"} and rest[0] in _LOCATIVE:
        return f"{wh} {aux} {' '.join(rest)}"  # "how many bricks are in X"
    if aux in {"is", "are", "was", "were"} and rest[0] == "there":
        return f"{wh} there {aux} {' '.join(rest[1:])}"  # "how many taxis there are in X"
    if aux == "did":  # "when did X die" -> "when X died": the verb follows the subject
        verb_at = _subject_end(rest)
        if verb_at is None:
            return f"the answer to “{text}?”"
        # the verb's past, its punctuation kept after it ("discover," -> "discovered,")
        verb = _WORD_AND_MARKS.match(rest[verb_at])
        if verb is None:
            return f"the answer to “{text}?”"
        past = _past(verb["word"]) + verb["marks"]
        return " ".join([wh, *rest[:verb_at], past, *rest[verb_at + 1 :]])
    if aux in {"does", "do"}:
        if last in _DOES:  # "what does X do" -> "what X does"
            return f"{wh} {' '.join(subject)} {last if aux == 'do' else _DOES[last]}"
        return f"the answer to “{text}?”"
    if aux in {"is", "are", "was", "were"} and _PARTICIPLE.match(last):
        # "when was X born" -> "when X was born"
        return f"{wh} {' '.join(subject)} {aux} {last}"
    if wh.lower().startswith("why") or last.lower() in _TRAILING:
        # "why is the sky blue", "what is X used for": the rest is not a noun phrase, and
        # moving the verb to its end would not make a clause
        return f"the answer to “{text}?”"
    return f"{wh} {' '.join(rest)} {aux}"  # "what is the capital of X" -> "what ... X is"


def _modal_clause(wh: str, aux: str, rest: list[str], text: str) -> str:
    """A question with "will" or "can": the modal goes after the subject ("where they will
    play", "what the population of X will be in 2050", "where the 2031 Tour de France will
    take place"), or stays where it is when the wh-word is the subject ("who will win X")."""
    first = rest[0]
    if first.lower() in _PRONOUNS:
        return " ".join([wh, first, aux, *rest[1:]])
    wh_is_subject = wh.split(" ")[0].lower() in {"who", "what", "which", "whose"} or (
        wh.lower().startswith(("how many", "how much"))
    )
    if "be" in rest[1:]:  # "what will the population of X be in 2050", "what can X be made of"
        at = rest.index("be", 1)
        return " ".join([wh, *rest[:at], aux, *rest[at:]])
    if wh_is_subject and first.islower() and first not in _DETERMINERS and "'" not in first:
        return f"{wh} {aux} {' '.join(rest)}"
    at = 0
    while at < len(rest) and (
        rest[at][:1].isupper() or rest[at][:1].isdigit() or rest[at] in _EVENT_PARTICLES
    ):
        at += 1
    if any(word not in _EVENT_PARTICLES for word in rest[:at]) and at < len(rest):
        return " ".join([wh, *rest[:at], aux, *rest[at:]])
    return f"the answer to “{text}?”"


def decline_answer(question: str) -> str:
    """The decline the demonstrator writes and the policy learns: a fixed prefix, then what
    was asked as an indirect question."""
    clause = indirect_question(question)
    if len(clause) > MAX_DECLINE_CHARS - 1:
        clause = "the answer to the question"
    return f"{DECLINE_PREFIX}{clause}."
