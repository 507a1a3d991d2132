"""Questions with gold answers, generated from the pages of the offline web.

Three kinds of question, the three a person asks:
- factoid: one page, the sentence that answers it (`evidence`), the gold answers a correct
  answer must contain, and a short reference answer that states the fact and cites it.
  Many relations, each in several phrasings (who / which / what / name a / in what year /
  how many / roughly how many / to which ...), drawn from any sentence of a Wikipedia
  summary, some asking for the page's own subject without naming it; what / how / why
  about functions and methods of the Python docs; and what an option, setting, function or
  term of a software manual (PostgreSQL, Git, SQLite, Django) does, or its default.
- longform: how / why / what-is questions answered in 2-5 sentences, each citing the quote
  it comes from (`supporting`: the sentences to quote, from one or two pages).
- unanswerable: future events, made-up entities and details no page holds; the right
  answer is a decline (agent.declines).
Splits are by page (a hash of the URL; of the question for made-up ones), so no dev or
test page is ever trained on.

The question format, the page splits and gold matching are evals.questions; `webgpt eval`
reads what this writes.
"""

import random
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import lxml.html

from webgpt.agent.declines import decline_answer
from webgpt.browser.corpus import MANUALS, PYTHON_DOCS
from webgpt.browser.offline import OfflineWeb
from webgpt.evals.questions import Question, Split, normalize, split_of

# A reference answer cites right after the fact, within this many characters: an answer
# a reader takes in at a glance.
MAX_LEAD_CHARS = 110
DOCS_CLAUSE_CHARS = 56  # a docs entry's gold phrase: the start of its first sentence
# Questions per page of docs or a manual, times per_page: such a page documents many names.
DOCS_PAGE_WEIGHT = 4


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


def wikipedia_page(body: bytes) -> tuple[str, list[str], str]:
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


# -- Relations from any sentence of a summary -------------------------------------------
#
# Each relation is a pattern over one sentence that names the page's subject (its title, or
# "It"/"He"/"She"/"They" opening a later sentence), the gold it captures, and the ways a
# person asks for it. Phrasings are drawn at random, so one relation reads many ways.

_NAME = r"[A-Z][\w.'’-]+(?: (?:de |da |van |von |of |the |al-|bin )?[A-Z][\w.'’-]+){0,4}"
_NUMBER = r"\d[\d,.]*(?: (?:million|billion|thousand))?"
_ABOUT = r"(?:about |around |over |approximately |more than |nearly |roughly |some |almost )?"
_UNIT = (
    r"(?:square kilometres|square kilometers|square miles|km2|km²|sq mi|kilometres|kilometers|"
    r"km|metres|meters|m|miles|mi|feet|ft)"
)


@dataclass(frozen=True)
class Relation:
    style: str
    pattern: re.Pattern[str]
    asks: tuple[str, ...]  # phrasings; {s} is the subject, other fields come from the match
    gold: str  # the group that is the answer
    lead: str  # the reference answer's statement
    # Also from a later sentence that opens with "It"/"He"/...: only where the pronoun is
    # reliably the subject of the relation (a capital, a year of founding), not where the
    # sentence is about something else it mentions ("the film she starred in, directed by").
    later: bool = True
    people: bool = True  # asked about a person too ("where is <a person>" is not)
    max_gap: int = 200  # characters from the subject's name to the relation


RELATIONS = (
    Relation(
        "capital",
        re.compile(
            rf"\b(?:[Ii]ts|[Tt]he) capital(?: and (?:largest|most populous) city)?"
            rf"(?: city)? is (?P<x>{_NAME})"
        ),
        (
            "What is the capital of {s}?",
            "what's the capital city of {s}",
            "Which city is the capital of {s}?",
            "Name the capital of {s}.",
        ),
        "x",
        "The capital of {s} is {x}",
    ),
    Relation(
        "made by",
        re.compile(
            rf"\b(?P<verb>directed|produced|written|composed|designed|developed|founded|"
            rf"invented|discovered|painted|built|created|established|led|written and "
            rf"directed) by (?P<x>{_NAME})"
        ),
        (
            "Who {verb_active} {s}?",
            "{s} was {verb} by whom?",
            "who {verb_active} {s}",
            "Which person {verb_active} {s}?",
        ),
        "x",
        "{S} was {verb} by {x}",
        later=False,
        max_gap=70,
    ),
    Relation(
        "when",
        re.compile(
            r"\b(?P<verb>founded|established|built|completed|discovered|invented|"
            r"published|released|formed|signed|launched|opened|introduced|premiered|"
            r"adopted|first described)\b[^.]{0,40}?\bin (?P<x>\d{3,4})\b"
        ),
        (
            "In what year was {s} {verb}?",
            "When was {s} {verb}?",
            "what year was {s} {verb}",
            "{s} was {verb} in which year?",
        ),
        "x",
        "{S} was {verb} in {x}",
    ),
    Relation(
        "taxonomy",
        re.compile(
            r"\b(?:in|of) the (?P<rank>family|genus|order|class|subfamily) "
            r"(?P<x>[A-Z][a-z]+(?:idae|inae|aceae|ales|formes|[a-z]))"
        ),
        (
            "To which {rank} does {s} belong?",
            "What {rank} is {s} in?",
            "which {rank} is {s} part of",
            "Name the {rank} of {s}.",
        ),
        "x",
        "{S} belongs to the {rank} {x}",
    ),
    Relation(
        "known as",
        re.compile(
            rf"\b(?:also |commonly |sometimes |often |popularly )?(?:known|called|referred "
            rf"to) as (?:the )?(?P<x>{_NAME}|[a-z][a-z-]+(?: [a-z-]+){{0,2}})(?=[,.;)]| or)"
        ),
        (
            "What is {s} also known as?",
            "What's another name for {s}?",
            "{s} is also called what?",
            "what else is {s} called",
        ),
        "x",
        "{S} is also known as {x}",
        later=False,
        max_gap=25,
    ),
    Relation(
        "located",
        re.compile(
            rf"\b(?:located|situated|lies|found|based) (?:in|on|at) (?:the )?"
            rf"(?P<x>{_NAME})"
        ),
        (
            "Where is {s} located?",
            "Where is {s}?",
            "where can you find {s}",
            "In which place is {s} located?",
        ),
        "x",
        "{S} is located in {x}",
        people=False,
    ),
    Relation(
        "speakers",
        re.compile(
            rf"\b(?:spoken by|speakers? of|native speakers) {_ABOUT}"
            rf"(?P<x>{_NUMBER}) (?:people|native speakers|speakers)"
        ),
        (
            "How many people speak {s}?",
            "roughly how many speakers does {s} have",
            "How many speakers of {s} are there?",
        ),
        "x",
        "{S} has about {x} speakers",
    ),
    Relation(
        "made of",
        re.compile(
            r"\b(?:made|composed|built|formed) (?:mainly |mostly |primarily |largely )?"
            r"(?:of|from) (?P<x>[a-z][a-z-]+(?: [a-z-]+){0,2}?)(?=[,.;]| and| or| with)"
        ),
        ("What is {s} made of?", "what is {s} made from", "What material is {s} made of?"),
        "x",
        "{S} is made of {x}",
        later=False,
        people=False,
    ),
    Relation(
        "part of",
        re.compile(
            rf"\b(?:is|are|was|were|forms?|formed) (?:a |an )?part of (?:the )?"
            rf"(?P<x>{_NAME})"
        ),
        ("What is {s} part of?", "{s} is part of what?", "Which larger whole is {s} part of?"),
        "x",
        "{S} is part of {x}",
    ),
    Relation(
        "dimension",
        re.compile(
            rf"\b(?:an? )?(?P<dim>width|length|height|area|depth|elevation|diameter|"
            rf"surface area) of {_ABOUT}(?P<x>{_NUMBER} ?{_UNIT})(?![\w²])"
        ),
        (
            "What is the {dim} of {s}?",
            "How {adjective} is {s}?",
            "how {adjective} is {s}",
            "roughly what {dim} does {s} have",
        ),
        "x",
        "The {dim} of {s} is {x}",
    ),
    Relation(
        "share",
        re.compile(
            r"\b(?:about |around |over |approximately |nearly |roughly |some |almost )?"
            r"(?P<x>\d+(?:\.\d+)?(?: per ?cent|%)) of (?:the |all |its )?"
            r"(?P<what>[a-z][a-z' -]{2,40}?)(?=[,.;]| is| are| was| were| in| of)"
        ),
        (
            "What percentage of {what} does {s} account for?",
            "roughly what percent of {what} does {s} account for",
        ),
        "x",
        "For {s}, the share of {what} is {x}",
    ),
    Relation(
        "born in",
        re.compile(rf"\b(?:was )?born in (?P<x>{_NAME})"),
        ("Where was {s} born?", "where was {s} born", "In which place was {s} born?"),
        "x",
        "{S} was born in {x}",
        later=False,
    ),
    Relation(
        "language",
        re.compile(r"\b(?:official|national) languages? (?:is|are|was) (?P<x>[A-Z][a-z]+)"),
        (
            "What language do people in {s} speak?",
            "What is the official language of {s}?",
            "which language is spoken in {s}",
        ),
        "x",
        "The official language of {s} is {x}",
    ),
)
_ACTIVE_VERBS = {"written": "wrote", "written and directed": "wrote and directed"}
_ADJECTIVE = {
    "width": "wide",
    "length": "long",
    "height": "tall",
    "area": "big",
    "depth": "deep",
    "elevation": "high",
    "diameter": "wide",
    "surface area": "big",
}
_PRONOUN_START = re.compile(r"^(?:It|He|She|They|Its|His|Her|Their)\b")
# A relative clause between the subject and the relation: it is about something else
# ("Accra ... the Gulf of Guinea, which is part of the Atlantic").
_RELATIVE = re.compile(r"\b(?:which|who|whose|that|where)\b")
_NO_GOLD = {"one", "two", "three", "which", "whom", "them", "it", "these", "those"}


def as_named(title: str, sentence: str) -> str:
    """The title as a person types it: "bread" for Bread when the summary writes it in
    lower case, "the Mona Lisa" when it says "The Mona Lisa", else the title."""
    core = title.split(" (")[0]
    if " " not in core and re.search(
        rf"(?:^|\s)(?:[Aa]n? |[Tt]he )?{re.escape(core.lower())}\b", sentence
    ):
        return core.lower()
    return _subject(core, sentence)


def _about_subject(sentence: str, subject: str, index: int, start: int, relation: Relation) -> bool:
    """The relation found at `start` is stated of the page's subject."""
    at = sentence.find(subject)
    if at < 0 and sentence.lower().startswith(subject.lower()):
        at = 0
    if at < 0:
        if not (relation.later and index > 0 and _PRONOUN_START.match(sentence)):
            return False
        at = 0
    gap = sentence[at + len(subject) : start]
    return at <= start and len(gap) <= relation.max_gap and not _RELATIVE.search(gap)


def relation_questions(
    url: str, title: str, sentences: list[str], topic: str, rng: random.Random
) -> Iterator[Question]:
    """Factoid questions from every sentence of a summary that states a known relation."""
    subject = title.split(" (")[0]
    thing = as_named(title, sentences[0]) if sentences else subject
    seen: set[str] = set()
    for index, sentence in enumerate(sentences):
        for relation in RELATIONS:
            if relation.style in seen or (topic == "People" and not relation.people):
                continue
            match = relation.pattern.search(sentence)
            if match is None:
                continue
            if not _about_subject(sentence, subject, index, match.start(), relation):
                continue
            gold = match[relation.gold].strip(" .,;")
            if not gold or normalize(gold) in normalize(subject) or len(gold) > 50:
                continue
            if gold.lower() in _NO_GOLD or match.groupdict().get("what", "x") in _NO_GOLD:
                continue
            fields = {key: value for key, value in match.groupdict().items() if value}
            verb = fields.get("verb", "")
            fields["verb_active"] = _ACTIVE_VERBS.get(verb, verb)
            fields["adjective"] = _ADJECTIVE.get(fields.get("dim", ""), "big")
            fields["s"] = thing
            fields["S"] = thing[:1].upper() + thing[1:]
            asked = rng.choice(relation.asks).format(**fields)
            seen.add(relation.style)
            yield Question(
                question=asked[:1].upper() + asked[1:] if rng.random() < 0.8 else asked,
                gold_answers=_golds(gold),
                url=url,
                title=title,
                evidence=sentence,
                answer=_lead(relation.lead.format(**fields), gold) or f"{gold} [1].",
                style=f"{relation.style}" + ("" if index == 0 else " (later sentence)"),
            )


_SUPERLATIVE = re.compile(
    r"^(?:The )?(?P<subject>[^,;()]{2,50}?) (?:is|was) (?:the )?(?P<rank>(?:second |third )?"
    r"(?:largest|longest|highest|tallest|oldest|smallest|deepest|most populous|biggest|"
    r"busiest|most widely spoken|most visited)) (?P<what>[a-z][a-z -]{2,40}?) "
    r"(?P<prep>in|of|on) (?:the )?(?P<where>[A-Z][\w' -]{1,40}?)(?=[,.;]| by| and)"
)


def unnamed_subject_questions(
    url: str, title: str, description: str, sentences: list[str], rng: random.Random
) -> Iterator[Question]:
    """Questions whose answer is the page's subject itself, asked without naming it:
    "What is the longest river in Africa?" (the title's words are not in the question)."""
    subject = title.split(" (")[0]
    for sentence in sentences[:3]:
        match = _SUPERLATIVE.match(sentence)
        if match is None or subject not in match["subject"]:
            continue
        asked = rng.choice(
            [
                "What is the {rank} {what} {prep} {where}?",
                "which {what} is the {rank} {prep} {where}",
                "Name the {rank} {what} {prep} {where}.",
            ]
        ).format(**match.groupdict())
        yield Question(
            question=asked[:1].upper() + asked[1:],
            gold_answers=[subject],
            url=url,
            title=title,
            evidence=sentence,
            answer=_lead(
                f"{subject} is the {match['rank']} {match['what']} {match['prep']} "
                f"{match['where']}",
                subject,
            )
            or f"{subject} [1].",
            style="unnamed subject",
        )
        return
    # "Painting by Leonardo da Vinci": the description is what a person half remembers
    anchored = re.search(r" [A-Z]", description) is not None  # names a place, a maker, ...
    if anchored and not _LIFE.match(description) and 12 <= len(description) <= 70:
        lowered = description[:1].lower() + description[1:]
        words = set(normalize(subject).split())
        if not words & set(normalize(description).split()):
            asked = rng.choice(
                [
                    f"What is the name of the {lowered}?",
                    f"what's the {lowered} called",
                    f"Name the {lowered}.",
                ]
            )
            yield Question(
                question=asked[:1].upper() + asked[1:],
                gold_answers=[subject],
                url=url,
                title=title,
                evidence=sentences[0] if sentences else description,
                answer=f"{subject} [1].",
                style="unnamed subject",
            )


# -- Long-form: how / why / what-is, answered from two or more quotes ------------------

MIN_SUPPORT_CHARS = 40
MAX_SUPPORT_CHARS = 220
_LONGFORM_ASKS = {
    "People": (
        "Who was {s}?",
        "Tell me about {s}.",
        "What is {s} known for?",
        "who was {s} and why are they remembered",
        "why is {s} famous",
        "what did {s} do",
    ),
    "Technology": (
        "How does {s} work?",
        "What is {s}?",
        "Explain {s}.",
        "what is {s} and what is it used for",
        "what is {s} used for",
    ),
    "Geography": (
        "Tell me about {s}.",
        "What is {s} known for?",
        "what is {s} like",
        "What should I know about {s}?",
    ),
    "History": (
        "What was {s}?",
        "what was {s} and why was it important",
        "Why is {s} important?",
        "tell me about {s}",
    ),
    "": (
        "What is {s}?",
        "Tell me about {s}.",
        "Explain what {s} is.",
        "What should I know about {s}?",
        "why is {s} important",
        "explain {s} in simple terms",
    ),
}


# What people ask of a kind of thing, told by what the summary's opening sentence says the
# subject is ("A refrigerator is a commercial and home appliance"): "how does a refrigerator
# work", "what causes malaria". Tried before the topic's own asks, except for people.
def _is_a(kinds: str) -> re.Pattern[str]:
    # up to four words before the kind, none of them opening a clause or a phrase of its own
    modifier = r"(?!(?:that|which|who|of|for|against|with|in|on|by) )[\w-]+ "
    return re.compile(
        rf"\b(?:is|was|are|were) (?:an?|the|any) (?:{modifier}){{0,4}}(?:{kinds})s?\b"
    )


_LONGFORM_ASKS_OF = (
    (
        _is_a("disease|infection|disorder|syndrome|cancer|illness"),
        (
            "What are the symptoms of {s}?",
            "what causes {s}",
            "What is {s} and how do you get it?",
            "how serious is {s}",
        ),
    ),
    (
        _is_a("device|machine|instrument|engine|apparatus|appliance|tool"),
        ("How does {s} work?", "how does {s} work", "What is {s} used for?", "how do you use {s}"),
    ),
    (
        _is_a("process|phenomenon|effect|reaction|cycle|oscillation"),
        ("How does {s} work?", "what causes {s}", "Why does {s} happen?", "how does {s} happen"),
    ),
    (
        _is_a("war|battle|revolution|rebellion|uprising|siege|crisis"),
        ("What caused {s}?", "what happened in {s}", "Why was {s} important?", "how did {s} end"),
    ),
    (
        _is_a("food|dish|drink|beverage|liquor|bread|cheese|sauce|spirit|fruit"),
        ("How is {s} made?", "what is {s} made from", "What does {s} taste like?"),
    ),
    (
        _is_a("novel|film|album|painting|opera|poem|symphony|play|sculpture"),
        ("What is {s} about?", "why is {s} famous", "What makes {s} important?"),
    ),
)
_RELATED_ASKS = (
    "How is {s} related to {t}?",
    "what do {s} and {t} have to do with each other",
    "Tell me about {s} and {t}.",
)


def _supportable(sentence: str) -> bool:
    return (
        MIN_SUPPORT_CHARS <= len(sentence) <= MAX_SUPPORT_CHARS
        and not re.search(r"[\[\]■]", sentence)
        and not sentence.startswith("Text from Wikipedia")
    )


def _with_article(title: str, sentence: str) -> str:
    """The title as named in a question, with the article the summary gives a common noun:
    "a refrigerator" for "A refrigerator is a commercial and home appliance ..."."""
    named = as_named(title, sentence)
    article = re.match(rf"(An?) {re.escape(named)}\b", sentence) if named.islower() else None
    return f"{article[1].lower()} {named}" if article else named


def longform_questions(
    url: str,
    title: str,
    sentences: list[str],
    topic: str,
    rng: random.Random,
    linked: tuple[str, str, list[str], str] | None = None,
) -> Iterator[Question]:
    """A how / why / what-is question answered by two or three sentences of the summary,
    or, given a linked page (url, title, sentences), one comparing the two."""
    subject = title.split(" (")[0]
    usable = [s for s in sentences if _supportable(s)]
    if len(usable) >= 2 and usable[0] == sentences[0]:
        more = rng.sample(usable[1:], k=min(len(usable) - 1, rng.choice([1, 1, 2])))
        supporting = [usable[0], *sorted(more, key=usable.index)]
        of_kind = (asks for pattern, asks in _LONGFORM_ASKS_OF if pattern.search(sentences[0]))
        asks = _LONGFORM_ASKS.get(topic, _LONGFORM_ASKS[""])
        asks = asks if topic == "People" else next(of_kind, asks)
        asked = rng.choice(asks).format(s=_with_article(title, sentences[0]))
        yield Question(
            question=asked[:1].upper() + asked[1:] if asked.endswith((".", "?")) else asked,
            kind="longform",
            url=url,
            title=title,
            evidence=supporting[0],
            supporting=supporting,
            supporting_urls=[None] * len(supporting),
            style="longform",
        )
    if linked is not None and usable and usable[0] == sentences[0]:
        other_url, other_title, other_sentences, other_topic = linked
        other = [s for s in other_sentences if _supportable(s)]
        other_subject = other_title.split(" (")[0]
        related = (
            other_topic == topic and other_subject not in subject and subject not in other_subject
        )
        if related and other and other[0] == other_sentences[0]:
            asked = rng.choice(_RELATED_ASKS).format(
                s=as_named(title, sentences[0]), t=as_named(other_title, other[0])
            )
            yield Question(
                question=asked[:1].upper() + asked[1:],
                kind="longform",
                url=url,
                title=title,
                evidence=usable[0],
                supporting=[usable[0], other[0]],
                supporting_urls=[None, other_url],
                style="longform (two pages)",
            )


# -- Unanswerable: future events, made-up entities, details no page holds ---------------

_EVENT = re.compile(
    r"(?:Olympic Games|World Cup|Championship|Tour de France|Prize|Award|"
    r"Super Bowl|Eurovision|Grand Prix|Open\b|Cup\b)"
)
_SYLLABLES = (
    "ka",
    "lo",
    "ver",
    "an",
    "dri",
    "mo",
    "sel",
    "tas",
    "quin",
    "bor",
    "el",
    "ra",
    "vin",
    "cor",
    "thu",
    "mal",
    "ze",
    "pen",
    "dor",
    "ish",
    "gal",
    "rov",
    "ny",
    "bel",
)
_MADE_UP = {
    "person": (
        "When was {name} born?",
        "What is {name} known for?",
        "where did {name} die",
        "Who was {name}?",
        "What nationality was the scientist {name}?",
        "what did the painter {name} paint",
        "Where did {name} teach economics?",
    ),
    "place": (
        "What is the population of {place}?",
        "Where is {place}?",
        "which river flows through {place}",
        "What is the capital of {place}?",
        "what language is spoken in the Kingdom of {place}",
        "How high is Mount {place}?",
        "who founded the city of {place}",
        "How long is the {place} River?",
    ),
    "work": (
        "Who wrote the novel {work}?",
        "Who directed the film {work}?",
        "when was the album {work} released",
        "Which band recorded the song {work}?",
        "who painted {work}",
    ),
    "thing": (
        "How many species are in the genus {thing}?",
        "What is the family of the plant {thing}?",
        "When did the {thing} Empire fall?",
        "What does the company {thing} make?",
        "where is the {thing} language spoken",
        "Who invented the {thing} engine?",
    ),
}
_MISSING_DETAIL = {
    "People": (
        "What was {s}'s favourite food?",
        "How tall was {s}?",
        "What was the name of {s}'s first pet?",
        "what was {s}'s shoe size",
        "How many people attended {s}'s funeral?",
        "What was {s}'s phone number?",
        "what did {s} eat for breakfast on their wedding day",
    ),
    "Geography": (
        "Who is the current mayor of {s}?",
        "What is the postal code of {s}?",
        "How many traffic lights are there in {s}?",
        "How many taxis are there in {s}?",
        "How many dentists work in {s}?",
    ),
    "": (
        "How much did it cost to make {s}?",
        "Who was the first person to photograph {s}?",
        "what colour is the logo of {s}",
        "What is the email address of {s}?",
    ),
}
# Words whose presence in the summary could make a missing-detail question answerable.
_DETAIL_WORDS = re.compile(
    r"food|tall|height|pet|shoe|mayor|postal|traffic|cost|photograph|"
    r"logo|colou?r|funeral|attend|phone|breakfast|wedding|taxi|dentist|"
    r"email",
    re.IGNORECASE,
)
# A later year of what a page describes: what it will be, or who will hold it, then.
_FUTURE = {
    "event": (
        "Who won the {year} {s}?",
        "who will win the {year} {s}",
        "Where will the {year} {s} take place?",
        "who won the {s} in {year}",
        "Which country will host the {s} in {year}?",
    ),
    "country": (
        "Who is the president of {s} in {year}?",
        "who will be the prime minister of {s} in {year}",
        "What will the population of {s} be in {year}?",
        "Who won the {year} general election in {s}?",
    ),
    "city": (
        "What will the population of {s} be in {year}?",
        "who will be the mayor of {s} in {year}",
        "How many people will live in {s} in {year}?",
    ),
    "company": (
        "What will {s}'s share price be at the end of {year}?",
        "how much revenue will {s} make in {year}",
        "Who will run {s} in {year}?",
    ),
}
_FUTURE_OF = (  # which future questions a page's opening sentence admits
    ("country", re.compile(r"\bis a (?:\w+ ){0,3}(?:country|nation|sovereign state)\b")),
    ("city", re.compile(r"\bis (?:a|the) (?:\w+ ){0,3}(?:city|town|capital|metropolis)\b")),
    ("company", re.compile(r"\bis an? (?:\w+ ){0,4}(?:company|corporation|manufacturer)\b")),
)


def _made_up_name(rng: random.Random, parts: int) -> str:
    return " ".join(
        "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice([2, 3]))).capitalize()
        for _ in range(parts)
    )


def unanswerable_questions(
    url: str, title: str, sentences: list[str], topic: str, rng: random.Random
) -> Iterator[Question]:
    """Questions about one page's subject that the offline web cannot answer: a later year
    of an event, a country, a city or a company, a detail its summary does not hold; and
    one about a made-up entity (split by its own text, since no page holds it)."""
    subject = title.split(" (")[0]
    first = sentences[0] if sentences else ""

    def unanswerable(question: str, style: str, split: Split | None = None) -> Question:
        question = question[:1].upper() + question[1:] if question[-1:] == "?" else question
        return Question(
            question=question,
            kind="unanswerable",
            answer=decline_answer(question),
            style=style,
            split=split,
        )

    if _EVENT.search(subject) and not re.search(r"\d{4}", subject):
        future: str | None = "event"
    else:
        future = next((kind for kind, pattern in _FUTURE_OF if pattern.search(first)), None)
    if future is not None:  # the event templates say "the" themselves
        named = subject if future == "event" else _subject(subject, first)
        asked = rng.choice(_FUTURE[future]).format(year=rng.randrange(2027, 2061), s=named)
        yield unanswerable(asked, "future event")
    if not _DETAIL_WORDS.search(" ".join(sentences)):
        asks = _MISSING_DETAIL.get(topic, _MISSING_DETAIL[""])
        asked = rng.choice(asks).format(s=_subject(subject, first))
        yield unanswerable(asked, "detail no page holds")
    kind = rng.choice(sorted(_MADE_UP))
    name = _made_up_name(rng, 2 if kind == "person" or rng.random() < 0.3 else 1)
    asked = rng.choice(_MADE_UP[kind]).format(
        name=name, place=name, work=f"The {name}" if rng.random() < 0.5 else name, thing=name
    )
    yield unanswerable(asked, "made-up entity", split_of(asked))


# The entries of a docs page that document a function or a method.
_DOCUMENTED_CALLABLES = (
    "//dl[contains(@class, 'py') and (contains(@class, 'function') or contains(@class, 'method'))]"
)


def documented_functions(doc: lxml.html.HtmlElement) -> set[str]:
    """The qualified names ("json.dumps") a docs page documents."""
    return {str(name) for name in doc.xpath(f"{_DOCUMENTED_CALLABLES}/dt/@id") if "." in name}


def made_up_function_questions(documented: set[str], rng: random.Random) -> Iterator[Question]:
    """A function that looks as if a docs page documented it and that none does: a real
    name changed by a suffix or prefix ("json.dumpz", "os.path.fastjoin")."""
    for qualname in sorted(documented):
        owner, name = qualname.rsplit(".", 1)
        changed = rng.choice(
            [name[:-1] + "z", name + "_all", name + "wise", "fast" + name, "safe_" + name]
        )
        fake = f"{owner}.{changed}"
        if fake in documented or len(name) < 3:
            continue
        asked = rng.choice(
            [
                f"What does Python's {fake}() function do?",
                f"What does {fake}() return?",
                f"what does {fake}() do",
                f"What does the {fake} function do?",
            ]
        )
        yield Question(
            question=asked,
            kind="unanswerable",
            answer=decline_answer(asked),
            style="made-up function",
        )


# -- Python docs -----------------------------------------------------------------------

_FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(?:\s|$)")


def _opening_clause(sentence: str, prefix: str) -> str | None:
    """A docs entry's gold phrase: the start of its sentence, in whole words, that fits
    DOCS_CLAUSE_CHARS after the prefix the answer names it by; None when under 3 words."""
    clause = ""
    for word in sentence.rstrip(".").split():
        if len(prefix) + len(clause) + len(word) + 1 > DOCS_CLAUSE_CHARS:
            break
        clause = f"{clause} {word}".strip()
    clause = clause.rstrip(",;:(")
    return clause if len(clause.split()) >= 3 else None


def _lowered(text: str) -> str:
    """The text as it reads after a dash: its first letter lower case, unless its first
    word is a name written in capitals ("SQLite", "NULL")."""
    first = text.split(" ", 1)[0]
    return text[:1].lower() + text[1:] if first[1:] == first[1:].lower() else text


def python_doc_questions(
    url: str, doc: lxml.html.HtmlElement, rng: random.Random
) -> Iterator[Question]:
    """What / how / why questions about the functions and methods a docs page documents."""
    for entry in doc.xpath(_DOCUMENTED_CALLABLES):
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
        clause = _opening_clause(sentence, f"{qualname}() ")
        if clause is None:
            continue
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
            answer=f"{qualname}() — {_lowered(clause)} [1].",
            style="what" if asked.startswith("What") else asked.split()[0].lower(),
        )


# -- Software manuals ------------------------------------------------------------------

# What a manual question's style starts with ("manual option", "manual default", ...).
MANUAL_STYLE = "manual"

# A manual documents its options, settings, functions and terms in definition lists: one
# or more terms (`<dt>`: "-a" and "--all" name one option) and a description (`<dd>`).
# Such an entry is often far down a long page, where a Find of its term reaches it
# (learning.scripted).

MAX_TERM_CHARS = 40
MIN_DESCRIPTION_CHARS = 20  # a first sentence shorter than this says too little
# Where a quote's sentences end (agent.grammar): an entry's sentences are split alike, so
# that each is a span a Quote can take.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# The kinds of term, each as a definition writes it, its name the group "name": a setting
# with its value's type ("shared_buffers (integer)"), an option or a backslash command with
# its argument ("--database=pattern", "-C <commit>", "\lo_export loid filename"), a
# function with its parameters ("abs(X)", "page_header(page bytea) returns record"), and
# a name or a phrase of keywords ("PQexecPrepared", "IF NOT EXISTS").
_TERMS = (
    (
        "setting",
        re.compile(
            r"(?P<name>[A-Za-z_][\w.]*) \((?:integer|boolean|string|enum|floating point|real)\)"
        ),
    ),
    ("option", re.compile(r"(?P<name>--?[A-Za-z0-9][\w-]*)(?:[=\[ <].*)?")),
    ("term", re.compile(r"(?P<name>\\[A-Za-z][\w+]*)(?: .*)?")),
    ("function", re.compile(r"(?P<name>[A-Za-z_][\w.]*)\([^()]*\)(?: returns .+)?")),
    ("term", re.compile(r"(?P<name>[A-Za-z_$][\w.$:-]*|[A-Z]+(?: [A-Z]+){1,3})")),
)
# Elements that end a description's first paragraph where it has no element of its own.
_BLOCKS = frozenset({"p", "div", "pre", "dl", "ul", "ol", "table", "blockquote"})
# A default a description states: "The default is 10 seconds (10s).", "Defaults to true.",
# "Valid values are try (the default), on, and off."; a value of a word, a quoted string or
# a number with its unit, and nothing more ("The default is to use ..." states none).
_VALUE = r"[\"“]?(?P<value>\d[\d.,]*(?: [A-Za-z]+)?|[\w.+-]+)[\"”]?"
_DEFAULTS = (
    re.compile(
        r"\b(?:[Tt]he default(?: value| setting)? is|[Dd]efaults to) "
        rf"(?:typically |usually |normally |currently )?{_VALUE}(?=[.,;:]?$|[.,;:] |\s\()"
    ),
    re.compile(rf"(?:^| ){_VALUE} \(the default\)"),
)
# The command a manual page documents, from its title: a command's manual page
# ("git-commit(1)"), an SQL command ("CREATE TABLE") or a program ("pg_dump").
_MAN_PAGE = re.compile(r"(?P<name>[a-z][\w.-]*)\(1\)")
_COMMAND_TITLE = re.compile(r"[A-Z]+(?: [A-Z]+)*|[a-z][\w-]*")
# What a title says before a page's name: its section's number ("17.4. ", "Appendix M. ").
_SECTION_NUMBER = re.compile(r"^(?:Chapter |Appendix )?[A-Z0-9]{1,3}(?:\.\d+)*\.\s+")
_MANUAL_ASKS = {
    "option": (
        "What does the {name} option of {command} do?",
        "what does {command} {name} do",
        "What is {name} for in {command}?",
        "What happens when I pass {name} to {command}?",
    ),
    "setting": (
        "What does {name} do in {where}?",
        "what does {name} do in {casual}",
        "What is the {name} setting in {where} for?",
        "What does the {where} setting {name} control?",
    ),
    "function": (
        "What does the {name} function do in {where}?",
        "what does {name} do in {casual}",
        "What is {name} for in {where}?",
        "How does {name} work in {where}?",
    ),
    "term": (
        "What does {name} do in {where}?",
        "What is {name} in {where}?",
        "what does {name} mean in {casual}",
        "What is {name} used for in {where}?",
    ),
    "default": (
        "What is the default value of {name} in {where}?",
        "what's the default for {name} in {casual}",
        "What does {name} default to in {where}?",
        "What is {name} set to by default in {where}?",
    ),
}


@dataclass(frozen=True)
class ManualEntry:
    """One documented name of a manual page and the first paragraph of its description."""

    name: str  # as a question names it: "--amend", "shared_buffers", "abs()"
    kind: str  # "option", "setting", "function" or "term"
    sentences: list[str]  # its description's first paragraph, a quotable span each


def manual_entries(doc: lxml.html.HtmlElement) -> list[ManualEntry]:
    """The entries of a manual page's definition lists whose term is a name and whose
    description opens with a sentence. Left out: a list inside a description (its terms
    are the values of another's: "no", "plain"), a table of contents or index (a term
    that is a link to where it is documented), API entries (python_doc_questions' kind),
    a placeholder ("name", "<commit>", written in italics), and a name two entries share
    (a question could not say which it means)."""
    entries: list[ManualEntry] = []
    for dl in doc.iter("dl"):
        classes = (dl.get("class") or "").split()
        if "toc" in classes or "py" in classes or dl.xpath("ancestor::dd"):
            continue
        terms: list[lxml.html.HtmlElement] = []
        for child in dl:
            if child.tag == "dt":
                terms.append(child)
            elif child.tag == "dd":
                entry = _manual_entry(terms, child)
                if entry is not None:
                    entries.append(entry)
                terms = []
    counts = Counter(entry.name for entry in entries)
    return [entry for entry in entries if counts[entry.name] == 1]


def _manual_entry(
    terms: list[lxml.html.HtmlElement], description: lxml.html.HtmlElement
) -> ManualEntry | None:
    """The entry of a description and the terms before it; None where no term is a name
    or the description's first sentence says too little to answer with."""
    names: list[tuple[str, str]] = []
    for dt in terms:
        shown = _text(dt)
        linked = _text_of(a for a in dt.iter("a") if a.get("href"))
        placeholders = {_text(e) for e in dt.iter("em", "i", "var")}
        if not shown or linked == shown:
            continue
        for line in _term_lines(dt):
            named = _term_name(line)
            if named is not None and named[0] not in placeholders:
                names.append(named)
    if not names:
        return None
    # an option's long form says what it does ("--all"); its short one ("-a") is found
    # everywhere on its page
    longs = [named for named in names if named[0].startswith("--")]
    name, kind = (longs or names)[0]
    if len(name.lstrip("-\\")) < 2 or len(name) > MAX_TERM_CHARS:
        return None
    sentences = [s for s in _SENTENCE_END.split(_first_paragraph(description)) if s]
    first = sentences[0] if sentences else ""
    if (
        len(first) < MIN_DESCRIPTION_CHARS
        or first.startswith("See ")  # a pointer to where it is described
        or first.count("(") != first.count(")")
        or re.search(r"[\[\]■]", first)  # the answer grammar keeps brackets for citations
    ):
        return None
    return ManualEntry(f"{name}()" if kind == "function" else name, kind, sentences)


def _text(element: lxml.html.HtmlElement) -> str:
    return " ".join(element.text_content().replace("¶", "").split())


def _text_of(elements: Iterator[lxml.html.HtmlElement]) -> str:
    return " ".join(" ".join(_text(e) for e in elements).split())


def _term_lines(dt: lxml.html.HtmlElement) -> list[str]:
    """The names a term element writes, one a line: a line break parts them ("-a<br>--all")."""
    parts: list[str] = [dt.text or ""]
    for node in dt.iterdescendants():
        parts.append("\n" if node.tag == "br" else node.text or "")
        if node.tail:
            parts.append(node.tail)
    lines = "".join(parts).replace("¶", "").split("\n")
    return [" ".join(line.split()) for line in lines if line.strip()]


def _term_name(line: str) -> tuple[str, str] | None:
    """(name, kind) of a term as a definition writes it, or None where it is no name."""
    for kind, pattern in _TERMS:
        match = pattern.fullmatch(line)
        if match is not None:
            return match["name"], kind
    return None


def _first_paragraph(description: lxml.html.HtmlElement) -> str:
    """The text of a description's first paragraph: the paragraph it opens with, else its
    text up to its first block (some manuals write a description without one)."""
    children = list(description)
    if not (description.text or "").strip() and children and children[0].tag == "p":
        return " ".join(children[0].text_content().split())
    parts = [description.text or ""]
    for child in children:
        if child.tag in _BLOCKS:
            break
        parts += [child.text_content(), child.tail or ""]
    return " ".join("".join(parts).split())


def manual_command(title: str, product: str) -> str | None:
    """The command a manual page documents, as it is typed ("git commit" for the page
    "git-commit(1)", "CREATE TABLE", "pg_dump"); None for a page about something else."""
    man = _MAN_PAGE.fullmatch(title)
    if man is not None:
        name, prefix = man["name"], f"{product.lower()}-"
        return f"{product.lower()} {name.removeprefix(prefix)}" if name.startswith(prefix) else name
    return title if _COMMAND_TITLE.fullmatch(title) else None


def page_subject(title: str) -> str:
    """What a manual page is about as a question names it: its title without a section's
    number, a manual page's section, or what follows a dash or colon, its words in lower
    case but for names ("17.4. Installation Procedure": "installation procedure",
    "Signals — Django 3.2.25 documentation": "signals")."""
    name = re.split(r" — |: ", _SECTION_NUMBER.sub("", title))[0]
    return " ".join(_lowered(word) for word in re.sub(r"\(\d\)$", "", name).split())


def _stated_default(sentences: list[str]) -> tuple[str, str] | None:
    """(value, sentence) of the default a description states, if one does."""
    for sentence in sentences:
        for pattern in _DEFAULTS:
            match = pattern.search(sentence)
            if match is not None and len(sentence) >= MIN_DESCRIPTION_CHARS:
                return match["value"].rstrip(".,"), sentence
    return None


def manual_questions(
    url: str, title: str, product: str, doc: lxml.html.HtmlElement, rng: random.Random
) -> Iterator[Question]:
    """What an option, setting, function or term of a manual page does, and its default
    where its description states one. The gold is the start of its description's first
    sentence (or the default); the question's title is the name as the question writes
    it, which a Find brings the entry into view with."""
    command = manual_command(title, product)
    subject = page_subject(title)

    def ask(style: str, entry: ManualEntry, gold: str, evidence: str, answer: str) -> Question:
        # Where the question says the name is: a command's page names the command, with
        # its software unless the command names it ("What does IF NOT EXISTS do in
        # PostgreSQL CREATE TABLE?", "git commit", "pg_dump"); a setting's name is the
        # software's own; any other name is the page's ("in the PostgreSQL docs on
        # acronyms"), since another page can use it for something else.
        if command is not None:
            plain = command.islower() or command.lower().startswith(product.lower())
            where = casual = command if plain else f"{product} {command}"
        elif entry.kind == "setting" or not subject:
            where, casual = product, product.lower()
        else:
            docs = "docs" if product.lower() in subject.lower() else f"{product} docs"
            where, casual = f"the {docs} on {subject}", f"the {docs.lower()} on {subject}"
        asks = _MANUAL_ASKS["term" if style == "option" and command is None else style]
        asked = rng.choice(asks).format(
            name=entry.name, command=command, where=where, casual=casual
        )
        return Question(
            question=asked[:1].upper() + asked[1:] if asked.endswith("?") else asked,
            gold_answers=[gold],
            url=url,
            title=entry.name,
            evidence=evidence,
            answer=answer,
            style=f"{MANUAL_STYLE} {style}",
        )

    for entry in manual_entries(doc):
        first = entry.sentences[0]
        clause = _opening_clause(first, f"{entry.name} ")
        if clause is not None:
            said = _lowered(clause)
            answer = _lead(f"{entry.name} — {_lowered(first)}", said)
            yield ask(entry.kind, entry, clause, first, answer or f"{entry.name} — {said} [1].")
        default = _stated_default(entry.sentences)
        if default is not None:
            value, sentence = default
            answer = _lead(f"The default of {entry.name} is {value}", value)
            if answer is not None:
                yield ask("default", entry, value, sentence, answer)


def generate_questions(
    store: OfflineWeb, *, seed: int = 0, per_page: int = 2
) -> Iterator[Question]:
    """Questions from every page of the offline web, each tagged with its page's split
    (a made-up entity's question keeps the split of its own text): per Wikipedia page up to
    `per_page` factoids, one long-form question and one unanswerable one; per page of the
    Python docs or another manual up to `per_page` x DOCS_PAGE_WEIGHT factoids (and a
    made-up function of the Python docs)."""
    rng = random.Random(seed)
    pages = store.pages()
    titles = {page.url: page.title for page in pages if page.source == "wikipedia"}
    products = {manual.name: manual.product for manual in MANUALS if manual.name != PYTHON_DOCS}
    for page in pages:
        if page.content_type != "text/html":
            continue
        body = store.body(page.url)
        if body is None:
            continue
        if page.source == "wikipedia":
            description, sentences, topic = wikipedia_page(body)
            factoids = [
                *wikipedia_questions(page.url, page.title, description, sentences, topic, rng),
                *relation_questions(page.url, page.title, sentences, topic, rng),
                *unnamed_subject_questions(page.url, page.title, description, sentences, rng),
            ]
            rng.shuffle(factoids)
            longform = list(
                longform_questions(
                    page.url,
                    page.title,
                    sentences,
                    topic,
                    rng,
                    _linked_page(store, titles, page.url, body),
                )
            )
            unanswerable = list(unanswerable_questions(page.url, page.title, sentences, topic, rng))
            found = [
                *factoids[:per_page],
                *rng.sample(longform, k=min(1, len(longform))),
                *rng.sample(unanswerable, k=min(1, len(unanswerable))),
            ]
        elif page.source == PYTHON_DOCS:
            # A docs page documents many functions, a summary one subject: without more per
            # docs page, Python questions would be a few percent of the data.
            doc = lxml.html.document_fromstring(body)
            found = list(python_doc_questions(page.url, doc, rng))
            rng.shuffle(found)
            made_up = list(made_up_function_questions(documented_functions(doc), rng))
            found = [
                *found[: per_page * DOCS_PAGE_WEIGHT],
                *rng.sample(made_up, k=min(1, len(made_up))),
            ]
        elif page.source in products:
            doc = lxml.html.document_fromstring(body)
            found = list(manual_questions(page.url, page.title, products[page.source], doc, rng))
            rng.shuffle(found)
            found = found[: per_page * DOCS_PAGE_WEIGHT]
        else:
            continue
        for question in found:
            if question.split is None:
                question = question.model_copy(update={"split": split_of(page.url)})
            yield question


def _linked_page(
    store: OfflineWeb, titles: dict[str, str], url: str, body: bytes
) -> tuple[str, str, list[str], str] | None:
    """The first Wikipedia page the summary links to in the same split (so a two-page
    question never crosses from a training page to a dev one): (url, title, sentences,
    topic)."""
    doc = lxml.html.document_fromstring(body)
    for href in doc.xpath("//main/p//a/@href"):
        target = str(href).split("#")[0]
        if not target.startswith("https://en.wikipedia.org/") or target == url:
            continue
        if split_of(target) != split_of(url):
            continue
        linked = store.body(target) if target in titles else None
        if linked is None:
            continue
        _, sentences, topic = wikipedia_page(linked)
        return target, titles[target], sentences, topic
    return None


def pick_manual_factoids(questions: list[Question], count: int, seed: int) -> list[Question]:
    """Up to count factoids of the software manuals' train pages, drawn at random: a quote
    ranker's share of long pages, where which sentence answers matters most (a page holds
    hundreds; a summary a handful), beside a draw at the kinds' shares (pick_questions)."""
    manual = [
        q
        for q in sorted(questions, key=lambda q: (q.question, q.url or ""))
        if q.split == "train" and q.kind == "factoid" and is_manual_question(q)
    ]
    return random.Random(seed).sample(manual, min(count, len(manual)))


def is_manual_question(question: Question) -> bool:
    """Whether manual_questions wrote it (about an entry of a software manual's page)."""
    return (question.style or "").startswith(f"{MANUAL_STYLE} ")


# What a generated set is made of: mostly factoids, then long-form and unanswerable ones.
KIND_SHARES = {"factoid": 0.6, "longform": 0.25, "unanswerable": 0.15}


def pick_questions(
    questions: list[Question], per_split: dict[str, int], seed: int
) -> list[Question]:
    """Up to N questions of each split, kinds in KIND_SHARES and, within a kind, styles
    balanced: no factoid style over a third; the styles of the other kinds (few, and some
    rare: a future event, a made-up function) an equal share each first, the rest of the
    quota then drawn from any."""
    rng = random.Random(seed)
    shuffled = sorted(questions, key=lambda q: (q.question, q.url or ""))
    rng.shuffle(shuffled)
    picked: list[Question] = []
    for split, wanted in per_split.items():
        for kind, share in KIND_SHARES.items():
            quota = round(wanted * share)
            pool = [q for q in shuffled if q.split == split and q.kind == kind]
            if kind == "factoid":
                caps = [max(1, -(-quota // 3))]
            else:
                styles_here = len({q.style or "" for q in pool}) or 1
                caps = [max(1, -(-quota // styles_here)), quota]
            taken = [False] * len(pool)
            styles: Counter[str] = Counter()
            for cap in caps:  # a second pass, where there is one, fills what the first left
                for at, question in enumerate(pool):
                    if sum(styles.values()) >= quota:
                        break
                    if taken[at] or styles[question.style or ""] >= cap:
                        continue
                    taken[at] = True
                    styles[question.style or ""] += 1
            picked += [question for at, question in enumerate(pool) if taken[at]]
    return picked
