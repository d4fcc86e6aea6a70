"""benchmarks/screen.py ``compare``: paired change of two evaluations of the same problems, per category."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from screen import compare  # noqa: E402


def _eval(path: Path, outcomes: dict[str, tuple[str, bool, int]], pool: str = "dev") -> Path:
    rows = [{"problem_id": pid, "category": cat, "greedy_success": ok, "n": 8, "c": c}
            for pid, (cat, ok, c) in outcomes.items()]
    path.mkdir(parents=True)
    (path / "eval_result.json").write_text(json.dumps({
        "stage": "sft", "policy_name": "p", "run_id": "r", "metrics": {}, "rows": rows, "trajectories_path": "",
        "samples_path": "", "config": {"pool": pool}}))
    return path


def test_compare_pairs_problems_per_category(tmp_path):
    before = _eval(tmp_path / "a", {"p1": ("Product", True, 4), "p2": ("Product", True, 2),
                                    "s1": ("Shop", False, 0), "s2": ("Shop", False, 0)})
    after = _eval(tmp_path / "b", {"p1": ("Product", False, 2), "p2": ("Product", True, 2),
                                   "s1": ("Shop", True, 8), "s2": ("Shop", True, 4), "x": ("Shop", True, 8)})
    rows = {(r["category"], r["metric"]): r for r in compare(before, after)}
    # only the problems both evaluated are paired ("x" is not)
    assert rows[("all", "greedy")]["n"] == 4
    assert rows[("all", "greedy")]["before"] == 50.0 and rows[("all", "greedy")]["after"] == 75.0
    assert rows[("Shop", "greedy")]["delta"] == pytest.approx(100.0)
    assert rows[("Shop", "greedy")]["low"] == pytest.approx(100.0)  # every Shop problem went 0 -> 1
    assert rows[("Product", "pass@1")]["delta"] == pytest.approx(-12.5)  # (2-4)/8 and 0 -> mean -1/8
    assert rows[("Product", "greedy")]["low"] < 0 < rows[("all", "greedy")]["high"]
    assert ("Voucher", "greedy") not in rows


def test_compare_refuses_evaluations_of_different_pools(tmp_path):
    a = _eval(tmp_path / "a", {"p1": ("Product", True, 1)})
    b = _eval(tmp_path / "b", {"p1": ("Product", True, 1)}, pool="test")
    with pytest.raises(SystemExit, match="different pools"):
        compare(a, b)
