import json
import math
from pathlib import Path

import pytest
import torch

from webgpt.reward.data import group_by_question, load_comparisons, parse_row
from webgpt.reward.errors import DataError
from webgpt.reward.model import pairwise_loss


def test_pairwise_loss_on_hand_computed_values() -> None:
    rewards = torch.tensor([1.0, 0.0])
    pairs = torch.tensor([[0, 1]])
    sigmoid = 1 / (1 + math.exp(-1))  # σ(r_a - r_b) with a margin of 1
    expected = {
        1.0: -math.log(sigmoid),
        0.0: -math.log(1 - sigmoid),
        0.5: -(0.5 * math.log(sigmoid) + 0.5 * math.log(1 - sigmoid)),  # a tie: soft label
    }
    for label, value in expected.items():
        loss = pairwise_loss(rewards, pairs, torch.tensor([label]))
        assert float(loss) == pytest.approx(value, abs=1e-6)
    assert expected[0.5] == pytest.approx(0.8132616, abs=1e-6)
    # A tie is best served by equal rewards: its loss is minimal (log 2) at a zero margin.
    tie_at_zero = pairwise_loss(torch.tensor([0.3, 0.3]), pairs, torch.tensor([0.5]))
    assert float(tie_at_zero) == pytest.approx(math.log(2), abs=1e-6)
    assert float(tie_at_zero) < expected[0.5]


def test_webgpt_schema_scores_become_probabilities() -> None:
    row = {
        "question": {"full_text": "Why is the sky blue?", "dataset": "eli5", "id": "x"},
        "quotes_0": {"title": ["Rayleigh scattering"], "extract": ["Shorter wavelengths scatter."]},
        "answer_0": "Because of scattering [1].",
        "tokens_0": [1, 2],
        "score_0": 0.5,
        "quotes_1": {"title": [], "extract": []},
        "answer_1": "No idea.",
        "tokens_1": [3],
        "score_1": -0.5,
    }
    comparison = parse_row(row)
    assert comparison.label == 0.75
    assert comparison.text_a == (
        "Why is the sky blue?■[1] Rayleigh scattering\n\nShorter wavelengths scatter.■"
        "Because of scattering [1]."
    )
    assert comparison.text_b == "Why is the sky blue?■No idea."
    assert parse_row({**row, "score_0": 0.0, "score_1": 0.0}).label == 0.5


def test_bad_rows_are_reported_with_line_numbers_and_skipped(tmp_path: Path) -> None:
    good = {
        "question": "q",
        "a": {"answer": "x [1]", "quotes": [{"title": "t", "extract": "e"}]},
        "b": {"answer": "y"},
        "preference": "b",
    }
    path = tmp_path / "c.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps(good),
                "{not json",
                json.dumps({**good, "preference": "maybe"}),
                json.dumps(
                    {"question": "q", "answer_0": "a", "answer_1": "b", "score_0": 2, "score_1": -2}
                ),
                json.dumps([1, 2]),
                "",
                json.dumps({**good, "a": {"answer": ""}}),
                json.dumps(good),
                json.dumps({**good, "label": 0.25}),  # a graded comparison's soft label
                json.dumps({**good, "label": 0.75}),
                json.dumps({**good, "label": "0.25"}),
            ]
        )
    )
    comparisons, report = load_comparisons([path])
    assert len(comparisons) == 3 and report.used == 3
    assert [line for _, line, _ in report.skipped] == [2, 3, 4, 5, 7, 10, 11]
    summary = report.summary()
    assert "3 comparisons used, 7 rows skipped" in summary
    assert f"{path}:3: preference must be one of a, b, tie" in summary
    assert "sum to 0" in summary
    assert f"{path}:10: label 0.75 contradicts preference 'b'" in summary
    assert f"{path}:11: label must be a number in [0, 1]" in summary
    assert [c.label for c in comparisons] == [0.0, 0.0, 0.25]


def test_nothing_usable_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("{}\n")
    with pytest.raises(DataError, match="no usable comparisons"):
        load_comparisons([empty])
    with pytest.raises(DataError, match="cannot read"):
        load_comparisons([tmp_path / "missing.jsonl"])


def test_comparisons_of_a_question_share_texts() -> None:
    rows = [
        parse_row({"question": "q", "a": {"answer": a}, "b": {"answer": b}, "preference": p})
        for a, b, p in [("x", "y", "a"), ("y", "z", "tie"), ("x", "z", "b"), ("x", "x", "a")]
    ]
    [group] = group_by_question(rows)
    assert group.texts == ["q■x", "q■y", "q■z"]
    assert group.pairs == [(0, 1, 1.0), (1, 2, 0.5), (0, 2, 0.0)]  # the self-pair is dropped


@pytest.mark.parametrize(
    "sequences",
    [
        # a ranking's texts: one opening (question, page title), sentences of many lengths
        [[5, 9, 11, 12, 13, 14, 15, 16, 17, 18, 3 + n, *range(30, 30 + n)] for n in range(7)],
        [[5, 9, 11], [6, 9, 11, 12, 13], [7]],  # nothing shared
        [[5, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19]],  # one text
        [[5, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19]] * 3,  # the same text thrice
    ],
)
def test_scoring_sequences_shortest_first_with_a_shared_opening_matches_the_forward_pass(
    tmp_path: Path, sequences: list[list[int]]
) -> None:
    from transformers import AutoModel

    from tests.reward.tiny import build_tiny_backbone
    from webgpt.reward.model import RewardModel

    model = RewardModel(AutoModel.from_pretrained(build_tiny_backbone(tmp_path))).eval()
    with torch.no_grad():
        one_by_one = [
            float(model(torch.tensor([s]), torch.ones((1, len(s)), dtype=torch.long)))
            for s in sequences
        ]
        batched = model.score_sequences(sequences, batch_size=3).tolist()
    assert batched == pytest.approx(one_by_one, abs=1e-5)
