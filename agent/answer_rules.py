"""What a question names that the quotes collected for it must show, read from its words.

A rule of guided decoding rests on this reading (agent.episode, docs/questions.md, "Answer
rules"): a question naming something that no quote shows (a year, a name, a function) is
declined rather than answered with a claim about something else ("Who won the 2038 FIFA
World Cup?" answered from a quote about 2022). Whether a question asks for an explanation
is read by a learned model (agent.question_kind).
"""

import re
import string
import unicodedata
from collections.abc import Sequence

from webgpt.agent.declines import is_declined
from webgpt.agent.grammar import Quoted

CITATION = re.compile(r"\[(\d+)\]")  # [n] in an answer: quote n
# A question's words that name something: a number, a dotted code name, a capitalised word.
# A number stands alone: the digits of "NH4NO3" and "100m" are part of a word.
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?!\w)")
_CODE_NAME = re.compile(r"[A-Za-z_]\w*(?:\.\w+)+")
_CAPITALISED = re.compile(r"[A-Z][\w'’]*")
_POSSESSIVE = re.compile(r"['’]s?$")
_NOT_NAMES = frozenset({"I"})
# How an adjective of a place ends ("Swedish", "Chinese", "Italian", "Korean", "Icelandic",
# "Iraqi"), and how many letters of the place it must keep to be read by them ("Swed").
_PLACE_ADJECTIVE_ENDINGS = ("ish", "ese", "ian", "ean", "an", "ic", "i")
_PLACE_LETTERS = 4
_WORD = re.compile(r"\w+")
# Words that say what kind of question it is, not what it is about.
_KIND_WORDS = frozenset({
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
# How a page may write a small number: as a word, or a Roman numeral
_NUMBER_WORDS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve",
)  # fmt: skip
_ROMAN = (("x", 10), ("ix", 9), ("v", 5), ("iv", 4), ("i", 1))
# The thing a how-many question counts: the first word after "how many" that says what
# ("how many people attended ...": "people"; "how many of the ...": skipped), compared by
# its first letters ("speci" of "species", "count" of "countries").
_HOW_MANY = re.compile(r"\bhow many (?:(?:of|the|more|other|different|exactly|roughly) )*(\w+)")
_COUNTED_LETTERS = 5
_COUNT = re.compile(
    rf"\d|\b(?:{'|'.join(_NUMBER_WORDS[1:])}|dozens?|hundreds?|thousands?|millions?|billions?)\b"
)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans(dict.fromkeys(string.punctuation + "–—’‘“”", " "))


def normalize(text: str) -> str:
    """Lower case, no punctuation, articles or extra spaces (SQuAD's answer normalisation)."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


# Where an answer's sentences end: at a sentence's end, and at a citation, so that a loop
# that never ends a sentence ("X of [1] X of [2] X of [1]") still shows its repeats.
_ANSWER_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\[\d+\]")
_ASIDE = re.compile(r"\([^()]*\)")
MIN_SENTENCE_WORDS = 3
# An answer that says the same this many words twice repeats itself (a quote's opening
# and then the whole quote, a loop); two quotes of a page seldom share such a run.
REPEATED_WORDS = 8


def _sentences(answer: str) -> list[str]:
    """The answer's sentences of MIN_SENTENCE_WORDS words or more, normalised as gold
    answers are, parentheses aside (a page's "Title (site) [1]." is not one)."""
    sentences = [normalize(_ASIDE.sub(" ", s)) for s in _ANSWER_SENTENCE_END.split(answer.strip())]
    return [s for s in sentences if len(s.split()) >= MIN_SENTENCE_WORDS]


def repeats_itself(answer: str) -> bool:
    """The answer says a sentence twice, or REPEATED_WORDS words twice."""
    counted = _sentences(answer)
    words = " ".join(counted).split()
    runs = [tuple(words[i : i + REPEATED_WORDS]) for i in range(len(words) - REPEATED_WORDS + 1)]
    return len(set(counted)) < len(counted) or len(set(runs)) < len(runs)


def distinct_sentence_count(answer: str) -> int:
    """The answer's sentences (_sentences), and 0 when it repeats itself."""
    return 0 if repeats_itself(answer) else len(_sentences(answer))


def restates_question(answer: str, question: str) -> bool:
    """Whether a cited answer says nothing the question does not: each word before its
    first citation is one of the question's (restates), as in
    "datetime.datetime.today() — [1]." or "A refrigerator keeps food cold [1]."."""
    first = CITATION.search(answer)
    if first is None or is_declined(answer):
        return False
    return restates(answer[: first.start()], question)


def restates(text: str, question: str) -> bool:
    """Whether each of the text's words that says what it is about is one of the
    question's, or one of them extended ("died" of "die"): it adds nothing to the question."""
    asked = _content_words(question)
    return all(any(word.startswith(a) for a in asked) for word in _content_words(text))


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(_fold(text)) if w not in _KIND_WORDS and len(w) > 1]


_QUOTE_SENTENCE_START = re.compile(r"(?<=[.!?])\s+")


def uncounted(question: str, quotes: Sequence[Quoted]) -> str | None:
    """ "how many X" for a question asking how many X where no sentence of the quotes
    shows both a number (digits or a word) and a word opening with X's first letters: a
    number of something else ("Lake Huron has 332 traffic lights [1]." from its length, the
    "4.0" of a licence line) does not answer it. None for any other question."""
    asked = _HOW_MANY.search(_fold(question))
    if asked is None:
        return None
    counted = asked[1][:_COUNTED_LETTERS]
    sentences = [s for q in quotes for s in _QUOTE_SENTENCE_START.split(_fold(q.extract))]
    for sentence in sentences:
        if _shows_word(sentence, counted) and _COUNT.search(sentence):
            return None
    return f"how many {asked[1]}"


def named_things(question: str) -> list[str]:
    """What the question names, each once, as the pages would show it: numbers ("2038"),
    dotted code names ("json.dumpz"), and capitalised words after the first ("FIFA",
    "Beethoven" of "Beethoven's", "Bell" and "Ringer" of "Bell-Ringer")."""
    text = question.strip()
    names = _NUMBER.findall(text) + _CODE_NAME.findall(text)
    words = text.split()
    for word in words[1:]:
        for part in word.split("-"):
            match = _CAPITALISED.search(part)
            if match is None or match.start() > 1:  # "(Python" counts, "iPhone" does not
                continue
            name = _POSSESSIVE.sub("", match[0])
            if name and name not in _NOT_NAMES and not name.isdigit():
                names.append(name)
    return list(dict.fromkeys(names))


def unshown_names(question: str, quotes: Sequence[Quoted], pages: Sequence[str] = ()) -> list[str]:
    """What the question names that the quotes do not show. A number has to stand in a quote
    or its page's title: the quotes are the answer's evidence, and a page about a
    tournament names its future years too ("the 2038 edition will be hosted by ...").
    Only where the quotes and their titles state no number in digits may it stand anywhere
    on a quoted page: a quote stating another number is about something else; one stating
    none is about its page's subject, which the question's number qualifies ("the bridge
    built in 1603"). A name or a function may stand anywhere on a quoted page (pages: their
    text, title and address), as a person's byname stands beside the sentence quoted of
    them; a dotted code name by its last part; a capitalised word ending as an adjective
    of a place does by the place (_shows_place). A word counts as shown where it opens a
    word of theirs ("Korea" in "Korean"), accents and the kind of apostrophe aside
    ("Dvorak" in "Dvořák"). And the thing a how-many question counts, where no quote counts
    it (uncounted)."""
    count = uncounted(question, quotes)
    names = named_things(question)
    if not names:  # most lower-case questions: no page needs reading
        return [count] if count else []
    quoted_text = "\n".join(f"{q.title}\n{q.extract}" for q in quotes)
    quoted = _fold(quoted_text)
    numbers = [n for n in names if n[:1].isdigit()]
    words = [n for n in names if not n[:1].isdigit()]
    quotes_state_numbers = _NUMBER.search(quoted) is not None
    read_pages = bool(words) or not quotes_state_numbers
    around = "\n".join([quoted, *(_fold(page) for page in pages)]) if read_pages else quoted
    number_evidence = quoted if quotes_state_numbers else around
    shown = {n for n in numbers if any(_shows_number(number_evidence, f) for f in _number_forms(n))}
    shown |= {w for w in words if _shows_word(around, _fold(_as_shown(w)))}
    unshown_words = [w for w in words if w not in shown]
    if unshown_words:
        cased = _without_marks("\n".join([quoted_text, *pages]))
        shown |= {w for w in unshown_words if _shows_place(cased, w)}
    return [name for name in names if name not in shown] + ([count] if count else [])


def _as_shown(name: str) -> str:
    """A name as a page writes it: a dotted code name by its last part, as documentation
    lists `cursor()` under its class, not "sqlite3.Connection.cursor"."""
    return name.rsplit(".", 1)[1] if _CODE_NAME.fullmatch(name) else name


def _shows_place(text: str, word: str) -> bool:
    """Whether text (accents aside, case kept) shows the place a capitalised word of the
    question may be the adjective of: a capitalised word opening with the question's word
    less its ending, at least _PLACE_LETTERS letters ("Swed" of "Swedish" in "Sweden").
    Lower-case words do not count ("Pers" of "Persian" is not in "person"). It reads the
    ending alone, not whether the word is an adjective: a name ending so ("Titanic") is
    shown by another that opens with its letters ("Titan")."""
    if _CODE_NAME.fullmatch(word):
        return False
    word = _without_marks(word)
    places = [
        word[: -len(ending)]
        for ending in _PLACE_ADJECTIVE_ENDINGS
        if word.endswith(ending) and len(word) - len(ending) >= _PLACE_LETTERS
    ]
    return any(re.search(rf"(?<!\w){re.escape(place)}", text) for place in places)


def _fold(text: str) -> str:
    """Text compared without case, accents or the kind of apostrophe."""
    return _without_marks(text).casefold()


def _without_marks(text: str) -> str:
    """Text without accents, its apostrophes all "'"."""
    decomposed = unicodedata.normalize("NFKD", text.replace("’", "'"))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _number_forms(number: str) -> list[str]:
    """How a page may write a number: as written, and a small one as a word or a Roman
    numeral too ("World War 2" in "World War II", "3 branches" in "three branches")."""
    forms = [number]
    if number.isdigit() and int(number) < len(_NUMBER_WORDS):
        forms.append(_NUMBER_WORDS[int(number)])
    if number.isdigit() and 2 <= int(number) < 40:
        value, roman = int(number), ""
        for letters, worth in _ROMAN:
            while value >= worth:
                roman, value = roman + letters, value - worth
        forms.append(roman)
    return forms


def _shows_number(text: str, form: str) -> bool:
    """The number stands alone in text, or opens a longer version ("3" in "3.12"), but is
    not part of another number ("2022" is not in "2,022", nor "202" in "2022")."""
    if not form[:1].isdigit():
        return re.search(rf"(?<!\w){form}(?!\w)", text) is not None
    return re.search(rf"(?<![\d.,]){re.escape(form)}(?!\d|,\d)", text) is not None


def _shows_word(text: str, word: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(word)}", text) is not None
