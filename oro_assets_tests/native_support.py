"""The native kernels for a test that compares them with their Python references: skipped where the install did not
build them, a failure under CI (whose install builds them) unless ``ORO_NATIVE`` switches them off."""

from __future__ import annotations

import os
from types import ModuleType

import pytest

from oro_assets import native
from oro_assets.settings import native_kernels


def require_kernels() -> ModuleType:
    if native.kernels is None:
        if os.environ.get("CI") and native_kernels():
            pytest.fail(f"the native kernels are not in use under CI: {native.why}")
        pytest.skip(f"native kernels not in use: {native.why}")
    return native.kernels
