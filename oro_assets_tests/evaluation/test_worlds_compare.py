"""benchmarks/worlds_compare.py: one recipe's worlds against another's, paired by problem, seeds averaged."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from worlds_compare import compare_roots  # noqa: E402


def _eval(data: Path, stage: str, outcomes: dict[str, tuple[str, bool, int]]) -> None:
    path = data / "reports" / "eval" / stage
    path.mkdir(parents=True)
    rows = [{"problem_id": pid, "category": cat, "greedy_success": ok, "n": 8, "c": c}
            for pid, (cat, ok, c) in outcomes.items()]
    (path / "eval_result.json").write_text(json.dumps({
        "stage": stage, "policy_name": "p", "run_id": "r", "metrics": {}, "rows": rows, "trajectories_path": "",
        "samples_path": "", "config": {"pool": "test"}}))


def test_worlds_are_paired_by_problem_and_dr_grpo_seeds_averaged(tmp_path):
    new, old = tmp_path / "new", tmp_path / "old"
    # world a: sft gains one Voucher problem of two; world b: no change
    _eval(new / "a" / "data", "sft", {"v1": ("Voucher", True, 8), "v2": ("Voucher", False, 0)})
    _eval(old / "a" / "data", "sft", {"v1": ("Voucher", False, 0), "v2": ("Voucher", False, 0)})
    _eval(new / "b" / "data", "sft", {"p1": ("Product", True, 4)})
    _eval(old / "b" / "data", "sft", {"p1": ("Product", True, 4), "p9": ("Product", True, 8)})  # p9: old only
    # Dr. GRPO: the old recipe's seed 0 succeeds and its seed 1 fails (mean 0.5); the new recipe's one run succeeds
    _eval(new / "a" / "data", "dr_grpo", {"v1": ("Voucher", True, 8)})
    _eval(old / "a" / "data", "dr_grpo", {"v1": ("Voucher", True, 8)})
    _eval(old / "a" / "dr_grpo-seed1" / "data", "dr_grpo", {"v1": ("Voucher", False, 0)})
    rows = {(r["stage"], r["metric"]): r for r in compare_roots(new, old, ["a", "b"])}
    sft = rows[("sft", "all categories greedy")]
    assert sft["worlds"] == 2 and sft["new_per_world"] == [50.0, 100.0]
    assert sft["delta"] == pytest.approx(25.0)  # world a +50 (1 of 2 problems), world b 0; p9 is not paired
    assert rows[("sft", "Voucher greedy")]["worlds"] == 1 and rows[("sft", "Voucher greedy")]["delta"] == 50.0
    grpo = rows[("dr_grpo", "all categories greedy")]
    assert grpo["old"] == 50.0 and grpo["new"] == 100.0 and grpo["delta"] == pytest.approx(50.0)
    assert ("kto", "all categories greedy") not in rows  # no stage evaluated on either side, no row
