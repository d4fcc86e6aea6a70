"""benchmarks/ingest_throughput.py ``measure_in_child``: a child that dies never leaves the caller waiting."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from ingest_throughput import measure_in_child  # noqa: E402


def test_result_comes_back_with_wall_cpu_and_rss():
    run = measure_in_child(lambda: {"records": 3})
    assert run["records"] == 3 and run["wall_s"] >= 0 and run["cpu_s"] >= 0 and run["peak_rss_mib"] > 0


def test_a_crashed_child_raises_with_its_exit_code():
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="exit.* code 3"):
        measure_in_child(lambda: os._exit(3))
    assert time.monotonic() - t0 < 30


def test_a_silent_child_is_killed_after_the_timeout():
    with pytest.raises(TimeoutError):
        measure_in_child(lambda: time.sleep(60) or {}, timeout=1)
