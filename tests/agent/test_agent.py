"""The agent against a scripted policy server and a real (small) offline web."""

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Sequence

import pytest

from tests.agent.fake_policy import Script
from webgpt.agent.answer import Agent
from webgpt.agent.declines import decline_answer, is_declined
from webgpt.agent.episode import EpisodeConfig, check_citations, run_episode
from webgpt.agent.errors import ConfigurationError, PolicyError
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.question_kind import QuestionKindModel
from webgpt.agent.scoring import ScoredAnswer
from webgpt.agent.trace import TraceEvent
from webgpt.browser.events import CollectedQuote
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web

CROW_EPISODE = [
    "Search crows recognise faces",
    "Clicked on link 0",
    "Quote: Crows can recognise individual human faces and remember them for years.",
    "End: Answer",
]

# Readings of a question's kind that hold whatever the shipped model's weights: a test of how
# a fact's or an explanation's episode runs names the kind it means.
READS_FACTS = QuestionKindModel(weights={}, bias=-5.0)
READS_EXPLANATIONS = QuestionKindModel(weights={}, bias=5.0)


def quoted(extract: str, title: str = "Page") -> CollectedQuote:
    return CollectedQuote(
        title=title, domain="example.org", url="https://example.org/", extract=extract
    )


def collect_into(events: list[TraceEvent]) -> Callable[[TraceEvent], Awaitable[None]]:
    async def collect(event: TraceEvent) -> None:
        events.append(event)

    return collect


class LengthScorer:
    """Prefers longer answers: a known preference to check the reranking."""

    name = "length-scorer"

    async def score(self, answers: Sequence[ScoredAnswer]) -> list[float]:
        return [float(len(a.answer)) for a in answers]

    async def aclose(self) -> None:
        pass


async def test_episode_follows_the_protocol(web: Web, policy: OpenAIPolicy, script: Script) -> None:
    script.commands = list(CROW_EPISODE)
    script.answers = ["Crows recognise human faces and remember them [1]."]
    events: list[TraceEvent] = []

    async def collect(event: TraceEvent) -> None:
        events.append(event)

    agent = Agent(web, policy, episode=EpisodeConfig(question_kind=READS_FACTS))
    result = await agent.answer("Do crows recognise faces?", emit=collect)

    assert result.answer == "Crows recognise human faces and remember them [1]."
    [reference] = result.references
    assert (reference.n, reference.title, reference.url) == (
        1,
        "Crow",
        "https://en.wikipedia.org/wiki/Crow",
    )
    assert (
        reference.extract
        == "Crows can recognise individual human faces and remember them for years."
    )
    assert result.usage.actions == 4 and result.usage.pages_fetched == 1
    assert result.versions == {
        "policy": "scripted",
        "reward": None,
        "quote_ranker": None,
        "format": 1,
    }

    browsing = [r for r in script.requests if not r["stream"]]
    assert len(browsing) == 4
    for request, command in zip(browsing, CROW_EPISODE, strict=True):
        assert request["prompt"].endswith("♦Next action\n")
        assert request["stop"] == ["\n"] and request["n"] == 1 and request["temperature"] == 0.8
        # The grammar sent with each step admits the command the policy then wrote.
        assert re.fullmatch(request["structured_outputs"]["regex"], command)
    [answering] = [r for r in script.requests if r.get("stream")]
    assert answering["prompt"] == (
        "Do crows recognise faces?■[1] Crow (en.wikipedia.org)\n\n"
        "Crows can recognise individual human faces and remember them for years.■"
    )
    assert answering["stop"] == ["■"]
    assert re.fullmatch(answering["structured_outputs"]["regex"], result.answer)

    kinds = [e.type for e in events]
    assert kinds[0] == "episode_start" and kinds[-1] == "candidate"
    assert kinds.count("action") == 4 and "answer_delta" in kinds
    actions = [e for e in events if e.type == "action"]
    assert [a.event.type for a in actions] == ["search", "page", "quote", "end"]  # type: ignore[union-attr]


async def test_grammar_on_a_real_page(web: Web) -> None:
    from webgpt.agent.grammar import answer_regex, browsing_regex

    session = web.session(config=SessionConfig(max_actions=7))
    session.reset("q")
    empty = browsing_regex(session)
    assert re.fullmatch(empty, "Search crows")
    late = web.session(config=SessionConfig(max_actions=3))
    late.reset("Do crows recognise faces?")
    forced_search = browsing_regex(late)  # no quote, few actions, nothing to click
    assert re.fullmatch(forced_search, "Search crows recognise faces")
    assert not re.fullmatch(forced_search, "Search 1.2.3.4 unrelated")
    for impossible in ("Clicked on link 0", "Back", "Quote: anything", "End: Answer", "Top"):
        assert not re.fullmatch(empty, impossible), impossible
    await session.step("Search crow")
    on_results = browsing_regex(session)
    assert re.fullmatch(on_results, "Clicked on link 0")
    assert not re.fullmatch(on_results, "Clicked on link 99")
    assert not re.fullmatch(on_results, "Quote: Crows are birds of the genus Corvus.")
    await session.step("Clicked on link 0")
    on_page = browsing_regex(session)
    assert re.fullmatch(on_page, "Back")
    assert re.fullmatch(on_page, "Quote: Crows are birds of the genus Corvus.")
    assert not re.fullmatch(on_page, "Quote: words that are not on the page")
    # Four actions left and no quote yet: only quoting is offered, so the episode can answer.
    await session.step("Top")
    assert session.actions_left == 4
    forced = browsing_regex(session)
    assert forced.startswith("Quote: ")
    assert re.fullmatch(forced, "Quote: Crows are birds of the genus Corvus.")
    await session.step("Quote: Crows are birds of the genus Corvus.")
    assert browsing_regex(session) != "End: Answer"  # free again: it has a quote
    await session.step("Top")
    await session.step("Top")
    assert browsing_regex(session) == "End: Answer"  # the last action ends with an answer
    # The engine compiles a character class bounded to n into n states, each with its token
    # mask (~1 s for the old {1,100} query at every step): free text is unbounded.
    bounded_text = re.compile(r"\]\{\d+,(\d+)\}")
    answer = answer_regex([quoted("Crows are birds."), quoted("Ravens too.")])
    for grammar in (empty, forced_search, on_results, on_page, forced, answer):
        assert bounded_text.findall(grammar) == [], grammar
    assert re.fullmatch(answer, "Crows are birds [1] and ravens too [2].")
    assert not re.fullmatch(answer, "No citation at all, just prose.")
    assert not re.fullmatch(answer, "Dangling citation here [3].")


async def test_a_sentence_quoted_cut_short_is_not_offered_again(web: Web) -> None:
    """A Quote cut at the command's token budget holds the sentence's opening; the browser
    refuses the same cut again, so the grammar no longer offers the sentence."""
    from webgpt.agent.grammar import browsing_regex

    session = web.session(config=SessionConfig(max_actions=10))
    session.reset("Do crows recognise faces?")
    await session.step("Search crow")
    await session.step("Clicked on link 0")
    sentence = "Crows can recognise individual human faces and remember them for years."
    assert re.fullmatch(browsing_regex(session), f"Quote: {sentence}")
    await session.step("Quote: Crows can recognise individual human faces")  # cut short
    assert not re.fullmatch(browsing_regex(session), f"Quote: {sentence}")
    assert re.fullmatch(browsing_regex(session), "Quote: Crows are birds of the genus Corvus.")


async def test_garbage_commands_are_invalid_actions_and_the_episode_ends(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    script.faults = ["garbage"] * 5
    agent = Agent(web, policy, episode=EpisodeConfig(guided=False))
    result = await agent.answer("q", max_actions=5)
    assert result.answer is None
    [candidate] = result.candidates
    assert candidate.end_reason == "action_limit" and candidate.actions == 5


async def test_a_server_that_ignores_the_grammar_gets_no_command_outside_it_executed(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    """The scripted server answers every step with its own command, as a server that drops
    `structured_outputs` does: what the grammar would not have admitted is refused by the
    session, said in the next observation and in the trace, and the episode goes on."""
    real = CROW_EPISODE[2]
    refused = {
        "End: Answer": "needs a quote",
        "Back": "no page to go back to",
        "Clicked on link 77": "no link 77",
        "Quote: Crows were never seen near people.": "not on the page",  # made up
        real: "quoted already",
    }
    script.commands = [
        "End: Answer",
        "Back",
        CROW_EPISODE[0],
        "Clicked on link 77",
        CROW_EPISODE[1],
        "Quote: Crows were never seen near people.",
        real,
        real,
        "End: Answer",
    ]
    answer = "Crows can recognise individual human faces and remember them for years [1]."
    script.answers = [answer]
    events: list[TraceEvent] = []

    async def collect(event: TraceEvent) -> None:
        events.append(event)

    agent = Agent(web, policy, episode=EpisodeConfig(question_kind=READS_FACTS))
    result = await agent.answer("Do crows recognise faces?", emit=collect)

    assert result.answer == answer
    assert [r.extract for r in result.references] == [real.removeprefix("Quote: ")]
    [candidate] = result.candidates
    assert candidate.invalid_actions == len(refused) and candidate.end_reason == "answer"
    browsing = [r for r in script.requests if not r["stream"]]
    actions = [e for e in events if e.type == "action"]
    invalid = [
        (a, r) for a, r in zip(actions, browsing, strict=True) if a.event.type == "invalid_action"
    ]
    assert len(invalid) == len(refused)
    for (action, request), (command, why) in zip(invalid, refused.items(), strict=True):
        assert action.command == command and why in action.event.reason  # type: ignore[union-attr]
        assert not re.fullmatch(request["structured_outputs"]["regex"], command)
    after = [r["prompt"] for r in browsing[1:]]  # each refusal is in the next observation
    for action, _ in invalid:
        assert any(f"Refused: {action.event.reason}" in prompt for prompt in after)  # type: ignore[union-attr]


def test_dangling_citations_are_removed_and_reported() -> None:
    assert check_citations("Crows [1] and ravens [3] and owls [0].", 2) == (
        "Crows [1] and ravens and owls.",
        [0, 3],
    )
    assert check_citations("Fine [1][2].", 2) == ("Fine [1][2].", [])


async def test_unguided_answer_with_dangling_citation(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    script.commands = list(CROW_EPISODE)
    script.answers = ["Crows know faces [1] [4]."]
    result = await Agent(web, policy, episode=EpisodeConfig(guided=False)).answer("q")
    assert result.answer == "Crows know faces [1]."
    assert result.candidates[0].dangling_citations == [4]


@pytest.mark.parametrize(
    ("drafted", "served"),
    [
        ("Crows know faces [1] [4].", "Crows know faces [1]."),  # a citation of no quote
        (decline_answer("What eats crows?")[:-1] + " [1].", decline_answer("What eats crows?")),
    ],
)
async def test_citations_removed_from_the_draft_are_named_in_the_trace(
    web: Web, policy: OpenAIPolicy, script: Script, drafted: str, served: str
) -> None:
    """What the policy wrote is not what is served: the trace and shaped_by say so, and the
    eval's share of unedited answers counts it edited."""
    script.commands, script.answers = list(CROW_EPISODE), [drafted]
    events: list[TraceEvent] = []
    config = EpisodeConfig(guided=False)
    question = "What eats crows?"
    result = await run_episode(0, web.session(), policy, question, config, collect_into(events))
    assert result.answer == served
    assert result.shaped_by == ["citations_removed"]
    assert [e.part for e in events if e.type == "shaped"] == ["citations_removed"]  # type: ignore[union-attr]


class FixedJudge:
    """A decline judgment that scores every answer 0 and the decline a fixed score, and
    keeps what it read."""

    name = "fixed-judge"

    def __init__(self, decline_score: float) -> None:
        self.decline_score = decline_score
        self.read: list[ScoredAnswer] = []

    async def score(self, answers: Sequence[ScoredAnswer]) -> list[float]:
        self.read += answers
        return [self.decline_score if is_declined(a.answer) else 0.0 for a in answers]

    async def aclose(self) -> None:
        pass


async def test_a_decline_judgment_serves_the_decline_where_it_outscores_the_answer(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    """Under a decline judgment the policy may only draft a cited answer; the judge reads it
    and the decline from the same answer prompt, and the decline is served where its score
    passes the answer's by more than the margin, named in the trace."""
    question = "Which crow won the 2031 Tour de France?"
    outcomes = {}
    for decline_score in (0.4, 0.6):
        script.commands, script.requests = list(CROW_EPISODE), []
        script.answers = ["Crows are corvids [1]."]
        events: list[TraceEvent] = []
        judge = FixedJudge(decline_score)
        config = EpisodeConfig(grounded_declines=False, decline_judge=judge, judge_margin=0.5)
        result = await run_episode(0, web.session(), policy, question, config, collect_into(events))
        [answering] = [r for r in script.requests if r.get("stream")]
        assert not re.fullmatch(
            answering["structured_outputs"]["regex"], decline_answer(question) + "■"
        )
        assert [(a.answer_prompt, a.answer) for a in judge.read] == [
            (result.answer_prompt, "Crows are corvids [1]."),
            (result.answer_prompt, decline_answer(question)),
        ]
        assert result.judgment == (0.0, decline_score)
        outcomes[decline_score] = (result, [e for e in events if e.type == "shaped"])

    kept, shaped = outcomes[0.4]
    assert kept.answer == "Crows are corvids [1]." and not kept.declined and shaped == []
    declined, shaped = outcomes[0.6]
    assert declined.answer == decline_answer(question) and declined.references == []
    assert declined.shaped_by == ["judged_decline"]
    assert [(e.part, e.detail) for e in shaped] == [("judged_decline", "answer 0.00, decline 0.60")]  # type: ignore[union-attr]


async def test_the_answer_grammar_offers_a_decline_beside_a_cited_answer(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    """With no decline judgment, grounded decline or evidence margin deciding, the policy
    chooses between a cited answer and the decline as it samples its answer."""
    script.commands = list(CROW_EPISODE)
    await run_episode(0, web.session(), policy, "Can crows count?", EpisodeConfig())
    [answering] = [r for r in script.requests if r.get("stream")]
    assert re.fullmatch(answering["structured_outputs"]["regex"], decline_answer("q") + "■")
    assert re.fullmatch(answering["structured_outputs"]["regex"], "Crows count [1].■")


async def test_best_of_n_needs_a_scorer(web: Web, policy: OpenAIPolicy) -> None:
    with pytest.raises(ConfigurationError, match="reward model"):
        await Agent(web, policy).answer("q", n=4)
    with pytest.raises(ConfigurationError, match="empty"):
        await Agent(web, policy).answer("   ")


async def test_best_of_n_picks_the_top_scored_answer(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    # Three episodes interleave; the oracle gives each the command its state needs.
    script.oracle_quote = "Crows are birds of the genus Corvus."
    script.answers = ["Short [1].", "A much longer answer about crows [1].", "Medium one [1]."]
    result = await Agent(web, policy, scorer=LengthScorer()).answer("crow corvus", n=3)
    rewards = sorted(c.reward for c in result.candidates if c.reward is not None)
    assert len(rewards) == 3
    assert result.answer == "A much longer answer about crows [1]."
    assert result.candidates[result.best].reward == rewards[-1]  # type: ignore[index]
    assert result.usage.pages_fetched == 1  # three episodes, one shared fetch
    assert result.usage.page_cache_hits == 2
    assert result.versions["reward"] == "length-scorer"


async def test_an_unexpected_failure_in_one_episode_cancels_its_siblings(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    script.oracle_quote = None
    script.default_command = "Top"  # endless browsing: only cancellation stops them
    script.delay_s = 0.05

    async def emit(event: TraceEvent) -> None:
        if event.episode == 1 and len(script.requests) > 6:
            raise RuntimeError("the trace consumer broke")

    with pytest.raises(RuntimeError, match="consumer broke"):
        await Agent(web, policy, scorer=LengthScorer()).answer(
            "crow corvus", n=3, max_actions=100, emit=emit
        )
    # A request already on the wire at the cancellation may still reach the fake server (its
    # own thread); after that the count must stay still. A sibling still browsing calls every
    # ~0.05 s, so it never lets the count rest for 0.3 s.
    deadline = time.monotonic() + 10
    seen = -1
    while (count := len(script.requests)) != seen:
        assert time.monotonic() < deadline, "sibling episodes kept calling the policy"
        seen = count
        await asyncio.sleep(0.3)
    await asyncio.sleep(0.5)
    assert len(script.requests) == seen, "sibling episodes kept calling the policy"


async def test_a_policy_failure_ends_one_episode_as_an_episode_error_and_the_others_go_on(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    script.oracle_quote = "Crows are birds of the genus Corvus."
    script.faults = ["400"]  # the first policy call, whichever episode makes it
    events: list[TraceEvent] = []

    async def emit(event: TraceEvent) -> None:
        events.append(event)

    result = await Agent(web, policy, scorer=LengthScorer()).answer("crow corvus", n=2, emit=emit)
    failed = [e for e in events if e.type == "episode_error"]
    assert len(failed) == 1 and "maximum model length" in failed[0].message  # type: ignore[union-attr]
    assert result.answer is not None
    answered = [c for c in result.candidates if c.answer]
    assert len(answered) == 1 and answered[0].episode != failed[0].episode


async def test_policy_failure_in_every_episode_raises(
    web: Web, policy: OpenAIPolicy, script: Script
) -> None:
    script.faults = ["400"]
    with pytest.raises(PolicyError, match="maximum model length"):
        await Agent(web, policy).answer("q")


def test_an_answer_is_free_text_citing_collected_quotes_and_its_defects_are_caught_after() -> None:
    from webgpt.agent.degenerate import degeneracy
    from webgpt.agent.grammar import MAX_QUOTE_CHARS, answer_regex

    webster = quoted("Noah Webster (October 16, 1758 – May 28, 1843) was a lexicographer.")
    grammar = answer_regex([webster])
    assert re.fullmatch(grammar, "x" * MAX_QUOTE_CHARS + " [1].")  # a whole quote sentence
    assert re.fullmatch(grammar, "Noah Webster was born on October 16, 1758 [1].")
    assert not re.fullmatch(grammar, "Noah Webster was born in 1758 [2].")  # no quote 2
    assert not re.fullmatch(grammar, "Noah Webster was born in 1758.")  # cites nothing
    assert not re.fullmatch(grammar, "See [the page] [1].")  # brackets are citations only
    assert grammar == answer_regex([quoted("Crows are birds.")])  # compiled once per count
    # What the grammar no longer bounds is degenerate, and gets the one retry: a sentence
    # the token budget cuts before its citation, a run of citations, a run-on after the
    # last one (what small policies wrote before they were trained on whole sentences).
    question = "When was Noah Webster born?"
    assert degeneracy("Noah Webster was born in the year of", question) == "cut"
    assert degeneracy("Noah Webster was born in 1758 [1]. [1]. [1].", question) == "loop"
    assert degeneracy('json.dumps")) [1].to_json() (json.dumps) — dumps JSON', question) == "cut"


def test_a_sentence_too_long_to_quote_whole_is_cut_at_a_clause() -> None:
    from webgpt.agent.grammar import MAX_QUOTE_CHARS, quotable

    clauses = [
        "The old harbour town grew from a fishing village into a trading port for wool",
        " timber and salt over two centuries of slow and uneven growth along the coast",
        " while its merchants built warehouses, a customs house and a stone quay, roughly",
        " so that by the end of that time it was among the busiest ports of the region and"
        " one of the richest towns of the whole kingdom.",
    ]
    sentence = ",".join(clauses)
    assert len(sentence) > MAX_QUOTE_CHARS
    assert quotable(sentence) == ",".join(clauses[:3])
    # no clause boundary in its second half: cut at a word
    words = quotable("word " * 80)
    assert words is not None and len(words) <= MAX_QUOTE_CHARS and words.endswith("word")
    assert quotable("A short sentence fits.") == "A short sentence fits."


@pytest.mark.parametrize(
    ("paragraph", "sentences"),
    [
        ("Use a tool, e.g. grep. Then stop.", ["Use a tool, e.g. grep.", "Then stop."]),
        ("It opens at 9 a.m. daily, i.e. early.", ["It opens at 9 a.m. daily, i.e. early."]),
        ("J. R. R. Tolkien wrote it. He died.", ["J. R. R. Tolkien wrote it.", "He died."]),
        ("Dr. Odo lives on St. Mary Street.", ["Dr. Odo lives on St. Mary Street."]),
        ("See Smith et al. for more. And the U.S. Army.",
         ["See Smith et al. for more.", "And the U.S. Army."]),
        # Roman numerals and "etc." end sentences
        ("After World War I. Then peace.", ["After World War I.", "Then peace."]),
        ("Lists, dicts, etc. The rest.", ["Lists, dicts, etc.", "The rest."]),
        ("Is it? Yes! It is.", ["Is it?", "Yes!", "It is."]),
    ],
)  # fmt: skip
def test_a_paragraph_is_split_into_sentences_but_not_at_an_abbreviation(
    paragraph: str, sentences: list[str]
) -> None:
    from webgpt.agent.grammar import MIN_QUOTE_CHARS, quotable_sentences, split_sentences

    assert split_sentences(paragraph) == sentences
    quotable = [s for s in sentences if len(s) >= MIN_QUOTE_CHARS]
    assert quotable_sentences([paragraph]) == quotable
