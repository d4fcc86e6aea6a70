"""benchmarks/cpu_reproducibility.py --compare: a variant is portable only when both machines trained the same weights."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import cpu_reproducibility  # noqa: E402


def test_each_variant_both_machines_ran_is_compared_by_its_weights_and_others_are_left_out():
    zen3 = {"variants": {"default": {"weights_sha256": "aa"}, "avx2": {"weights_sha256": "aa"}}}
    zen4 = {"variants": {"default": {"weights_sha256": "bb"}, "avx2": {"weights_sha256": "aa"},
                         "compatible": {"weights_sha256": "cc"}}}
    assert cpu_reproducibility.compare(zen3, zen4) == {"default": False, "avx2": True}
    assert cpu_reproducibility.compare(zen4, zen3) == {"default": False, "avx2": True}


def test_every_variant_pins_what_torch_mkl_and_onednn_read_or_nothing():
    pinned = {"ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA"}
    assert cpu_reproducibility.VARIANTS["default"] == {}
    for name in ("avx2", "compatible"):
        assert set(cpu_reproducibility.VARIANTS[name]) == pinned
