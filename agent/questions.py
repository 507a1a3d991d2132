"""Questions with gold answers, generated from the pages of the offline web.

Each question comes from one page and names the sentence that answers it (`evidence`), the
gold answers a correct answer must contain, and a short reference answer that states the
fact (what the scripted demonstrator writes). Many styles, not one template: who / what /
when / where / how many / which from Wikipedia summaries, and what / how / why for functions
and methods of the Python docs. Splits are by page (a hash of the URL), so no dev or test
page is ever trained on.

Questions are also what `webgpt eval` reads: any JSONL whose rows have `question` and
`gold_answers` (a demonstrations file is one).
"""

import hashlib
import json
import random
import re
import string
from collections.abc import Iterable, Iterator
from pathlib import Path

import lxml.html
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.demonstrations import Split, jsonl_lines
from agent.errors import DataError
from browser.offline import OfflineWeb

SPLIT_PERCENT = {"train": 80, "dev": 10, "test": 10}
# The answer grammar (agent.grammar.answer_regex) wants the first citation within 60
# characters; reference answers put it right after the fact.
MAX_LEAD_CHARS = 56
PYTHON_DOCS_PAGE_WEIGHT = 4


class Question(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    question: str = Field(min_length=1)
    gold_answers: list[str] = Field(min_length=1)
    url: str | None = None  # the page that holds the answer
    title: str | None = None
    evidence: str | None = None  # the sentence of that page that answers it
    answer: str | None = None  # a reference answer citing [1]
    style: str | None = None
    split: Split | None = None


def split_of(url: str) -> Split:
    """train / dev / test by a stable hash of the page's URL (80 / 10 / 10)."""
    bucket = int(hashlib.sha256(url.encode()).hexdigest(), 16) % 100
    if bucket < SPLIT_PERCENT["train"]:
        return "train"
    return "dev" if bucket < SPLIT_PERCENT["train"] + SPLIT_PERCENT["dev"] else "test"


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans(dict.fromkeys(string.punctuation + "–—’‘“”", " "))


def normalize(text: str) -> str:
    """Lower case, no punctuation, articles or extra spaces (SQuAD's answer normalisation)."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def contains_gold(answer: str, gold_answers: Iterable[str]) -> bool:
    text = f" {normalize(answer)} "
    return any(f" {normalize(g)} " in text for g in gold_answers if normalize(g))


# -- Wikipedia summaries ---------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_LIFE = re.compile(
    r"^(?P<what>[^()]{3,60}?) \((?:c\. )?(?P<born>\d{3,4}) ?[–-] ?(?:c\. )?(?P<died>\d{3,4})\)$"
)
# "X is a <kind of thing>": the phrase ends before a clause, a participle ("an engineering
# discipline concerned with …" → "engineering discipline") or a comma; "a unit of energy"
# keeps its "of" complement, since "unit" alone says nothing.
_IS_A = re.compile(
    r"^(?P<subject>(?:The |A |An )?[^.,;()]{1,60}?) (?P<verb>is|are|was|were) "
    r"(?P<article>a|an|the) (?P<what>[a-z][a-z-]+(?: (?![a-z]+(?:ed|ing)\b)[a-z-]+){0,4}?"
    r"(?: of (?:the )?[A-Za-z-]+(?: [a-z-]+)?)?)"
    r"(?= that| which| who| whose| in| for| from| with| and| by| used| [a-z]+(?:ed|ing)\b|,|\.)"
)
_VAGUE_KINDS = {"name", "term", "type", "kind", "form", "state", "part", "member", "set"}
_MADE_BY = re.compile(
    r"\b(?P<verb>painted|written|invented|discovered|founded|composed|designed|directed|"
    r"developed|created|established) by (?P<who>(?:[A-Z][\w.'-]+)(?: (?:de |da |van |von )?"
    r"[A-Z][\w.'-]+){0,3})"
)
_ACTIVE = {"written": "wrote"}
_IN_YEAR = re.compile(
    r"\b(?P<verb>founded|established|built|completed|discovered|invented|published|released|"
    r"formed|signed|launched|opened)\b[^.]{0,40}?\bin (?P<year>\d{4})\b"
)
_POPULATION = re.compile(
    r"population of (?:about |around |over |approximately |more than |nearly |roughly )?"
    r"(?P<number>\d[\d,.]*(?: (?:million|billion))?)"
)
_PLACE = re.compile(
    r"\b(?P<kind>city|town|country|river|mountain|island|lake|state|region|capital|village|"
    r"province|county|peninsula|desert)\b(?: [a-z]+){0,3}? (?:in|of|on) (?:the )?"
    r"(?P<place>[A-Z][\w'-]+(?: [A-Z][\w'-]+){0,3})"
)


def _vague(kind: str, rest: str) -> bool:
    """A kind of thing no answer can be checked against: "a name", or one word before a
    comma or "and", which is an adjective ("a dense, towering cloud")."""
    return kind in _VAGUE_KINDS or (" " not in kind and rest.startswith((",", " and")))


def _golds(gold: str) -> list[str]:
    """The gold answer, and its first half when it joins two ("German composer and
    conductor": "German composer" is right too)."""
    first = gold.split(" and ")[0]
    return [gold, first] if first != gold and " " in first else [gold]


def _lead(text: str, gold: str) -> str | None:
    """`text [1].` when short enough for the answer grammar, else None."""
    text = " ".join(text.split()).rstrip(" .,;:")
    return f"{text} [1]." if len(text) <= MAX_LEAD_CHARS and gold in text else None


def _subject(title: str, sentence: str) -> str:
    """The title as the sentence names it: 'the Mona Lisa' when it says 'The Mona Lisa'."""
    return f"the {title}" if sentence.startswith(f"The {title}") else title


def wikipedia_questions(
    url: str, title: str, description: str, sentences: list[str], topic: str, rng: random.Random
) -> Iterator[Question]:
    """Questions one Wikipedia summary answers (each style that its text supports)."""

    def ask(style: str, question: str, gold: str, evidence: str, answer: str | None) -> Question:
        return Question(
            question=question,
            gold_answers=_golds(gold),
            url=url,
            title=title,
            evidence=evidence,
            answer=answer or f"{gold} [1].",
            style=style,
        )

    life = _LIFE.match(description) if topic == "People" else None
    if life:
        what, born, died = life["what"], life["born"], life["died"]
        yield ask(
            "when",
            rng.choice(
                [
                    f"When was {title} born?",
                    f"In which year was {title} born?",
                    f"What year was {title} born in?",
                ]
            ),
            born,
            description,
            _lead(f"{title} was born in {born}", born),
        )
        yield ask(
            "when",
            rng.choice([f"When did {title} die?", f"In what year did {title} die?"]),
            died,
            description,
            _lead(f"{title} died in {died}", died),
        )
        article = "an" if what[:1].lower() in "aeiou" else "a"
        yield ask(
            "who",
            f"Who was {title}?",
            what,
            description,
            _lead(f"{title} was {article} {what}", what),
        )
    for sentence in sentences[:3]:
        made = _MADE_BY.search(sentence)
        if made and made["who"] != title and len(title) < 40:
            verb = _ACTIVE.get(made["verb"], made["verb"])
            thing = _subject(title, sentences[0])
            yield ask(
                "who",
                f"Who {verb} {thing}?",
                made["who"],
                sentence,
                _lead(
                    f"{thing[:1].upper() + thing[1:]} was {made['verb']} by {made['who']}",
                    made["who"],
                ),
            )
            break
    for sentence in sentences[:4]:
        dated = _IN_YEAR.search(sentence)
        if dated and title in sentence:
            thing = _subject(title, sentences[0])
            year = dated["year"]
            yield ask(
                "when",
                rng.choice(
                    [
                        f"When was {thing} {dated['verb']}?",
                        f"In which year was {thing} {dated['verb']}?",
                    ]
                ),
                year,
                sentence,
                _lead(f"{thing[:1].upper() + thing[1:]} was {dated['verb']} in {year}", year),
            )
            break
    for sentence in sentences[:4]:
        population = _POPULATION.search(sentence)
        if population:
            number = population["number"].rstrip(".,")
            yield ask(
                "how many",
                rng.choice(
                    [f"How many people live in {title}?", f"What is the population of {title}?"]
                ),
                number,
                sentence,
                _lead(f"{title} has a population of {number}", number),
            )
            break
    if sentences:
        first = sentences[0]
        place = _PLACE.search(first)
        # "in the Indian state of Gujarat": the capitalised words are an adjective, not a place
        demonym = place is not None and re.match(r" [a-z]", first[place.end() :]) is not None
        if place and title in first and place["place"] != title and not demonym:
            where = place["place"]
            style = rng.choice(["where", "which"])
            yield ask(
                style,
                f"Where is {title}?"
                if style == "where"
                else f"In which country or region is the {place['kind']} {title}?",
                where,
                first,
                _lead(f"{title} is a {place['kind']} in {where}", where),
            )
        is_a = _IS_A.match(first)
        if is_a and not life and not _vague(is_a["what"], first[is_a.end() :]):
            subject = is_a["subject"]
            what = is_a["what"].strip()
            verb = is_a["verb"]
            lead = f"{subject} {verb} {is_a['article']} {what}"
            yield ask(
                "what",
                rng.choice(
                    [
                        f"What {verb} {subject[:1].lower() + subject[1:]}?",
                        f"What kind of thing {verb} {title}?",
                    ]
                ),
                what,
                first,
                _lead(lead, what),
            )


def _wikipedia_page(body: bytes) -> tuple[str, list[str], str]:
    """(description, sentences of the summary, topic) of a page built by browser.corpus."""
    doc = lxml.html.document_fromstring(body)
    description, topic = "", ""
    sentences: list[str] = []
    for p in doc.xpath("//main/p"):
        text = " ".join(p.text_content().split())
        if p.find("i") is not None and not description and len(p) == 1:
            description = text
        elif text.startswith("Topic: "):
            topic = text.removeprefix("Topic: ")
        elif p.find("small") is None:
            sentences += _SENTENCE.split(text)
    return description, [s for s in sentences if s], topic


# -- Python docs -----------------------------------------------------------------------

_FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(?:\s|$)")


def python_doc_questions(url: str, body: bytes, rng: random.Random) -> Iterator[Question]:
    """What / how / why questions about the functions and methods a docs page documents."""
    doc = lxml.html.document_fromstring(body)
    for entry in doc.xpath(
        "//dl[contains(@class, 'py') and (contains(@class, 'function') "
        "or contains(@class, 'method'))]"
    ):
        dt = entry.find("dt")
        dd = entry.find("dd")
        if dt is None or dd is None or not dt.get("id") or dd.find("p") is None:
            continue
        qualname = dt.get("id")
        if "." not in qualname or len(qualname) > 40:
            continue
        text = " ".join(dd.find("p").text_content().split())
        match = _FIRST_SENTENCE.match(text)
        if match is None or len(match[1]) < 20:
            continue
        sentence = match[1]
        owner, name = qualname.rsplit(".", 1)
        kind = "method" if "method" in entry.get("class", "") else "function"
        prefix = f"{qualname}() "
        words = sentence.rstrip(".").split()
        clause = ""
        for word in words:
            if len(prefix) + len(clause) + len(word) + 1 > MAX_LEAD_CHARS:
                break
            clause = f"{clause} {word}".strip()
        if len(clause.split()) < 3:
            continue
        lowered = clause[:1].lower() + clause[1:]
        if kind == "function" and "." not in owner:
            asked = rng.choice(
                [
                    f"What does the {owner} module's {name} function do?",
                    f"What does {qualname}() do?",
                    f"How is {qualname}() used?",
                    f"Why would I call {qualname}()?",
                ]
            )
        else:
            asked = rng.choice(
                [
                    f"What does the {qualname} {kind} do?",
                    f"What does {qualname}() do?",
                    f"How does {qualname}() work?",
                ]
            )
        yield Question(
            question=asked,
            gold_answers=[clause],
            url=url,
            title=qualname,
            evidence=sentence,
            answer=f"{qualname}() — {lowered} [1].",
            style="what" if asked.startswith("What") else asked.split()[0].lower(),
        )


def generate_questions(
    store: OfflineWeb, *, seed: int = 0, per_page: int = 2
) -> Iterator[Question]:
    """Questions from every page of the offline web, each tagged with its page's split."""
    rng = random.Random(seed)
    for page in store.pages():
        if page.content_type != "text/html":
            continue
        body = store.body(page.url)
        if body is None:
            continue
        if page.source == "wikipedia":
            description, sentences, topic = _wikipedia_page(body)
            found = list(
                wikipedia_questions(page.url, page.title, description, sentences, topic, rng)
            )
        elif page.source == "python-docs":
            found = list(python_doc_questions(page.url, body, rng))
        else:
            continue
        rng.shuffle(found)
        # A docs page documents many functions, a summary one subject: without more per
        # docs page, Python questions would be a few percent of the data.
        taken = per_page * PYTHON_DOCS_PAGE_WEIGHT if page.source == "python-docs" else per_page
        for question in found[:taken]:
            yield question.model_copy(update={"split": split_of(page.url)})


def load_questions(path: Path, split: str | None = None) -> list[Question]:
    """Rows with `question` and `gold_answers` (question files and demonstration files)."""
    questions: list[Question] = []
    for number, line in jsonl_lines(path):
        try:
            row = json.loads(line)
            question = Question.model_validate(row)
        except (ValueError, ValidationError) as error:
            raise DataError(f"{path}:{number}: not a question with gold answers: {error}") from None
        if split is None or question.split == split:
            questions.append(question)
    if not questions:
        raise DataError(f"{path} has no questions" + (f" in split {split!r}" if split else ""))
    return questions
