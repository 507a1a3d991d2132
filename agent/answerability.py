"""Whether the collected quotes answer the question, judged by a learned model.

The model is a logistic regression over how much of the question the evidence shows: each
of the question's words weighs by its rarity in the offline web (a word most pages hold,
"what" or "the", weighs little; a name or a year few or none hold weighs much), and the
features are the weighted shares of the question that the quotes, and the pages they come
from, show, and the rarest word that each leaves out. Nothing in it reads capitals, digits
or question words: which words matter, and how much a missing one says, is what the
weights learn from the policy's own episodes on training questions
(learning/answerability.py, `webgpt train answerability`). Below its threshold the answer
is the decline (agent.episode, `answerability` in the trace).
"""

import json
import math
import sqlite3
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from webgpt.agent.errors import ConfigurationError, DataError
from webgpt.browser.offline import default_store_path
from webgpt.infra.settings import Settings

MODEL_FILE = "answerability.json"
FEATURES = (
    "quote_coverage",  # the question's weight its quotes show, of its whole weight
    "page_coverage",  # ... that its quoted pages (text, title, address) show
    "rarest_unquoted",  # the weight of its rarest word no quote shows (0: none missing)
    "rarest_off_page",  # the weight of its rarest word no quoted page shows
    "rarest_unquoted_name",  # ... of its rarest word written as a name no quote shows
    "rarest_off_page_name",  # ... of its rarest word written as a name no quoted page shows
)
# A question's word is shown where a word of the evidence opens with its first
# SHOWN_PREFIX characters, or is the word itself when it is shorter: "moons" is shown
# by "moon", "Korea" by "Korean".
SHOWN_PREFIX = 4


def fold(text: str) -> str:
    """Text compared without case, accents or the kind of apostrophe."""
    decomposed = unicodedata.normalize("NFKD", text.replace("’", "'"))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def words_of(text: str) -> list[str]:
    """The folded words of a text: runs of letters and digits."""
    word: list[str] = []
    found: list[str] = []
    for ch in fold(text) + " ":
        if ch.isalnum():
            word.append(ch)
        elif word:
            found.append("".join(word))
            word = []
    return found


class TermRarity:
    """How rare a word is: log((N + 1) / (df + 1)) over the offline web's N indexed
    sections, df of them holding it, scaled to (0, 1]. Without an offline web every word
    weighs 1."""

    def __init__(self, store: Path | None) -> None:
        self._db: sqlite3.Connection | None = None
        self._sections = 0
        if store is not None and store.is_file():
            self._db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, check_same_thread=False)
            self._sections = int(self._db.execute("SELECT count(*) FROM pages_fts").fetchone()[0])
        self._lock = threading.Lock()
        self.weight = lru_cache(maxsize=65536)(self._weight)

    def _weight(self, word: str) -> float:
        if self._db is None or not self._sections:
            return 1.0
        with self._lock:  # FTS5 tokenizes the word as it indexed the pages
            row = self._db.execute(
                "SELECT count(*) FROM pages_fts WHERE pages_fts MATCH ?", (f'"{word}"',)
            ).fetchone()
        top = math.log(self._sections + 1)
        return math.log((self._sections + 1) / (int(row[0]) + 1)) / top


def _shown(word: str, evidence: frozenset[str], openings: frozenset[str]) -> bool:
    if len(word) <= SHOWN_PREFIX:
        return word in evidence
    # the opening is a cheap first test: most words of a long page share none with it
    return word[:SHOWN_PREFIX] in openings and any(
        w.startswith(word) or word.startswith(w) for w in evidence if len(w) >= SHOWN_PREFIX
    )


class _Evidence:
    """The words of a text, indexed for _shown."""

    def __init__(self, text: str) -> None:
        self.words = frozenset(words_of(text))
        self.openings = frozenset(w[:SHOWN_PREFIX] for w in self.words if len(w) >= SHOWN_PREFIX)

    def shows(self, word: str) -> bool:
        return _shown(word, self.words, self.openings)


def name_words(question: str) -> set[str]:
    """The question's words written as a name: with a capital letter (past its first word,
    which any question capitalises) or a digit, folded as words_of folds them."""
    found = set()
    for index, token in enumerate(question.split()):
        capital = index > 0 and any(c.isupper() for c in token)
        if capital or any(c.isdigit() for c in token):
            found.update(words_of(token))
    return found


def features(
    question: str, quotes: Sequence[str], pages: Sequence[str], rarity: TermRarity
) -> list[float]:
    """FEATURES of a question against its quotes' text (titles and extracts) and their pages'
    text, in that order."""
    words = list(dict.fromkeys(words_of(question)))
    weights = [rarity.weight(w) for w in words]
    total = sum(weights)
    if not words or total <= 0:
        return [1.0, 1.0] + [0.0] * (len(FEATURES) - 2)
    names = name_words(question)
    quoted = _Evidence("\n".join(quotes))
    around = _Evidence("\n".join([*quotes, *pages]))
    unquoted = [
        (w, weight) for w, weight in zip(words, weights, strict=True) if not quoted.shows(w)
    ]
    off_page = [(w, weight) for w, weight in unquoted if not around.shows(w)]

    def rarest(missing: list[tuple[str, float]], only_names: bool = False) -> float:
        return max((weight for w, weight in missing if w in names or not only_names), default=0.0)

    return [
        1.0 - sum(weight for _, weight in unquoted) / total,
        1.0 - sum(weight for _, weight in off_page) / total,
        rarest(unquoted),
        rarest(off_page),
        rarest(unquoted, only_names=True),
        rarest(off_page, only_names=True),
    ]


@dataclass(frozen=True)
class AnswerabilityModel:
    """A logistic regression over FEATURES: the probability that the quotes answer."""

    weights: tuple[float, ...]
    bias: float
    threshold: float = 0.5  # below it, the answer is the decline

    def probability(self, values: Sequence[float]) -> float:
        if len(values) != len(self.weights):
            raise DataError(f"{len(values)} features for a model of {len(self.weights)}")
        z = self.bias + sum(w * v for w, v in zip(self.weights, values, strict=True))
        return 1.0 / (1.0 + math.exp(-max(min(z, 60.0), -60.0)))

    def save(self, folder: Path, manifest: dict[str, object]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        model = {
            "features": list(FEATURES),
            "weights": list(self.weights),
            "bias": self.bias,
            "threshold": self.threshold,
        }
        (folder / MODEL_FILE).write_text(json.dumps(model, indent=2) + "\n")
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")

    @classmethod
    def load(cls, folder: Path) -> "AnswerabilityModel":
        path = folder / MODEL_FILE
        if not path.is_file():
            raise ConfigurationError(
                f"{folder} holds no {MODEL_FILE}; train one with `webgpt train answerability`"
            )
        try:
            model = json.loads(path.read_text())
            if tuple(model["features"]) != FEATURES:
                raise DataError(f"{path}: features {model['features']}, this code reads {FEATURES}")
            return cls(
                weights=tuple(float(w) for w in model["weights"]),
                bias=float(model["bias"]),
                threshold=float(model["threshold"]),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise DataError(f"{path} is not an answerability model: {error}") from error


@dataclass
class Answerability:
    """The model and the word rarities it reads, as an episode uses them."""

    model: AnswerabilityModel
    rarity: TermRarity

    def probability(self, question: str, quotes: Sequence[str], pages: Sequence[str]) -> float:
        return self.model.probability(features(question, quotes, pages, self.rarity))


class AnswerabilitySettings(Settings):
    # WEBGPT_ANSWERABILITY, read by the service too (service.settings.ServiceSettings)
    answerability: str = "none"


@lru_cache(maxsize=8)
def load_answerability(given: str, store: Path | None = None) -> Answerability | None:
    """The model a command or setting names: a folder of `webgpt train answerability`, or
    `none`; its word rarities from the offline web at store (default: the built one).
    Loaded once for each (given, store): the service reads it at every answer."""
    if given == "none":
        return None
    model = AnswerabilityModel.load(Path(given))
    return Answerability(model, TermRarity(store or default_store_path()))
