import json

import judge_fixtures as fx
import pytest

from oro_assets.judge.base import GATE_OF_SCORE
from oro_assets.judge.evidence import TraceInputError
from oro_assets.judge.rule import RuleConfig, RuleJudge


@pytest.mark.parametrize("builder", fx.ALL_BUILDERS, ids=lambda b: b.__name__)
def test_designed_gate_reached(builder):
    row, designed = builder()
    result = RuleJudge().judge(row)
    assert result.available and result.score == designed
    assert result.gate == GATE_OF_SCORE[designed]
    assert result.judge_id == "rule" and not result.cached and result.tokens == 0


@pytest.mark.parametrize("builder", [fx.vague, fx.datum, fx.compare], ids=lambda b: b.__name__)
def test_parsed_columns_equal_string_columns(builder):
    as_str, _ = builder()
    parsed, _ = builder(as_strings=False)
    assert isinstance(parsed["steps"], list) and isinstance(as_str["steps"], str)
    assert RuleJudge().judge(as_str) == RuleJudge().judge(parsed)


def test_rows_without_steps_column_are_rebuilt_from_messages():
    row, _ = fx.compare(as_strings=False)
    del row["steps"]
    # without proxy evidence there is no verified inference: gate 1 fails, as ORO's judge would say
    assert RuleJudge().judge(row).score == 0.1


def test_explanations_name_each_gate_in_order():
    result = RuleJudge().judge(fx.datum()[0])
    text = result.explanation
    assert text.index("Gate 1 passed") < text.index("Gate 2 passed") < text.index("Gate 3 passed") < text.index(
        "Gate 4 failed")


def test_completion_tokens_threshold_is_inclusive_and_estimated_when_missing():
    row, _ = fx.compare(as_strings=False)
    for step in row["steps"]:
        for inf in step["inference"]:
            inf["completion_tokens"] = 29
    assert RuleJudge().judge(row).score == 0.1
    row["steps"][2]["inference"][0]["completion_tokens"] = 30
    assert RuleJudge().judge(row).score == 0.9
    # usage missing: 4 chars a token from the recorded body (120 chars -> 30 tokens)
    row["steps"][2]["inference"][0].update(completion_tokens=None, content="x" * 120)
    assert RuleJudge().judge(row).score == 0.9
    row["steps"][2]["inference"][0].update(content="x" * 119)
    assert RuleJudge().judge(row).score == 0.1


def test_failed_inference_calls_do_not_count():
    row, _ = fx.compare(as_strings=False)
    for step in row["steps"]:
        for inf in step["inference"]:
            inf["status_code"] = 500
    assert RuleJudge().judge(row).score == 0.1
    for step in row["steps"]:  # any 2xx is a success, as the structural filter reads it
        for inf in step["inference"]:
            inf["status_code"] = 201
    assert RuleJudge().judge(row).score == 0.9


def test_datum_must_come_from_an_earlier_step():
    # the compare trace cites ids only after they were returned; moving the citing thought before the
    # search makes it ungrounded
    row, _ = fx.compare(as_strings=False)
    row["steps"][0]["think"], row["steps"][2]["think"] = row["steps"][2]["think"], "Recommend."
    row["steps"][1]["think"] = "Next."
    assert RuleJudge().judge(row).score == 0.3


def test_two_candidates_without_a_reason_stay_at_gate_4():
    row, _ = fx.compare(as_strings=False)
    row["steps"][2]["think"] = "Found 3350592664 and 4410021907. Recommending 3350592664 now."
    assert RuleJudge().judge(row).score == 0.7


def test_thinking_past_what_oro_shows_the_judge_earns_nothing():
    # the comparing thought reaches gate 4; pushed past the 1,000 characters ORO's judge reads, it is unseen
    row, _ = fx.compare(as_strings=False)
    assert RuleJudge().judge(row).score == 0.9
    thought = row["steps"][2]["think"]
    row["steps"][2]["think"] = "Let me think this through carefully. " * 30 + thought
    assert len(row["steps"][2]["think"]) - len(thought) > 1000
    assert RuleJudge().judge(row).score < 0.9


def test_config_hash_is_stable_and_config_sensitive():
    assert RuleJudge().config_hash == RuleJudge().config_hash
    assert RuleJudge().config_hash != RuleJudge(RuleConfig(min_completion_tokens=31)).config_hash


def test_bad_input_is_a_clear_error():
    with pytest.raises(TraceInputError, match="messages"):
        RuleJudge().judge({"messages": "{not json", "steps": "[]"})
    with pytest.raises(TraceInputError):
        RuleJudge().judge({"messages": json.dumps({"a": 1}), "steps": "[]"})
    with pytest.raises(TraceInputError):
        RuleJudge().judge(["not", "a", "dict"])
