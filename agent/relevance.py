"""Which quotable sentences in view bear on the question: the rule of guided decoding that
offers a factoid question's policy only the few most relevant (`--relevant-quotes K`, 2 by
default; docs/questions.md, "Relevant quotes and stated numbers", measured there).

A small policy quotes the sentence it has seen quoted most, a page's first ("Malawi is a
landlocked country in Southeast Africa." for "which country borders malawi to the west"),
although the sentence that answers is in view ("It is bordered by Zambia to the west, ...").
A sentence's relevance is the question's words it shares, each weighted by how rare the
word is among the page's sentences (inverse document frequency, as BM25 weights terms): the
page's subject stands in most of its sentences and weighs little, "west" weighs much.

Two rules read what a sentence adds to the question. One whose every word is the
question's restates it and answers nothing: a page's short description, from which a
question was often made ("Capital and largest city of Tunisia" for "what is the name of the
capital and largest city of tunisia"), bears on it no more than an unrelated sentence. And
a question asking how many or in what year is answered by a number: under numbers_bear a
sentence showing a number the question does not outranks every sentence that shows none
("English mathematician and philosopher (1861–1947)" for "in what year did Alfred North
Whitehead die", above the page's first sentence naming him).
"""

import math
import re
import unicodedata
from collections.abc import Sequence

_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# Words that say what kind of question it is, not what it is about.
_QUESTION_WORDS = frozenset({
    "a", "an", "the", "of", "in", "on", "at", "for", "by", "from", "to", "with", "and", "or",
    "but", "not", "no", "is", "are", "was", "were", "be", "been", "being", "am", "do", "does",
    "did", "done", "has", "have", "had", "having", "what", "which", "who", "whom", "whose",
    "when", "where", "why", "how", "that", "this", "these", "those", "it", "its", "as", "into",
    "about", "than", "then", "there", "their", "they", "them", "his", "her", "he", "she", "i",
    "me", "my", "you", "your", "we", "our", "us", "can", "could", "should", "would", "will",
    "shall", "may", "might", "must", "much", "many", "roughly", "approximately", "approx",
    "exactly", "name", "another", "other", "called", "known", "any", "some", "tell", "please",
    "s", "function", "module", "method", "used",
})  # fmt: skip
# A line of code names a function and says nothing of it: a ">>>" example, or a signature
# ("json.dumps(obj, *, skipkeys=False, ...)"), opened by Sphinx's annotations or not
# ("classmethod datetime.date.today()", "coroutine asyncio.Lock.acquire()"). Prose that
# mentions a call, a formula ("Al2Si2O5(OH)4") or an aside in brackets is not code.
_SIGNATURE_ANNOTATIONS = (
    "abstractmethod|async|await|awaitable|class|classmethod|coroutine|final|static|staticmethod"
)
_CODE = re.compile(rf"^\s*(?:>>>|(?:(?:{_SIGNATURE_ANNOTATIONS}) )*[\w.]+\()")
# A how-many question is answered by a number (agent.answer_rules.asks_for_quantity): a
# sentence showing one holds this term too, which the question counts among its own,
# weighted like any other by how rare numbers are among the page's sentences ("how many
# species are in the icterid family": "The family contains 108 species", not the first
# sentence that names the family twice). No word is written "#".
NUMBER_TERM = "#"
_DIGIT = re.compile(r"\d")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# A word is compared by its first letters, and a shorter one as the opening of a longer:
# "borders" matches "bordered", "populated" "population", "die" "died".
_STEM_CHARS = 5


def opens_signature(line: str, name: str) -> bool:
    """Whether the line is the signature of the callable name, as a docs page writes it
    ("classmethod datetime.date.today()" of "datetime.date.today")."""
    annotated = rf"^\s*(?:(?:{_SIGNATURE_ANNOTATIONS}) )*{re.escape(name)}\("
    return re.match(annotated, line) is not None


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def _stems(text: str) -> set[str]:
    stems = {w[:_STEM_CHARS] for w in _WORD.findall(_fold(text))}
    return stems | {NUMBER_TERM} if _DIGIT.search(text) else stems


def question_terms(question: str) -> set[str]:
    """The stems of the words that say what the question is about."""
    words = _WORD.findall(_fold(question))
    return {w[:_STEM_CHARS] for w in words if w not in _QUESTION_WORDS and len(w) > 1}


def term_weights(terms: set[str], page_text: str) -> dict[str, float]:
    """Each term's inverse document frequency over the page's sentences: log((N + 1) /
    (n + 0.5)), where n of its N sentences hold the term; a term no sentence holds weighs
    most, and no term weighs nothing."""
    sentences = [_stems(s) for s in _SENTENCE_END.split(page_text) if s.strip()]
    total = len(sentences)
    return {
        term: math.log((total + 1) / (sum(_holds(s, term) for s in sentences) + 0.5))
        for term in terms
    }


def relevance(sentence: str, weights: dict[str, float], heading: str | None = None) -> float:
    """The weights of the question's terms that the sentence holds, or the line of code it
    follows (a signature heads its description: "json.dumps(obj, ...)" then "Serialize obj
    to a JSON formatted str."); nothing for a line of code itself."""
    if _CODE.match(sentence):
        return 0.0
    stems = _stems(sentence)
    if heading is not None and _CODE.match(heading):
        stems |= _stems(heading)
    return sum(weight for term, weight in weights.items() if _holds(stems, term))


def restates(sentence: str, question: str) -> bool:
    """Whether each of the sentence's words that says what it is about is one of the
    question's, or one of them extended ("died" of "die"): it adds nothing to the question."""
    asked = _content_words(question)
    return all(any(word.startswith(a) for a in asked) for word in _content_words(sentence))


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(_fold(text)) if w not in _QUESTION_WORDS and len(w) > 1]


def _new_number(sentence: str, question: str) -> bool:
    """The sentence, not a line of code, shows a number that the question does not."""
    return not _CODE.match(sentence) and bool(
        set(_NUMBER.findall(sentence)) - set(_NUMBER.findall(question))
    )


def _holds(stems: set[str], term: str) -> bool:
    return term in stems or (len(term) < _STEM_CHARS and any(s.startswith(term) for s in stems))


def most_relevant(
    question: str,
    choices: Sequence[str],
    page_text: str,
    limit: int,
    *,
    numbers_bear: bool = False,
) -> list[str]:
    """The limit choices that bear most on the question, in their order on the page; of
    equally relevant ones, the earlier. A question with no word of its own keeps the first;
    a choice that restates the question bears on it not at all. numbers_bear (a how-many
    question): a number is one of the question's terms, and the choices showing one the
    question does not come before all others."""
    if len(choices) <= limit:
        return list(choices)
    terms = question_terms(question) | ({NUMBER_TERM} if numbers_bear else set())
    weights = term_weights(terms, page_text)
    scores = [
        0.0
        if restates(choice, question)
        else relevance(choice, weights, choices[i - 1] if i else None)
        for i, choice in enumerate(choices)
    ]
    numberless = [numbers_bear and not _new_number(choice, question) for choice in choices]
    ranked = sorted(range(len(choices)), key=lambda i: (numberless[i], -scores[i], i))
    return [choices[i] for i in sorted(ranked[:limit])]
