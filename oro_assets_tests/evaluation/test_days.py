"""The multi-day stage table: means and ranges over days, paired changes, the above-base test."""

import pytest

from oro_assets.evaluation.days import DayStage, markdown, paired_delta_interval, stage_table


def _day(day: str, base: int, sft: int, n: int = 100) -> dict[str, DayStage]:
    return {"base": DayStage(day, "base", {f"p{i}": i < base for i in range(n)}),
            "sft": DayStage(day, "sft", {f"p{i}": i < sft for i in range(n)})}


def test_mean_range_and_change_over_the_stage_before():
    days = {"d1": _day("d1", 0, 30), "d2": _day("d2", 2, 20), "d3": _day("d3", 1, 25)}
    table = {row["stage"]: row for row in stage_table(days)}
    sft = table["sft"]
    assert sft["asr_mean"] == pytest.approx(0.25)
    assert (sft["asr_min"], sft["asr_max"]) == (pytest.approx(0.20), pytest.approx(0.30))
    assert sft["vs"] == "base" and sft["delta"] == pytest.approx(0.24)
    assert 0.18 < sft["delta_low"] < 0.24 < sft["delta_high"] < 0.30
    assert sft["above_base_every_day"] is True
    assert "| sft | **25.0%** (20.0–30.0)" in markdown(list(table.values()))


def test_a_day_where_the_intervals_overlap_is_not_above_the_base():
    days = {"d1": _day("d1", 0, 30), "d2": _day("d2", 10, 14)}
    assert {r["stage"]: r for r in stage_table(days)}["sft"]["above_base_every_day"] is False


def test_no_change_has_an_interval_around_zero():
    same = [({f"p{i}": i % 3 == 0 for i in range(90)}, {f"p{i}": i % 3 == 0 for i in range(90)})]
    assert paired_delta_interval(same) == (0.0, 0.0, 0.0)


def test_a_day_reads_the_greedy_run_on_every_holdout_problem_when_there_is_one(tmp_path):
    from oro_assets.evaluation.days import load_day
    from oro_assets.evaluation.report import HOLDOUT_GREEDY_DIR, EvalResult

    def result(solved: dict[str, bool]) -> EvalResult:
        rows = [{"problem_id": p, "category": "Product", "greedy_success": ok} for p, ok in solved.items()]
        return EvalResult("sft", "sft", "r", {}, rows, None, None)

    result({"a": True, "b": False}).save(tmp_path / "eval" / "sft")  # the stratified sample
    result({"a": True, "b": True, "c": False, "d": True}).save(tmp_path / "eval" / "sft" / HOLDOUT_GREEDY_DIR)
    result({"a": False}).save(tmp_path / "eval" / "base")  # no hold-out run: the sample
    day = load_day(tmp_path, "d1")
    assert dict(day["sft"].solved) == {"a": True, "b": True, "c": False, "d": True}
    assert dict(day["base"].solved) == {"a": False}
    assert len(load_day(tmp_path, "d1", category=None)["sft"].solved) == 2, "all categories: the sample"
