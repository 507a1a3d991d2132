"""The search query made of a question's own words: the scripted demonstrator's query
(learning.scripted) and, under question search, an episode's first Search
(EpisodeConfig.question_search; docs/questions.md, "The question's own search").

What remains once the question's words of kind ("what", "which", "how", "many") are left
out names the thing asked about: "which country borders spain to the west" searches
"borders spain west".
"""

import re

# Question words left out of search queries.
QUERY_STOPWORDS = frozenset({
    "a", "an", "the", "is", "are", "was", "were", "what", "which", "who", "whom", "when",
    "where", "why", "how", "does", "do", "did", "in", "of", "on", "for", "to", "by", "with",
    "and", "or", "module", "module's", "function", "method", "used", "use", "would", "i",
    "call", "work", "year", "people", "kind", "thing", "country", "region", "live", "many",
    "born", "die",
})  # fmt: skip
_WORD = re.compile(r"[\w.'-]+")
# A dotted name in a question: "sqlite3.Connection.cursor()", "asyncio._register_task()".
_DOTTED_NAME = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
# The annotations Sphinx writes before a signature ("classmethod datetime.date.today()",
# "coroutine asyncio.Lock.acquire()").
_SIGNATURE_ANNOTATIONS = (
    "abstractmethod|async|await|awaitable|class|classmethod|coroutine|final|static|staticmethod"
)
# A query longer than this many words is cut: a forced Search must fit the command's
# token budget (EpisodeConfig.command_max_tokens), and the offline web reads 32 terms.
MAX_QUERY_WORDS = 16


def question_query(question: str) -> str:
    """The question's words less QUERY_STOPWORDS, in its order; the question itself where
    nothing else remains."""
    words = [w.strip(".'?") for w in _WORD.findall(question)]
    content = [w for w in words if w and w.lower() not in QUERY_STOPWORDS]
    return " ".join(content[:MAX_QUERY_WORDS]) or " ".join(question.split())


def named_callables(question: str) -> list[str]:
    """The dotted names the question names ("pdb.runcall"), each once, in the question's
    order."""
    return list(dict.fromkeys(_DOTTED_NAME.findall(question)))


def opens_signature(line: str, name: str) -> bool:
    """Whether the line is the signature of the callable name, as a docs page writes it
    ("classmethod datetime.date.today()" of "datetime.date.today")."""
    annotated = rf"^\s*(?:(?:{_SIGNATURE_ANNOTATIONS}) )*{re.escape(name)}\("
    return re.match(annotated, line) is not None
