"""One action limit for an answer that names none, in every interface and in `webgpt eval`:
what is served is what is measured (agent.episode.ANSWER_MAX_ACTIONS)."""

from webgpt.agent.answer import Agent
from webgpt.agent.episode import ANSWER_MAX_ACTIONS
from webgpt.service.cli import build_parser
from webgpt.service.protocol import AnswerRequest


def test_every_interface_answers_under_the_limit_eval_measures_at() -> None:
    parser = build_parser()
    measured = parser.parse_args(["eval", "--questions", "q.jsonl", "--policy", "default"])
    answered = parser.parse_args(["answer", "Who painted the Mona Lisa?"])
    assert measured.max_actions == answered.max_actions == ANSWER_MAX_ACTIONS
    assert AnswerRequest(question="Who painted the Mona Lisa?").max_actions == ANSWER_MAX_ACTIONS
    agent = Agent(web=None, policy=None)  # type: ignore[arg-type]  # only its defaults are read
    assert agent.session.max_actions == ANSWER_MAX_ACTIONS
