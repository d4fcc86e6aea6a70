"""The stage table over worlds: means over worlds, clustered intervals, paired changes, one pool per table."""

import pytest

from oro_assets.evaluation.report import HOLDOUT_GREEDY_DIR, EvalResult
from oro_assets.evaluation.worlds import (
    MixedPoolsError,
    WorldStage,
    clustered_interval,
    load_world,
    markdown,
    replicated_interval,
    stage_table,
)


def _world(world: str, base: int, sft: int, n: int = 100, pool: str = "test") -> dict[str, WorldStage]:
    return {"base": WorldStage(world, "base", {f"{world}p{i}": i < base for i in range(n)}, pool=pool),
            "sft": WorldStage(world, "sft", {f"{world}p{i}": i < sft for i in range(n)}, pool=pool)}


def test_mean_over_worlds_and_the_change_over_the_stage_before():
    worlds = {"w1": _world("w1", 0, 30), "w2": _world("w2", 2, 20), "w3": _world("w3", 1, 25)}
    sft = {row["stage"]: row for row in stage_table(worlds)}["sft"]
    assert sft["asr"]["mean"] == pytest.approx(0.25)
    assert sft["asr"]["by_world"] == {"w1": 0.30, "w2": 0.20, "w3": 0.25}
    change = sft["asr_change"]
    assert change["vs"] == "base" and change["delta"] == pytest.approx(0.24)
    assert 0.1 < change["low"] < 0.24 < change["high"] < 0.35 and change["excludes_zero"]
    assert sft["pool"] == "test"
    assert "| sft | **25.0% (" in markdown(stage_table(worlds), "Product")


def test_the_interval_widens_with_the_spread_between_worlds():
    """Same pooled successes (60 of 300), once spread evenly and once concentrated in one world: a pooled
    interval could not tell them apart; the clustered one must be wider for the uneven worlds."""
    even = [[1.0] * 20 + [0.0] * 80] * 3
    uneven = [[1.0] * 60 + [0.0] * 40, [0.0] * 100, [0.0] * 100]
    _, lo_e, hi_e = clustered_interval(even)
    _, lo_u, hi_u = clustered_interval(uneven)
    assert (hi_u - lo_u) > 2 * (hi_e - lo_e)
    assert clustered_interval(uneven)[0] == pytest.approx(0.2)


def test_one_world_reduces_to_the_problem_bootstrap_and_no_problem_is_an_error():
    est, lo, hi = clustered_interval([[1.0] * 50 + [0.0] * 50])
    assert est == 0.5 and 0.38 < lo < 0.45 and 0.55 < hi < 0.62
    with pytest.raises(ValueError, match="nothing to estimate"):
        clustered_interval([[], []])


def test_a_table_over_two_pools_is_refused():
    worlds = {"w1": _world("w1", 0, 30, pool="dev"), "w2": _world("w2", 0, 30, pool="test")}
    with pytest.raises(MixedPoolsError, match="dev.*test"):
        stage_table(worlds)


def test_pass_at_k_comes_from_the_samples():
    ws = WorldStage("w", "sft", {"a": True, "b": False}, {"a": (8, 8), "b": (8, 1), "c": (2, 2)})
    assert ws.pass_values(1) == {"a": 1.0, "b": 0.125, "c": 1.0}
    assert ws.pass_values(8) == {"a": 1.0, "b": 1.0}, "a problem with fewer than k samples has no pass@k"


def _result(stage: str, rows: list[dict], pool: str | None) -> EvalResult:
    return EvalResult(stage, stage, "r", {}, rows, None, None, config={"pool": pool})


def test_a_world_reads_greedy_from_the_holdout_run_and_pass_at_k_from_the_sample(tmp_path):
    sample = [{"problem_id": "a", "category": "Product", "greedy_success": True, "n": 8, "c": 3},
              {"problem_id": "s", "category": "Shop", "greedy_success": False, "n": 8, "c": 0}]
    _result("sft", sample, "test").save(tmp_path / "reports" / "eval" / "sft")
    holdout = [{"problem_id": p, "category": "Product", "greedy_success": ok} for p, ok in
               {"a": True, "b": False, "c": True}.items()]
    _result("sft", holdout, "test").save(tmp_path / "reports" / "eval" / "sft" / HOLDOUT_GREEDY_DIR)
    world = load_world(tmp_path, "w1")
    assert dict(world["sft"].solved) == {"a": True, "b": False, "c": True}
    assert dict(world["sft"].samples) == {"a": (8, 3)}
    every = load_world(tmp_path, "w1", category=None)["sft"]
    assert dict(every.solved) == {"a": True, "s": False}, "all categories: the stratified sample"
    assert every.pool == "test"
    shop = load_world(tmp_path, "w1", category="Shop")["sft"]
    assert dict(shop.solved) == {"s": False}, "a category the hold-out run lacks: from the stratified sample"
    assert dict(shop.samples) == {"s": (8, 0)}


def test_a_stage_whose_runs_come_from_two_pools_is_refused(tmp_path):
    row = [{"problem_id": "a", "category": "Product", "greedy_success": True, "n": 1, "c": 1}]
    _result("sft", row, "dev").save(tmp_path / "reports" / "eval" / "sft")
    _result("sft", row, "test").save(tmp_path / "reports" / "eval" / "sft" / HOLDOUT_GREEDY_DIR)
    with pytest.raises(MixedPoolsError):
        load_world(tmp_path, "w1")


def test_sft_is_read_against_the_scaffold_arm_when_the_worlds_have_it():
    """The scaffold arm sits between base and sft: sft's change is what the curated rows add over the scaffold
    (paired on the same problems), and the arm's own change is over the base."""
    worlds = {}
    for w, (scaffold, sft) in {"w1": (20, 30), "w2": (15, 20), "w3": (18, 25)}.items():
        stages = _world(w, 0, sft)
        stages["scaffold"] = WorldStage(w, "scaffold", {f"{w}p{i}": i < scaffold for i in range(100)}, pool="test")
        worlds[w] = stages
    rows = {row["stage"]: row for row in stage_table(worlds)}
    assert [row["stage"] for row in stage_table(worlds)] == ["base", "scaffold", "sft"]
    assert rows["sft"]["asr_change"]["vs"] == "scaffold"
    assert rows["sft"]["asr_change"]["delta"] == pytest.approx((10 + 5 + 7) / 300)
    assert rows["scaffold"]["asr_change"]["vs"] == "base"


def test_an_evaluation_still_running_is_left_out(tmp_path):
    """evaluate_on_pool saves the sample part before the hold-out run and stamps the pool last: a table read while
    a world still runs leaves that stage out instead of refusing the table over a pool of None."""
    rows = [{"problem_id": "a", "category": "Product", "greedy_success": True, "n": 8, "c": 3}]
    _result("sft", rows, "test").save(tmp_path / "reports" / "eval" / "sft")
    _result("rejection_sft", rows, None).save(tmp_path / "reports" / "eval" / "rejection_sft")
    assert set(load_world(tmp_path, "w1")) == {"sft"}


def _runs(*per_run: list[float]) -> dict[str, dict[str, float]]:
    return {f"t{i}": {f"p{j}": v for j, v in enumerate(run)} for i, run in enumerate(per_run)}


def test_identical_training_runs_add_no_evidence_and_disagreeing_ones_widen_the_interval():
    """A world's training runs score the same problems: the problems are drawn once for all of them. Three copies
    of one run must give that run's interval (a bootstrap drawing problems per run would narrow it), and runs that
    disagree with the same mean must give a wider one."""
    run = [1.0] * 30 + [0.0] * 70
    worlds_one = {w: _runs(run) for w in ("a", "b", "c")}
    worlds_copied = {w: _runs(run, run, run) for w in ("a", "b", "c")}
    _, lo_one, hi_one = replicated_interval(worlds_one)
    _, lo_copied, hi_copied = replicated_interval(worlds_copied)
    # drawing problems per copy would shrink the width by about 1/sqrt(3)
    assert abs((hi_copied - lo_copied) - (hi_one - lo_one)) < 0.15 * (hi_one - lo_one)
    apart = {w: _runs([1.0] * 10 + [0.0] * 90, [1.0] * 50 + [0.0] * 50, run) for w in ("a", "b", "c")}
    est, lo, hi = replicated_interval(apart)
    assert est == pytest.approx(0.3)
    assert hi - lo > 1.5 * (hi_one - lo_one)


def test_a_table_over_training_runs_averages_them_and_pairs_each_stage_with_its_own_runs_parent():
    def run(world: str, base: int, sft: int) -> dict[str, WorldStage]:
        return _world(world, base, sft)

    worlds = {"w1": {"train-seed0": run("w1", 0, 30), "train-seed1": run("w1", 10, 20)},
              "w2": {"train-seed0": run("w2", 0, 20)}}
    sft = {row["stage"]: row for row in stage_table(worlds)}["sft"]
    assert sft["asr"]["by_world"] == {"w1": pytest.approx(0.25), "w2": pytest.approx(0.20)}
    assert sft["asr"]["runs_by_world"] == {"w1": 2, "w2": 1}
    assert sft["asr"]["mean"] == pytest.approx(0.225)
    # paired within each run: w1 +30 and +10, w2 +20 -> (20 + 20) / 2
    assert sft["asr_change"]["delta"] == pytest.approx(0.20)
    md = markdown(stage_table(worlds), "Product")
    assert "training runs, then problems" in md and "2 runs 30.0/20.0" in md
    single = stage_table({"w1": run("w1", 0, 30)})[1]["asr"]
    named = stage_table({"w1": {"train-seed0": run("w1", 0, 30)}})[1]["asr"]
    assert (single["mean"], single["low"], single["high"]) == (named["mean"], named["low"], named["high"])


def test_runs_scored_on_different_problem_sets_are_read_on_the_problems_they_share():
    """One run evaluated on every held-out problem (4 of 100 solved, none of them in the sample), the other on the
    25-problem sample: the world's mean, n and interval are all over the 25 problems both have."""
    every = {f"p{i}": i >= 96 for i in range(100)}
    sample = {f"p{i}": False for i in range(25)}
    worlds = {"w": {"train-seed0": {"dr_grpo": WorldStage("w", "dr_grpo", every, pool="test")},
                    "train-seed1": {"dr_grpo": WorldStage("w", "dr_grpo", sample, pool="test")}}}
    asr = stage_table(worlds)[0]["asr"]
    assert asr["n_by_world"] == {"w": 25}
    assert asr["by_world"] == {"w": 0.0} and asr["mean"] == 0.0
    assert "0.0% (n=25)" in markdown(stage_table(worlds), "Shop")
