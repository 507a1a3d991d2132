"""What is not a question: a message that asks about nothing ("hi", "thanks!", "👋") gets a
short reply saying what the service answers, and no browsing.

The rule is lexical and general: a message asks about something when it has a content
word, a word outside the closed classes of English (determiners, pronouns, auxiliaries,
prepositions, conjunctions, question words, interjections) and outside the fixed formulae
of phatic talk (greetings, thanks, farewells, acknowledgements). Open-class words name
things, actions and properties, and a number names a quantity: "crows?", "python",
"hi, who wrote Hamlet?" and "1984" are browsed; "hello there", "thank you so much", "good
morning!" and "how are you?" are not: nothing in them could be searched for.
"""

import re
import uuid

from webgpt.agent.answer import AnswerResult, AnswerTimings, AnswerUsage, Candidate
from webgpt.browser.observation import OBSERVATION_FORMAT_VERSION


def _words(*groups: str) -> frozenset[str]:
    return frozenset(word for group in groups for word in group.split())


# Closed-class words of English, and the interjections and vocatives of small talk.
CLOSED_CLASS = _words(
    # determiners and quantifiers
    "a an the this that these those some any no every each all both either neither such "
    "much many more most few little other another own same",
    # pronouns
    "i me my mine myself you your yours yourself yourselves he him his himself she her "
    "hers herself it its itself we us our ours ourselves they them their theirs themselves "
    "one someone somebody something anyone anybody anything everyone everybody everything "
    "nobody nothing u ur ya y'all",
    # auxiliaries, modals and their contractions
    "am is are was were be been being do does did done have has had having can could will "
    "would shall should may might must i'm you're he's she's it's we're they're i've "
    "you've we've they've i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll "
    "they'll isn't aren't wasn't weren't don't doesn't didn't haven't hasn't can't won't "
    "wouldn't shouldn't couldn't what's who's how's that's there's here's let's",
    # prepositions, conjunctions, particles and adverbs of degree and place
    "to of in on at for with by from about as into onto over under up down out off "
    "through and or but nor so yet if then than because while though too very really "
    "just quite again also not there here now still even only well ever",
    # question words
    "what which who whom whose when where why how",
    # interjections: greetings, thanks, farewells, acknowledgements, politeness
    "hi hello hey heya hiya howdy yo sup hola greetings welcome thanks thank thx ty tysm "
    "cheers bye goodbye goodnight cya later farewell ok okay k kk yes yeah yep yup sure "
    "no nope nah fine cool great nice awesome perfect wow oh ah aha hmm hm uh um lol haha "
    "please pls sorry oops alright right indeed gotcha",
    # how one addresses a chat
    "everyone folks guys all webgpt bot assistant",
)
# Formulae of phatic talk whose words are open-class on their own ("good", "morning").
PHATIC_FORMULAE = re.compile(
    r"\b(good|lovely|nice) (morning|afternoon|evening|night|day)\b"
    r"|\b(have|had) a (good|great|nice|lovely) (one|day|night|evening|weekend)\b"
    r"|\b(nice|good|great|glad|pleased) to (meet|see|hear from) you\b"
    r"|\b(see|talk to|speak to) you (soon|later|tomorrow|around)\b"
    r"|\btake care\b|\bmany thanks\b|\bthanks a (lot|bunch|million)\b"
    r"|\bappreciate (it|that)\b|\bnever ?mind\b|\bno (problem|worries)\b"
    r"|\bwhat'?s up\b|\bhow'?s it going\b|\bhow do you do\b|\bhow are (you|things)\b"
)
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")

NOT_A_QUESTION = "not_a_question"  # the reply's end_reason
REPLY = (
    "Hello! I answer questions by searching the web and quoting the pages I read: every "
    "claim in an answer cites its quote. Ask me something you would like to know."
)


def content_words(message: str) -> list[str]:
    """The words of message that name something: those left once the formulae of small
    talk and the closed-class words are taken out."""
    text = PHATIC_FORMULAE.sub(" ", message.lower().replace("’", "'"))
    return [word for word in _WORD.findall(text) if word not in CLOSED_CLASS]


def asks_nothing(message: str) -> bool:
    """True for a message with no content word: a greeting, thanks, a farewell, an emoji."""
    return not content_words(message)


def reply(question: str, n: int = 1) -> AnswerResult:
    """The answer to a message that asks nothing: REPLY, as each of the n candidates asked
    for (OpenAI's n choices are all there), none of which browsed (end_reason
    "not_a_question"), written by no policy and scored by no reward model."""
    candidates = [
        Candidate(
            episode=episode,
            answer=REPLY,
            reward=None,
            references=[],
            end_reason=NOT_A_QUESTION,
            dangling_citations=[],
            actions=0,
        )
        for episode in range(n)
    ]
    return AnswerResult(
        id=f"ans_{uuid.uuid4().hex}",
        question=question.strip(),
        answer=REPLY,
        references=[],
        candidates=candidates,
        best=0,
        usage=AnswerUsage(
            prompt_tokens=0, completion_tokens=0, actions=0, pages_fetched=0, page_cache_hits=0
        ),
        versions={
            "policy": None,
            "reward": None,
            "quote_ranker": None,
            "format": OBSERVATION_FORMAT_VERSION,
        },
        timings=AnswerTimings(
            total_s=0.0, policy_s=0.0, browser_s=0.0, fetch_s=0.0, render_s=0.0, scoring_s=0.0
        ),
    )
