"""The native kernels (C: ``oro_assets/_native.c``, issue 33), or None where the Python references run.

Every kernel is the twin of a Python function kept as its reference (the ``test_native*.py`` files under
``oro_assets_tests/`` hold them equal). ``kernels`` is the built module when it is importable,
built from the source beside it, and not switched off; the callers test it once, at import, and use their Python
path when it is None.

``ORO_NATIVE=0`` (also ``off``, ``false``, ``no``) forces the Python path; it is read once, at import
(``settings.native_kernels``). The
extension is built by ``pip install -e .`` (the README's install) or ``python setup.py build_ext --inplace``;
a fresh clone before that, or a machine without a C compiler, runs the Python path. A build older than the
source (the source edited, the module not rebuilt) is not used: ``why`` says so and the Python path runs.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import ModuleType

from oro_assets.settings import SettingsError, native_kernels

_SOURCE = Path(__file__).resolve().parent / "_native.c"


def _load() -> tuple[ModuleType | None, str]:
    try:
        on = native_kernels()
    except SettingsError as exc:  # the CLI's settings check reports it in one line; importing must not fail
        return None, f"switched off: {exc}"
    if not on:
        return None, "switched off (ORO_NATIVE)"
    try:
        from oro_assets import _native
    except ImportError as exc:
        return None, f"not built ({exc})"
    if _SOURCE.is_file() and hashlib.sha256(_SOURCE.read_bytes()).hexdigest() != _native.SOURCE_SHA256:
        return None, f"stale build: {_native.__file__} was not built from {_SOURCE} (rebuild it)"
    return _native, f"native ({_native.__file__})"


kernels, why = _load()


def enabled() -> bool:
    """Whether the native kernels run in this process."""
    return kernels is not None
