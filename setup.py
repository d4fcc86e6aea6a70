"""The native kernels (``oro_assets/_native.c``, issue 33) as an optional C extension; everything else about the
package is in pyproject.toml. ``pip install -e .`` (the README's install) builds it in place; so does
``python setup.py build_ext --inplace``. Without a C compiler or Python's headers the build is skipped with a
warning and the package runs its Python references (``oro_assets/native.py``)."""

import hashlib
from pathlib import Path

from setuptools import Extension, setup

SOURCE = "oro_assets/_native.c"
# the loader compares this with the source beside the built module and refuses a stale build
DIGEST = hashlib.sha256((Path(__file__).resolve().parent / SOURCE).read_bytes()).hexdigest()

setup(ext_modules=[Extension("oro_assets._native", [SOURCE], optional=True,
                             define_macros=[("ORO_NATIVE_SOURCE_SHA256", f'"{DIGEST}"')],
                             extra_compile_args=["-O3", "-std=c11"])])
