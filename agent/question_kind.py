"""Whether a question asks for an explanation, read by a learned model of its words.

A how/why question browses until it holds several quotes and is answered in several cited
sentences (WebGPT's answer style); a question of fact takes the quote ranker's one best
sentence. Both quote the ranker's best first, and an explanation any sentence in view after
it (agent.episode, `quote_choices` and `quotes_wanted`), so that a fact read as an
explanation still states what a fact's answer would. Which of the two a person means is not
in any one word: "how does a windmill pump water" wants an account, "how tall is the
Eiffel Tower" a number, "why is Montana called the Treasure State" one naming fact,
"what's the difference between a view and a table" two things compared. The model is a
logistic regression over the question's words and word pairs, its opening and its ending
marked, fitted on people-written training questions labelled with the answer their writers
meant (learning/question_kind.py, `webgpt train question-kind`); every weight is learned,
none written by hand. The shipped model is agent/weights/question-kind-v2
(docs/agent.md, "Explanations read by a learned model").
"""

import itertools
import json
import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from webgpt.agent.errors import ConfigurationError, DataError
from webgpt.infra.settings import Settings

MODEL_FILE = "question_kind.json"
SHIPPED = Path(__file__).resolve().parent / "weights" / "question-kind-v2"
FEATURE_FORMAT = 1  # bump when `features` reads a question otherwise
# What the words of a question say about the answer wanted is in their form, not in the
# name or number asked about: a dotted code name, a call and a number each read as one
# placeholder word, so that the weights learn "what does <code> do" once.
_CODE_NAME = re.compile(r"[A-Za-z_]\w*(?:\.\w+)+(?:\(\))?|\w+\(\)")
_WORD = re.compile(r"[a-z]+|\d+")
_OPENING, _ENDING = "<s>", "</s>"


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.replace("’", "'"))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def words(question: str) -> list[str]:
    """The question's words as the model reads them: folded, code names and numbers as
    placeholders."""
    text = _CODE_NAME.sub(" codename ", question)
    return ["<num>" if w.isdigit() else w for w in _WORD.findall(_fold(text))]


def features(question: str) -> list[str]:
    """Each word and each pair of neighbouring words, with the opening and the ending as
    words of their own ("<s> how", "work </s>"): once each, sorted."""
    marked = [_OPENING, *words(question), _ENDING]
    pairs = [f"{a} {b}" for a, b in itertools.pairwise(marked)]
    return sorted(set(marked[1:-1]) | set(pairs))


@dataclass(frozen=True)
class QuestionKindModel:
    """A logistic regression over `features`: the probability that a question asks for an
    explanation. A feature no training question held weighs nothing."""

    weights: Mapping[str, float]
    bias: float
    threshold: float = 0.5

    def probability(self, question: str) -> float:
        z = self.bias + sum(self.weights.get(f, 0.0) for f in features(question))
        return 1.0 / (1.0 + math.exp(-max(min(z, 60.0), -60.0)))

    def asks_for_explanation(self, question: str) -> bool:
        return self.probability(question) >= self.threshold

    def save(self, folder: Path, manifest: Mapping[str, object]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        model = {
            "feature_format": FEATURE_FORMAT,
            "bias": self.bias,
            "threshold": self.threshold,
            "weights": dict(sorted(self.weights.items())),
        }
        (folder / MODEL_FILE).write_text(json.dumps(model, indent=0) + "\n")
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")

    @classmethod
    def load(cls, folder: Path) -> "QuestionKindModel":
        path = folder / MODEL_FILE
        if not path.is_file():
            raise ConfigurationError(
                f"{folder} holds no {MODEL_FILE}; train one with `webgpt train question-kind`"
            )
        try:
            model = json.loads(path.read_text())
            if model["feature_format"] != FEATURE_FORMAT:
                raise DataError(
                    f"{path}: feature format {model['feature_format']}, this code reads "
                    f"{FEATURE_FORMAT}"
                )
            return cls(
                weights={str(f): float(w) for f, w in model["weights"].items()},
                bias=float(model["bias"]),
                threshold=float(model["threshold"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise DataError(f"{path} is not a question-kind model: {error}") from error


class QuestionKindSettings(Settings):
    # WEBGPT_QUESTION_KIND, read by the service too (service.settings.ServiceSettings)
    question_kind: Path = SHIPPED


@lru_cache(maxsize=8)
def load_question_kind(folder: Path = SHIPPED) -> QuestionKindModel:
    """The model in folder (the shipped one by default), read once."""
    return QuestionKindModel.load(folder)
