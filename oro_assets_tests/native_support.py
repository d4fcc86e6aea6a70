"""The native kernels for a test that compares them with their Python references: skipped where the install did not
build them, a failure under CI (whose install builds them) unless ``ORO_NATIVE`` switches them off."""

from __future__ import annotations

import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from oro_assets import native
from oro_assets.settings import native_kernels


def require_kernels() -> ModuleType:
    if native.kernels is None:
        if os.environ.get("CI") and native_kernels():
            pytest.fail(f"the native kernels are not in use under CI: {native.why}")
        pytest.skip(f"native kernels not in use: {native.why}")
    return native.kernels


def outcomes(reference: Callable[[], Any], kernel: Callable[[], Any]) -> tuple[Any, Any] | None:
    """``(reference's result, kernel's result)``; None when the reference raises, after checking that the kernel
    raises the same type with the same message (whatever the reference raises, the kernel must raise alike)."""
    try:
        want = reference()
    except Exception as exc:  # noqa: BLE001 - any exception of the reference is the expected outcome
        with pytest.raises(type(exc)) as raised:
            kernel()
        assert str(raised.value) == str(exc)
        return None
    return want, kernel()


def refused_alike(exc: Exception, dispatch: Callable[[], Any], kernel: Callable[[], Any]) -> bool:
    """For an input the reference refused with ``exc``: the dispatcher raises alike, and the kernel either raises
    alike (a helper's own error, raised at the same point: True) or hands the input back to the reference (None:
    False); a kernel that reads what the reference refuses fails."""
    with pytest.raises(type(exc)) as raised:
        dispatch()
    assert str(raised.value) == str(exc)
    try:
        got = kernel()
    except Exception as kernel_exc:  # noqa: BLE001 - whatever the reference raised, the kernel must raise alike
        assert type(kernel_exc) is type(exc) and str(kernel_exc) == str(exc)
        return True
    assert got is None, "the kernel read an input the reference refuses"
    return False


class KernelsWith:
    """The native kernels with one of them replaced: ``KernelsWith("meta_search", lambda text: None)`` is the set
    with that kernel declining every text (its Python reference reads them all), every other kernel as built."""

    def __init__(self, name: str, replacement: Callable[..., Any]) -> None:
        self._name, self._replacement = name, replacement

    def __getattr__(self, name: str) -> Any:
        if name == self._name:
            return self._replacement
        return getattr(native.kernels, name)


def both_eras_day(tmp: str, day: str, traces: int) -> list[str]:
    """The files of a simulated day of ``traces`` records under ``tmp``, half written by each ORO recorder era."""
    from oro_assets.arena import recorder
    from oro_assets.arena.firehose import simulate_day
    from oro_assets.traces.reader import iter_partition_files

    simulate_day(day, traces, tmp, seed=15, workers=1,
                 recorder_shares={recorder.ERA_A6B1CF3: 0.5, recorder.ERA_LATER: 0.5})
    return iter_partition_files(tmp, day)


def normalized_rows(files: list[str], day: str) -> list:
    """What ingest's normaliser gives for every record of ``files``: ``(row, parsed)`` or a quarantine row."""
    from oro_assets.traces.ingest import iter_normalized

    return [r if isinstance(r, tuple) else r.to_row() for r in iter_normalized(files, day)]


class Dict(dict):
    """A dict subclass: the kernels read exact types only and hand a subclass to their reference."""


class Str(str):
    """A str subclass (see :class:`Dict`)."""


class List(list):
    """A list subclass (see :class:`Dict`)."""
