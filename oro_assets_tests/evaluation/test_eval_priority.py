"""An evaluation step in a process of its own lowers its CPU priority so the training stage beside it keeps the
cores; in-process runs are left alone, and the niceness never reaches the evaluation's fingerprint."""

from __future__ import annotations

import multiprocessing
import os
import threading

import pydantic
import pytest

from oro_assets.defs.evaluation.assets import EvalConfig, yield_cores_to_training


def _in_child(niceness: int, queue) -> None:
    before = os.getpriority(os.PRIO_PROCESS, 0)
    returned = yield_cores_to_training(niceness)
    seen: dict[str, int] = {}

    def later_thread() -> None:  # a thread started afterwards, as torch's are
        seen["thread"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    t = threading.Thread(target=later_thread)
    t.start()
    t.join()
    queue.put((before, returned, os.getpriority(os.PRIO_PROCESS, 0), seen["thread"]))


def _child_result(niceness: int) -> tuple[int, int | None, int, int]:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_in_child, args=(niceness, queue))
    proc.start()
    result = queue.get(timeout=120)
    proc.join(timeout=60)
    assert proc.exitcode == 0
    return result


def test_a_step_process_of_its_own_lowers_its_priority_for_every_later_thread():
    before, returned, after, thread = _child_result(10)
    assert returned == min(before + 10, 19)
    assert after == returned
    assert thread == returned


def test_niceness_zero_changes_nothing():
    before, returned, after, _ = _child_result(0)
    assert returned is None
    assert after == before


def test_an_in_process_run_is_left_as_it_is():
    before = os.getpriority(os.PRIO_PROCESS, 0)
    assert yield_cores_to_training(10) is None
    assert os.getpriority(os.PRIO_PROCESS, 0) == before


def test_niceness_is_not_a_rollout_setting():
    low, high = EvalConfig(niceness=0), EvalConfig(niceness=15)
    assert "niceness" not in low.rollout_settings()
    assert low.rollout_settings() == high.rollout_settings()
    assert EvalConfig(n=4).rollout_settings() != low.rollout_settings()


def test_a_niceness_outside_0_to_19_is_refused():
    for bad in (-1, 20):
        with pytest.raises(pydantic.ValidationError, match="niceness"):
            EvalConfig(niceness=bad)
