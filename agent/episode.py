"""One episode: browse until `End:` or a limit, then write an answer that cites quotes."""

import functools
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from webgpt.agent.answer_rules import (
    CITATION,
    distinct_sentence_count,
    unshown_names,
)
from webgpt.agent.answerability import Answerability
from webgpt.agent.declines import (
    decline_answer,
    is_declined,
    uncited_decline,
)
from webgpt.agent.degenerate import degeneracy
from webgpt.agent.grammar import (
    ANSWER_TEXT,
    Quoted,
    answer_regex,
    browsing_grammar,
    cited_answer_regex,
    offered_commands,
    quoted_sentence_regex,
    quotes_to_offer,
    with_stop,
)
from webgpt.agent.policy import Policy, Sampling, Usage
from webgpt.agent.prompts import ANSWER_STOP, COMMAND_STOP, browsing_prompt
from webgpt.agent.question_kind import QuestionKindModel, load_question_kind
from webgpt.agent.quote_ranking import QuoteRanker, evidence_lead, page_quotes, ranked_quotes
from webgpt.agent.result_order import BestPageFirst
from webgpt.agent.scoring import ScoredAnswer, Scorer
from webgpt.agent.trace import (
    ActionEvent,
    AnswerDeltaEvent,
    EpisodeStartEvent,
    Reference,
    ShapedEvent,
    TraceEvent,
)
from webgpt.browser.session import BrowserSession

Emit = Callable[[TraceEvent], Awaitable[None]]
# A degenerate answer's retry opens each sentence with this many of its quote's words.
MIN_OPENING_WORDS = 3
AnswerBranch = Literal["either", "cited", "decline"]
# What may change an answer after the policy's first draft (ShapedEvent.part):
SHAPING_PARTS = {
    "answerability_decline": "declined: the answerability model judged the quotes no answer",
    "grounded_decline": "declined: the question names what no quote shows",
    "judged_decline": "declined: the decline judgment scored the decline above the answer",
    "evidence_decline": "declined: the quote ranker scored no quote above the decline",
    "decline_wording": "a decline's sentence written by rule from the question",
    "citations_removed": "citations removed: a decline's, or ones of no collected quote",
    "degenerate_retry": "written again a sentence a quote (it was degenerate)",
    "degenerate_decline": "declined: its drafts were degenerate",
}
# The parts that change the policy's draft under guided decoding, each of which can be
# left out (EpisodeConfig.rewrites) so that its worth is measured on against off
# (docs/agent.md, "Hand rules"; scripts/rewrite_worth.py). Without degenerate_retry a
# degenerate answer is declined at once: it is never served.
REWRITES = frozenset({"degenerate_retry"})


# The most quotes a how/why question may be set to collect (EpisodeConfig.explanation_quotes):
# more were never measured, and each costs actions of a 20-action episode.
MAX_EXPLANATION_QUOTES = 3

# The action limit an answer browses under when none is named, in every interface (the
# service, MCP, `webgpt answer`) and in `webgpt eval`, so that what is served is what is
# measured. At WebGPT's 100, force finish (grammar.FORCE_FINISH_ACTIONS) only steers an
# episode that has looped for 96 actions; the demonstrator and people browsing keep 100
# (browser.session.SessionConfig).
ANSWER_MAX_ACTIONS = 20

# WebGPT's sampling temperature: what best-of-n's episodes are sampled at, so that its
# candidates differ.
SAMPLING_TEMPERATURE = 0.8


def answer_temperature(n: int, named: float | None = None) -> float:
    """The temperature a request for n episodes names, else: one episode is greedy, n > 1
    are sampled. One greedy episode was right more often than one sample or best-of-n with
    the shipped reward model on people's dev factoids (docs/eval/promotion-rules-sampling.md)."""
    if named is not None:
        return named
    return 0.0 if n == 1 else SAMPLING_TEMPERATURE


@dataclass(frozen=True)
class EpisodeConfig:
    temperature: float = SAMPLING_TEMPERATURE
    guided: bool = True  # constrain commands and answers with browser.grammar regexes
    force_finish: bool = True  # near the action limit, steer toward quoting and answering
    # Under guided decoding, may the policy end with Nonsense / Controversial? An untrained
    # policy picks them as a first move and answers nothing, and v20 ends 37 of 43 dev
    # how/why questions so while End: Answer waits for their third quote
    # (docs/eval/promotion-rules-refusal-v20.md); unguided policies always may.
    allow_refusal: bool = False
    # A command's token budget. The longest command the browsing grammar offers is a Quote
    # of grammar.MAX_QUOTE_CHARS characters: ~80 tokens of English, ~150 of code, for the
    # default's tokenizer; at 64, 14 of v20's 315 dev quotes were cut mid-sentence (and
    # its answers with them). A free Search or Find the policy runs on is cut here too.
    command_max_tokens: int = 256
    # Ends a run-on answer: one cut here before its citation is degenerate, and retried.
    answer_max_tokens: int = 600
    # The answer rules of guided decoding (agent.answer_rules; docs/questions.md): a
    # question asking how or why browses until it holds this many quotes (unless its
    # actions run out); 1: as any question.
    explanation_quotes: int = 3
    # What reads whether a question asks how or why (agent.question_kind): the shipped
    # learned model unless another is named (`--question-kind`).
    question_kind: QuestionKindModel = field(default_factory=load_question_kind, compare=False)
    # Decline, rather than answer, when the question names something (a year, a name, a
    # function) that no collected quote shows.
    grounded_declines: bool = True
    # The decline judgment: a reward model (reward/; trained on `webgpt comparisons
    # declines`) scores the answer and the decline from the same quotes, and the decline is
    # served where its score passes the answer's by more than judge_margin. None: off.
    decline_judge: Scorer | None = field(default=None, compare=False)
    judge_margin: float = 0.0
    # Declines by answerability (agent.answerability; docs/agent.md, "Declines by
    # answerability"): a learned model reads how much of the question the quotes and their
    # pages show, and below its threshold the answer is the decline; it decides in place
    # of the grounded declines. None: off.
    answerability: Answerability | None = field(default=None, compare=False)
    # The question's own search (docs/questions.md), on by default since it passed its
    # promotion rule on the default policy (docs/eval/promotion-rules-question-search.md):
    # the episode's first Search is the question's own words (agent.queries.question_query).
    question_search: bool = True
    # Learned quote choice (agent.quote_ranking; docs/agent.md, "Learned quote choice"): a
    # question's first Quote, and every Quote of one that does not ask for an explanation,
    # may take only the relevant_quotes sentences in view that this ranker, a checkpoint of
    # `webgpt comparisons quotes` + `webgpt train rm`, scores highest (an explanation is
    # built from several, and is offered all after its first); where the policy quotes
    # from the view a page opened at, the Quote takes the ranker's best of the whole page
    # (page_quote). Without a ranker, or with relevant_quotes None, any sentence in view.
    # The commands and the service load the shipped ranker by default
    # (agent.model.load_quote_ranker).
    relevant_quotes: int | None = 1
    quote_ranker: QuoteRanker | None = field(default=None, compare=False)
    # Learned result order (agent.result_order): where the ranker narrows a fact's every
    # Quote, each search shows its first results best page first, by the ranker's score of
    # each page's best sentence.
    result_order: bool = False
    # Declines by evidence (docs/agent.md, "Declines by evidence"): with a quote ranker
    # trained with decline rows (`webgpt comparisons quotes --declines`), the answer is the
    # decline where no collected quote outscores the decline, scored as a sentence of its
    # page, by more than the margin (agent.quote_ranking.evidence_lead), and a cited
    # answer otherwise: whether the quotes answer is the ranker's call, not a sampled
    # token's (the grounded declines above still run first). A ranker's scale is its own,
    # so its margin is chosen on dev (scripts/evidence_declines.py) and recorded in its
    # checkpoint; evidence_margin overrides that. A ranker with no margin recorded (one
    # trained without decline rows has none) decides no declines unless given one here.
    evidence_declines: bool = True
    evidence_margin: float | None = None
    # The rewrites of the policy's draft that may run (REWRITES; all by default).
    rewrites: frozenset[str] = REWRITES

    def rewrites_with(self, part: str) -> bool:
        """Whether the answer phase may write the draft again by this part of REWRITES."""
        return self.guided and part in self.rewrites

    def evidence_threshold(self) -> float | None:
        """The margin the best quote's evidence lead must pass for an answer:
        evidence_margin, else the quote ranker's own; None where declines by evidence are
        off or have no margin."""
        if not (self.guided and self.evidence_declines) or self.quote_ranker is None:
            return None
        if self.evidence_margin is not None:
            return self.evidence_margin
        return self.quote_ranker.evidence_margin

    def __post_init__(self) -> None:
        if not 1 <= self.explanation_quotes <= MAX_EXPLANATION_QUOTES:
            raise ValueError(
                f"explanation_quotes {self.explanation_quotes}: give 1 to {MAX_EXPLANATION_QUOTES}"
            )
        if self.relevant_quotes is not None and self.relevant_quotes < 1:
            raise ValueError(f"relevant_quotes {self.relevant_quotes}: give 1 or more, or None")
        if unknown := sorted(set(self.rewrites) - REWRITES):
            raise ValueError(f"rewrites {unknown}: give parts of {sorted(REWRITES)}")

    def quote_choices(self, question: str, quotes_held: int = 0) -> int | None:
        """How many of the sentences in view a Quote may take (None: any of them), with
        quotes_held quotes collected. Any question's first quote is the ranker's best, so
        that a fact read as an explanation still quotes what a fact's browsing would; an
        explanation's others are any sentence in view, as it is built from several
        (docs/eval/promotion-rules-soft-reading.md)."""
        if self.quote_ranker is None:
            return None
        if quotes_held > 0 and self.question_kind.asks_for_explanation(question):
            return None
        return self.relevant_quotes

    def quotes_wanted(self, question: str) -> int:
        """How many quotes the question's browsing should collect (a degenerate answer's retry
        writes a sentence from each)."""
        if self.guided and self.question_kind.asks_for_explanation(question):
            return self.explanation_quotes
        return 1


QUOTE_PREFIX = "Quote: "


@dataclass
class Timings:
    policy_s: float = 0.0
    browser_s: float = 0.0  # session.step: search, fetch, render, matching
    scoring_s: float = 0.0  # the quote ranker's
    total_s: float = 0.0


@dataclass(frozen=True)
class EpisodeStep:
    observation: str  # what the policy was shown
    command: str  # what it wrote


@dataclass
class EpisodeResult:
    episode: int
    answer: str | None  # None: ended without an answer (refusal, or no quote collected)
    references: list[Reference]  # what the answer may cite: none for a decline
    end_reason: str | None
    dangling_citations: list[int] = field(default_factory=list)
    answer_prompt: str | None = None
    actions: int = 0
    invalid_actions: int = 0
    usage: Usage = field(default_factory=Usage)
    timings: Timings = field(default_factory=Timings)
    steps: list[EpisodeStep] = field(default_factory=list)
    # every quote collected, numbered from 1: what an answer written from answer_prompt
    # may cite (references, but kept for a decline too: RL writes other answers from it)
    quotes: list[Reference] = field(default_factory=list)
    # What the question names that no quote shows (guided): why a grounded decline was
    # written, or with grounded_declines off, what would have declined
    unshown: list[str] = field(default_factory=list)
    # With a decline judgment: (the answer's score, the decline's), when it judged one
    judgment: tuple[float, float] | None = None
    # With declines by evidence: how far the best quote's score passed the decline's
    evidence: float | None = None
    # With an answerability model: its probability that the quotes answer the question
    answerability: float | None = None
    # The parts other than the policy's sampling that changed the answer, in order
    # (SHAPING_PARTS); empty: the answer is the policy's first draft as written.
    shaped_by: list[str] = field(default_factory=list)

    @property
    def declined(self) -> bool:
        """The answer says the pages found do not answer (agent.declines)."""
        return is_declined(self.answer)


def check_citations(answer: str, quote_count: int) -> tuple[str, list[int]]:
    """Remove citations [n] that point to no collected quote; returns (answer, removed)."""
    dangling = sorted({int(n) for n in CITATION.findall(answer) if not 1 <= int(n) <= quote_count})
    if not dangling:
        return answer, []
    cleaned = CITATION.sub(lambda m: m[0] if 1 <= int(m[1]) <= quote_count else "", answer)
    return re.sub(r"[ \t]{2,}", " ", cleaned).replace(" .", ".").strip(), dangling


def served_answer(text: str, quote_count: int) -> tuple[str, list[int]]:
    """The answer as it is served, from the text the policy wrote: stripped, a decline
    uncited, citations of no quote removed; returns (answer, removed citations). RL
    rewards this text (learning.rl.reward), what a user would have been shown."""
    return check_citations(uncited_decline(text.strip()), quote_count)


def answer_sampling(
    config: EpisodeConfig,
    quotes: Sequence[Quoted],
    branch: Literal["either", "cited"] = "either",
    *,
    sentence_cite: int | None = None,
) -> Sampling:
    """How an answer is sampled from the answer-phase prompt of its quotes:
    a cited answer or a decline, or a cited answer alone. sentence_cite: the rest of one
    sentence the prompt opens with that quote's words, to its citation
    (grammar.quoted_sentence_regex)."""
    if sentence_cite is not None:
        regex = quoted_sentence_regex(sentence_cite)
    else:
        cited = answer_regex if branch == "either" else cited_answer_regex
        regex = cited(quotes)
    return Sampling(
        n=1,
        temperature=config.temperature,
        max_tokens=config.answer_max_tokens,
        stop=ANSWER_STOP,
        regex=with_stop(regex, ANSWER_STOP[0]) if config.guided else None,
    )


async def run_episode(
    episode: int,
    session: BrowserSession,
    policy: Policy,
    question: str,
    config: EpisodeConfig,
    emit: Emit | None = None,
) -> EpisodeResult:
    """Drive one session to its end and answer from its quotes."""
    started = time.perf_counter()
    result = EpisodeResult(episode, None, [], None)
    observation = session.reset(question)
    ranker = config.quote_ranker if config.guided else None
    order = None
    # the learned result order serves a fact, whose every quote the ranker narrows
    if ranker is not None and config.result_order and config.quote_choices(question, 1):
        order = BestPageFirst(ranker, question, session.peek)
    session.result_order = order  # this episode's alone
    if emit is not None:
        await emit(EpisodeStartEvent(episode=episode, question=question))
    while not session.done:
        ranked = None
        limit = config.quote_choices(question, len(session.quotes))
        if ranker is not None and limit is not None:
            clock = time.perf_counter()
            ranked = await ranked_quotes(
                ranker,
                question,
                session.page.title,
                quotes_to_offer(session, named_entry=True),
                limit,
            )
            result.timings.scoring_s += time.perf_counter() - clock
        grammar = (
            browsing_grammar(
                session,
                allow_refusal=config.allow_refusal,
                force_finish=config.force_finish,
                min_quotes=config.quotes_wanted(question),
                question_search=config.question_search,
                ranked=ranked,
            )
            if config.guided
            else None
        )
        sampling = Sampling(
            n=1,
            temperature=config.temperature,
            max_tokens=config.command_max_tokens,
            stop=COMMAND_STOP,
            regex=with_stop(grammar.regex, COMMAND_STOP[0]) if grammar is not None else None,
            # a guided policy reads the regex; an unguided one (a chat policy's tools) the values
            offered=offered_commands(session) if grammar is None else None,
        )
        clock = time.perf_counter()
        completions = await policy.complete(browsing_prompt(observation), sampling)
        result.timings.policy_s += time.perf_counter() - clock
        result.usage += completions.usage
        command = completions.choices[0].text.strip()
        narrowed = grammar.narrowed if grammar is not None else []
        if ranked and command.startswith(QUOTE_PREFIX):
            clock = time.perf_counter()
            widened = await page_quote(session, question, config, command, ranked)
            result.timings.scoring_s += time.perf_counter() - clock
            if widened != command:
                command, narrowed = widened, [*narrowed, "page_quotes"]
        clock = time.perf_counter()
        step = await session.step(command)
        result.timings.browser_s += time.perf_counter() - clock
        if order is not None and step.event.type == "search" and order.reordered:
            narrowed = [*narrowed, "result_order"]
        result.steps.append(EpisodeStep(observation, command))
        observation = step.observation
        result.actions += 1
        result.invalid_actions += step.event.type == "invalid_action"
        if emit is not None:
            await emit(
                ActionEvent(
                    episode=episode,
                    command=command,
                    event=step.event,
                    actions_left=session.actions_left,
                    narrowed=narrowed,
                )
            )
    session.result_order = None
    if order is not None:  # its pages' reading and scoring, inside browser_s
        result.timings.scoring_s += order.scoring_s
        result.timings.browser_s -= order.scoring_s
    result.end_reason = session.end_reason
    if session.end_reason not in ("nonsense", "controversial"):
        await write_answer(result, session, policy, config, emit)
    else:
        result.references = references(session)
    result.timings.total_s = time.perf_counter() - started
    return result


async def page_quote(
    session: BrowserSession, question: str, config: EpisodeConfig, command: str, ranked: list[str]
) -> str:
    """The Quote the policy chose among the ranked sentences in view, as the ranker picks
    from the whole page where the view is the one the page opened at: a Quote takes text
    anywhere on the page (WebGPT's browser), and on a long page the answer is seldom in the
    view it opens at, so where sentences out of view score higher, the policy's choice to
    quote takes the page's best. A view the policy brought itself (a Find, a scroll) is its
    choice of where to read, and keeps its ranked pick: on an API page a Find of the entry
    the question names knows which entry a sentence describes, the ranker reading the page
    does not (docs/eval/promotion-rules-page-quotes.md). With one sentence ranked (the
    default), the page's best is the Quote a grammar of it would have admitted; with
    several, a pick of the view's that is also among the page's best stays."""
    ranker = config.quote_ranker
    assert ranker is not None
    if not session.at_opening_view:
        return command
    best = functools.partial(
        page_quotes,
        ranker,
        question,
        session.page.title,
        quotes_to_offer(session),
        quotes_to_offer(session, whole_page=True),
    )
    if command.removeprefix(QUOTE_PREFIX) in await best(len(ranked)):
        return command
    return QUOTE_PREFIX + (await best(1))[0]


def references(session: BrowserSession) -> list[Reference]:
    """The session's quotes as what an answer may cite, numbered from 1."""
    return [
        Reference(n=n, title=q.title, url=q.url, domain=q.domain, extract=q.extract)
        for n, q in enumerate(session.quotes, start=1)
    ]


async def write_answer(
    result: EpisodeResult,
    session: BrowserSession,
    policy: Policy,
    config: EpisodeConfig,
    emit: Emit | None = None,
) -> None:
    """The answer phase, into result: the policy writes an answer citing the session's
    quotes (none without quotes); citations of no quote are removed, a decline cites none
    and its sentence is written by rule from the question (agent.declines.decline_answer).
    With an answerability model, it decides whether to decline (EpisodeConfig.answerability);
    else a question naming what no quote shows is declined (EpisodeConfig.grounded_declines);
    else, with declines by evidence, the quote ranker's evidence margin chooses
    (EpisodeConfig.evidence_declines); else the policy's own answer chooses which;
    with a decline judgment, the policy drafts a cited answer and the judgment serves the
    decline where it scores the decline above it (EpisodeConfig.decline_judge).
    Under guided decoding a degenerate answer (agent.degenerate: a loop, a repeat, blanks,
    a sentence cut short, or nothing the question does not say) is written once more a
    sentence a quote, its one retry, and declined if that is degenerate too. Each such part
    is named in result.shaped_by and in the trace (ShapedEvent)."""
    result.references = result.quotes = references(session)
    if not session.quotes:
        return
    prompt = session.answer_prompt()
    result.answer_prompt = prompt
    clock = time.perf_counter()

    async def shaped(part: str, detail: str = "") -> None:
        result.shaped_by.append(part)
        if emit is not None:
            await emit(ShapedEvent(episode=result.episode, part=part, detail=detail))

    async def draft(text: str) -> None:
        """A draft written by rule rather than sampled, shown in the trace on its line."""
        if emit is not None:
            await emit(AnswerDeltaEvent(episode=result.episode, text="\n" + text))

    answer = await _drafted_answer(result, session, policy, config, prompt, shaped, emit)
    if config.guided and (why := degeneracy(answer, session.question)) is not None:
        # Each detail names the reason and the draft it turns down: the part alone does not
        # say what the policy wrote. latest is the last draft written, why its fault.
        latest = answer
        if config.rewrites_with("degenerate_retry"):
            await shaped("degenerate_retry", f"{why}; drafted: {answer.strip()}")
            wanted = config.quotes_wanted(session.question)
            cites = _cited_or_first(answer, len(session.quotes), wanted)
            latest, why = await _write_by_quote(result, session, policy, config, emit, cites)
            why = why or degeneracy(latest, session.question)
        if why is None:
            answer, result.dangling_citations = served_answer(latest, len(session.quotes))
        else:
            answer, result.dangling_citations = decline_answer(session.question), []
            drafted = f"; drafted: {latest.strip()}" if latest.strip() else ""
            await shaped("degenerate_decline", why + drafted)
            await draft(answer)
    if config.decline_judge is not None and not is_declined(answer):
        answer = await _judged(result, session.question, prompt, answer, config, shaped, draft)
    if is_declined(answer) and answer != decline_answer(session.question):
        answer = decline_answer(session.question)
        await shaped("decline_wording")
        await draft(answer)
    result.timings.policy_s += time.perf_counter() - clock
    result.answer = answer
    if is_declined(answer):  # it cites nothing, so it has no references
        result.references = []


Shaped = Callable[[str, str], Awaitable[None]]
Draft = Callable[[str], Awaitable[None]]


async def _judged(
    result: EpisodeResult,
    question: str,
    prompt: str,
    answer: str,
    config: EpisodeConfig,
    shaped: Shaped,
    draft: Draft,
) -> str:
    """The answer, or the decline where the decline judgment scores it higher by more than
    the margin: whether the quotes hold an answer is judged from them, not from the
    question's words."""
    assert config.decline_judge is not None
    declined = decline_answer(question)
    answer_score, decline_score = await config.decline_judge.score(
        [ScoredAnswer(question, prompt, answer), ScoredAnswer(question, prompt, declined)]
    )
    result.judgment = (answer_score, decline_score)
    if decline_score - answer_score <= config.judge_margin:
        return answer
    await shaped("judged_decline", f"answer {answer_score:.2f}, decline {decline_score:.2f}")
    await draft(declined)
    result.dangling_citations = []
    return declined


async def _drafted_answer(
    result: EpisodeResult,
    session: BrowserSession,
    policy: Policy,
    config: EpisodeConfig,
    prompt: str,
    shaped: Shaped,
    emit: Emit | None,
) -> str:
    """The answer as the policy drafts it from the answer prompt and the answer rules of
    guided decoding shape it (write_answer), before the degenerate check."""
    # Under a decline judgment the policy drafts a cited answer and the judgment, reading it
    # beside the decline, decides: a decline is never the policy's token-by-token choice.
    branch: AnswerBranch = "either" if config.decline_judge is None else "cited"
    if config.guided:  # recorded with the rule off too: what it would have declined
        pages = [
            f"{page.title}\n{page.url.replace('_', ' ')}\n{page.text_index.text}"
            for page in session.quoted_pages.values()
        ]
        result.unshown = unshown_names(session.question, session.quotes, pages)
        if config.answerability is not None:
            quoted = [f"{quote.title}\n{quote.extract}" for quote in session.quotes]
            result.answerability = config.answerability.probability(session.question, quoted, pages)
    threshold = config.evidence_threshold()
    if threshold is not None and config.quote_ranker is not None:
        result.evidence = await evidence_lead(config.quote_ranker, session.question, session.quotes)
    if config.answerability is not None and result.answerability is not None:
        if result.answerability < config.answerability.model.threshold:
            await shaped("answerability_decline", f"{result.answerability:.2f}")
            branch = "decline"
    elif result.unshown and config.grounded_declines:
        await shaped("grounded_decline", ", ".join(result.unshown))
        branch = "decline"
    elif threshold is not None and result.evidence is not None:
        branch = "cited" if result.evidence > threshold else "decline"
        if branch == "decline":
            await shaped("evidence_decline", f"best quote {result.evidence:+.2f}")
    if branch == "decline":
        # what the pages do not say is the question itself: the sentence is written by rule
        declined = decline_answer(session.question)
        if emit is not None:
            await emit(AnswerDeltaEvent(episode=result.episode, text=declined))
        return declined
    sampling = answer_sampling(config, session.quotes, branch)
    text, _ = await _stream_answer(result, policy, prompt, sampling, emit)
    answer, result.dangling_citations = served_answer(text, len(session.quotes))
    if answer != text.strip():
        await shaped("citations_removed", f"drafted: {text.strip()}")
    return answer


def _cited_or_first(answer: str, quote_count: int, wanted: int) -> tuple[int, ...]:
    """The quotes a retry writes a sentence each from: those the answer cites, else the
    first ones, as many as the question wants (at least one)."""
    numbers = (int(n) for n in CITATION.findall(answer))
    cited = list(dict.fromkeys(n for n in numbers if 1 <= n <= quote_count))
    first = [n for n in range(1, quote_count + 1) if n not in cited]
    return tuple((cited + first)[: max(wanted, 1)])


def _opens_a_sentence(opening: str) -> bool:
    """A quote's first words can open an answer's sentence: no bracket, no line break."""
    return re.fullmatch(f"{ANSWER_TEXT}+", opening) is not None


async def _write_by_quote(
    result: EpisodeResult,
    session: BrowserSession,
    policy: Policy,
    config: EpisodeConfig,
    emit: Emit | None,
    cites: Sequence[int],
) -> tuple[str, str | None]:
    """An answer written from its start a sentence a quote: each of the quotes numbered
    cites (_cited_or_first: as many as the question wants) opens a sentence with its first
    MIN_OPENING_WORDS words, which ends at its citation (grammar.quoted_sentence_regex), so
    that neither runs into the other. With what was written, why it is no answer (None
    where it is one, as far as this writing can tell): a quote's words cannot open a
    sentence ("opening"), a sentence runs to the token limit ("cut"), or the sentences say
    something twice ("repeat")."""
    prompt, written = session.answer_prompt(), ""
    for cite in cites:
        opening = " ".join(session.quotes[cite - 1].extract.split()[:MIN_OPENING_WORDS])
        if not _opens_a_sentence(opening):
            return written, "opening"
        head = f"{written} {opening}" if written else opening
        if emit is not None:
            new_draft = "" if written else "\n"  # the trace shows each draft on a line
            await emit(
                AnswerDeltaEvent(episode=result.episode, text=new_draft + head[len(written) :])
            )
        sampling = answer_sampling(config, session.quotes, "cited", sentence_cite=cite)
        text, finish = await _stream_answer(result, policy, prompt + head, sampling, emit)
        written = head + text
        if finish == "length":
            return written, "cut"
    return written, None if distinct_sentence_count(written) >= len(cites) else "repeat"


async def _stream_answer(
    result: EpisodeResult, policy: Policy, prompt: str, sampling: Sampling, emit: Emit | None
) -> tuple[str, str | None]:
    """The text the policy writes after prompt, streamed to emit, and why it ended ("length":
    at max_tokens); its tokens into result."""
    parts: list[str] = []
    finish = None
    async for chunk in policy.stream(prompt, sampling):
        if chunk.usage is not None:
            result.usage += chunk.usage
        finish = chunk.finish_reason or finish
        if not chunk.text:
            continue
        parts.append(chunk.text)
        if emit is not None:
            await emit(AnswerDeltaEvent(episode=result.episode, text=chunk.text))
    return "".join(parts), finish
