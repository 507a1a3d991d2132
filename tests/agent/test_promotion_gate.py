"""The promotion gate (agent.promotion): a version worse than the serving one is refused.

The gate's decisions with an evaluation given as a plain function, then `webgpt model
promote` as an operator runs it, evaluating versions served by the scripted policy server
on the offline web: the serving version answers right, a deliberately worse one babbles.
"""

import json
import re
from datetime import datetime
from pathlib import Path

import pytest

from tests.agent.fake_policy import Script
from tests.agent.test_registry import make_adapter
from tests.learning.test_record import webgpt
from webgpt.agent.errors import ConfigurationError, PromotionRefused
from webgpt.agent.promotion import promote_gated
from webgpt.agent.registry import PROMOTIONS, Aliases, Figures, PolicyRegistry, describe
from webgpt.infra.errors import CorruptCheckpoint


def figures(
    correct: float | None,
    declined_answerable: float | None = 0.0,
    declined_unanswerable: float | None = 0.5,
    errors: int = 0,
) -> Figures:
    """The figures of evals.evaluate.PolicyReport that the gate reads (and one it does not)."""
    return {
        "questions": 40,
        "correct": correct,
        "declined_answerable": declined_answerable,
        "declined_unanswerable": declined_unanswerable,
        "errors": errors,
        "cited": 1.0,
    }


class Evaluations:
    """An evaluation by table: version -> figures, counting the versions evaluated."""

    def __init__(self, **table: Figures) -> None:
        self.table = table
        self.evaluated: list[str] = []

    def __call__(self, version: str) -> Figures:
        self.evaluated.append(version)
        return self.table[version]


@pytest.fixture
def registry(tmp_path: Path) -> PolicyRegistry:
    """v1 serving; v2 and v3 published, not promoted."""
    registry = PolicyRegistry(tmp_path / "policy")
    for version in ("v1", "v2", "v3"):
        registry.publish(make_adapter(tmp_path / version), version, base_model="base")
    registry.promote("v1")
    return registry


def test_a_version_worse_beyond_the_margin_is_refused_and_recorded(
    registry: PolicyRegistry,
) -> None:
    evaluate = Evaluations(v1=figures(0.8), v2=figures(0.7))
    with pytest.raises(PromotionRefused) as refused:
        promote_gated(registry, "v2", evaluate, margin=5, setup={"questions": "q.jsonl"})
    message = str(refused.value)
    assert "correct 70.0% against 80.0% for v1: 10.0 points worse" in message
    assert "margin of 5" in message and "--force" in message
    assert registry.aliases().current == "v1"
    assert sorted(evaluate.evaluated) == ["v1", "v2"]
    [record] = registry.promotions()
    assert (record.version, record.serving, record.outcome) == ("v2", "v1", "refused")
    assert record.figures == {"v2": figures(0.7), "v1": figures(0.8)}
    assert record.margin == 5 and record.setup == {"questions": "q.jsonl"}
    assert datetime.fromisoformat(record.at).tzinfo is not None


def test_a_version_within_the_margin_is_promoted_with_its_figures(
    registry: PolicyRegistry,
) -> None:
    evaluate = Evaluations(v1=figures(0.8), v2=figures(0.75), v3=figures(0.68))
    record = promote_gated(registry, "v2", evaluate, margin=5)  # exactly the margin: within
    assert record is not None and record.outcome == "promoted" and record.reasons == []
    assert registry.aliases() == Aliases("v2", "v1")
    assert registry.promotions()[-1].figures == {"v2": figures(0.75), "v1": figures(0.8)}
    # A wider margin lets through what the default refuses.
    with pytest.raises(PromotionRefused):
        promote_gated(registry, "v3", evaluate)
    assert promote_gated(registry, "v3", evaluate, margin=10) is not None
    assert registry.aliases().current == "v3"
    # The one serving is not evaluated against itself.
    evaluate.evaluated.clear()
    assert promote_gated(registry, "v3", evaluate) is None and evaluate.evaluated == []


@pytest.mark.parametrize(
    ("candidate", "worse"),
    [
        (figures(0.8, declined_answerable=0.3), "declined (answerable) 30.0% against 0.0%"),
        (figures(0.8, declined_unanswerable=0.1), "declined (unanswerable) 10.0% against 50.0%"),
        (figures(0.9, errors=3), "failed v2 on 3 of 40 questions"),
    ],
)
def test_more_declines_of_answerable_questions_fewer_of_unanswerable_or_errors_refuse(
    registry: PolicyRegistry, candidate: Figures, worse: str
) -> None:
    with pytest.raises(PromotionRefused, match=re.escape(worse)):
        promote_gated(registry, "v2", Evaluations(v1=figures(0.8), v2=candidate))
    assert registry.aliases().current == "v1"


def test_figures_one_side_lacks_are_not_compared_but_other_questions_are_refused(
    registry: PolicyRegistry,
) -> None:
    no_factoids = Evaluations(v1=figures(None), v2=figures(None))
    assert promote_gated(registry, "v2", no_factoids) is not None
    other_questions = Evaluations(
        v2={**figures(0.8), "questions_sha256": "a"}, v3={**figures(0.8), "questions_sha256": "b"}
    )
    with pytest.raises(PromotionRefused, match="different questions"):
        promote_gated(registry, "v3", other_questions)


def test_force_promotes_over_a_refusal_without_evaluating_again_and_is_recorded(
    registry: PolicyRegistry,
) -> None:
    evaluate = Evaluations(v1=figures(0.8), v2=figures(0.2))
    with pytest.raises(PromotionRefused):
        promote_gated(registry, "v2", evaluate, margin=5)
    evaluate.evaluated.clear()
    record = promote_gated(registry, "v2", evaluate, margin=5, force=True)
    assert evaluate.evaluated == []
    assert registry.aliases().current == "v2"
    refusal, forced = registry.promotions()
    assert record == forced and forced.outcome == "forced" and forced.forced_over == refusal.at
    assert forced.figures == refusal.figures and forced.reasons == refusal.reasons
    assert forced.margin == 5
    # Forced with no refusal to override: promoted unevaluated, and recorded as such.
    unevaluated = promote_gated(registry, "v3", evaluate, force=True)
    assert unevaluated is not None and unevaluated.outcome == "forced"
    assert unevaluated.figures == {} and unevaluated.forced_over is None
    assert evaluate.evaluated == [] and registry.aliases().current == "v3"
    listed = describe(registry).splitlines()
    assert "gate: forced" in listed[1] and "correct 20.0% vs v1 80.0%, margin 5" in listed[1]
    assert "gate: forced" in listed[2] and "not evaluated" in listed[2]


def test_with_no_serving_version_there_is_nothing_to_compare_with(tmp_path: Path) -> None:
    registry = PolicyRegistry(tmp_path / "policy")
    registry.publish(make_adapter(tmp_path / "first"), "first", base_model="base")
    evaluate = Evaluations()
    record = promote_gated(registry, "first", evaluate)
    assert record is not None and record.outcome == "ungated" and record.serving is None
    assert evaluate.evaluated == [] and registry.aliases().current == "first"
    assert "gate: ungated" in describe(registry)


def test_a_damaged_version_is_refused_before_any_evaluation(registry: PolicyRegistry) -> None:
    (registry.root / "v2" / "adapter_model.safetensors").write_bytes(b"flipped")
    evaluate = Evaluations(v1=figures(0.8), v2=figures(0.8))
    with pytest.raises(CorruptCheckpoint):
        promote_gated(registry, "v2", evaluate)
    with pytest.raises(ConfigurationError, match="between 0 and 100"):
        promote_gated(registry, "v3", evaluate, margin=-1)
    assert evaluate.evaluated == [] and registry.promotions() == []


def test_a_line_cut_short_in_the_history_is_skipped(registry: PolicyRegistry) -> None:
    promote_gated(registry, "v2", Evaluations(v1=figures(0.8), v2=figures(0.8)))
    with (registry.root / PROMOTIONS).open("a") as file:
        file.write('{"at": "2026-01-01T00:00:00+00:00", "vers')  # a crash mid-write
    assert [r.version for r in registry.promotions()] == ["v2"]
    assert promote_gated(registry, "v3", Evaluations(v2=figures(0.8), v3=figures(0.8)))
    assert [r.version for r in registry.promotions()] == ["v2", "v3"]


# -- `webgpt model promote` against versions served by the scripted policy server ----------


@pytest.mark.slow  # starts a process
def test_the_cli_refuses_a_deliberately_worse_version(
    offline_store: Path, policy_url: str, script: Script, tmp_path: Path
) -> None:
    root = tmp_path / "policy"
    registry = PolicyRegistry(root)
    for version in ("v1", "v2", "v3"):
        registry.publish(make_adapter(tmp_path / version), version, base_model="base")
        script.adapters[version] = str(root / version)  # served under its version's name
    script.garbage_models = {"v2"}  # v2 writes no command the browser takes
    questions = tmp_path / "questions.jsonl"
    rows = [
        {"question": "crow corvus", "gold_answers": ["corvids"], "split": "dev"},
        {"question": "raven corvus", "gold_answers": ["raven"], "split": "dev"},
        {"question": "crow", "gold_answers": ["corvids"], "split": "train"},
    ]
    questions.write_text("".join(json.dumps(row) + "\n" for row in rows))

    def promote(*args: str) -> tuple[int, str, str]:
        result = webgpt(
            "model", "promote", *args, "--registry", str(root), "--questions", str(questions),
            "--split", "dev", "--limit", "1", "--policy-url", policy_url,
            "--store", str(offline_store), "--max-actions", "8", home=tmp_path,
        )  # fmt: skip
        return result.returncode, result.stdout, result.stderr

    code, out, _ = promote("v1")
    assert code == 0 and "no serving version to compare v1 with" in out
    code, out, err = promote("v2")
    assert code == 1, out
    assert (
        "error: v2 is not promoted: on 1 questions it is worse than the serving version v1" in err
    )
    assert "correct 0.0% against 100.0% for v1: 100.0 points worse" in err
    assert "beyond the margin of 5" in err
    assert registry.aliases().current == "v1"
    refusal = registry.promotions()[-1]
    assert refusal.outcome == "refused" and refusal.setup["limit"] == 1
    assert refusal.setup["temperature"] == 0.0  # greedy
    assert refusal.figures["v1"]["questions"] == refusal.figures["v2"]["questions"] == 1
    # Every request of the evaluations was greedy and named the version it evaluated.
    assert {r["model"] for r in script.requests} == {"v1", "v2"}
    assert {r["temperature"] for r in script.requests} == {0.0}

    code, out, _ = promote("v2", "--force")
    assert code == 0 and f"forced over the gate's refusal of {refusal.at}" in out
    assert registry.aliases().current == "v2"
    code, out, _ = promote("v3")  # better than the babbling v2 it replaces
    assert code == 0 and "the gate passed on 1 questions, margin 5" in out
    assert "current -> v3 (previous -> v2)" in out
    assert [r.outcome for r in registry.promotions()] == [
        "ungated",
        "refused",
        "forced",
        "promoted",
    ]
    listed = webgpt("model", "list", "--registry", str(root), home=tmp_path).stdout.splitlines()
    assert "previous gate: forced" in listed[1] and "correct 0.0% vs v1 100.0%" in listed[1]
    assert "current gate: promoted" in listed[2] and "correct 100.0% vs v2 0.0%" in listed[2]
