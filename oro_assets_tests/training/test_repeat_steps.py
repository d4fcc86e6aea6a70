"""benchmarks/repeat_steps.py: the first step at which two training histories part."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from repeat_steps import first_difference  # noqa: E402


def test_the_first_step_whose_loss_or_gradient_norm_differs_is_named():
    ref = [[12.75, 40.6395149230957], [12.73, 37.6], [10.9, 33.8]]
    assert first_difference(ref, [list(step) for step in ref]) is None
    # the world-202 chain's warm-up: the same loss at step 1, a gradient norm 3.4e-4 apart
    assert first_difference(ref, [[12.75, 40.63984680175781], *ref[1:]]) == 1
    assert first_difference(ref, [*ref[:2], [10.900000000000002, 33.8]]) == 3
    with pytest.raises(ValueError):
        first_difference(ref, ref[:2])
