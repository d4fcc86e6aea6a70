"""benchmarks/compile_step.py: compiling's speedup is read per length from both modes' own steps."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import compile_step  # noqa: E402


def test_speedup_is_eager_ms_over_compiled_ms_for_the_lengths_both_modes_ran():
    runs = [{"mode": "compile", "per_length": {"600": {"ms_per_step": 448.0}, "900": {"ms_per_step": 681.0}}},
            {"mode": "eager", "per_length": {"600": {"ms_per_step": 424.0}, "900": {"ms_per_step": 734.0},
                                             "1024": {"ms_per_step": 821.0}}}]
    # 424 / 448 = 0.946..., 734 / 681 = 1.077...: slower at one length, faster at the other; 1024 ran eager only
    assert compile_step.compile_speedup(runs) == {"600": 0.95, "900": 1.08}


def test_the_figure_is_the_median_and_range_of_every_rounds_per_length_speedups():
    rounds = [{"600": 1.31, "900": 1.05}, {"600": 0.98, "900": 0.93}, {"600": 0.81, "900": 0.73}]
    # six values sorted: 0.73 0.81 0.93 0.98 1.05 1.31 -> median (0.93 + 0.98) / 2
    assert compile_step.summary(rounds) == {"median": 0.955, "range": [0.73, 1.31]}
