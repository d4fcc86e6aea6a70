"""The one JSON codec of the project: orjson, Python's encoder where a text must be byte-for-byte
Python's own (ORO's measure, the chat template's ``tojson``, report files), and canonical encoding
for content hashes. Nothing else in the package imports ``json``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import orjson

JSONDecodeError = orjson.JSONDecodeError
JSONEncodeError = orjson.JSONEncodeError


def dumps(obj: Any) -> str:
    """Compact JSON text. The plain orjson path is ~2x faster; non-string keys (only in Python-built
    values) take the second, with the same text for every value the first accepts."""
    try:
        return orjson.dumps(obj).decode()
    except orjson.JSONEncodeError:
        return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode()


#: orjson's encoder itself (bytes; no fallback): for a native kernel that decodes its bytes and calls :func:`dumps`
#: for any value it refuses, so the text, or the error, is :func:`dumps`' own
encode = orjson.dumps
#: orjson's decoder itself (:func:`loads` without its Python frame): for a native kernel that decodes what
#: :func:`loads` would
decode = orjson.loads


def stdlib_dumps(obj: Any, *, ensure_ascii: bool = True, sort_keys: bool = False,
                 default: Callable[[Any], Any] | None = None) -> str:
    """Python's own ``json.dumps`` text (ASCII-escaped, ``", "`` separators): what ORO measures a
    body with before dropping it, so lengths compared with ORO's must be of this text; also the
    text of tool-call arguments in ORO-shaped rows, and of digests that must stay stable."""
    return json.dumps(obj, ensure_ascii=ensure_ascii, sort_keys=sort_keys, default=default)


def template_dumps(obj: Any) -> str:
    """The text of the chat template's ``tojson`` (``json.dumps`` with ``ensure_ascii=False`` and the
    default separators): tool schemas and arguments in training rows must render exactly like it."""
    return stdlib_dumps(obj, ensure_ascii=False)


def dumps_pretty(obj: Any) -> str:
    """Indented, key-sorted text for report and checkpoint files (values JSON has no type for are
    written as ``str()``; NaN stays ``NaN``). Python's encoder, so the bytes of existing files, and
    floats such as ``1e-05``, read the same as before."""
    return json.dumps(obj, indent=2, sort_keys=True, default=str)


def dumps_bytes(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS)


def canonical_bytes(obj: Any) -> bytes:
    """Key-sorted encoding: equal values always give equal bytes (used for hashing)."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def canonical_dumps(obj: Any) -> str:
    return canonical_bytes(obj).decode()


def loads(data: str | bytes) -> Any:
    return orjson.loads(data)


def loads_lenient(data: str | bytes) -> Any:
    """``loads`` that also reads the ``NaN``/``Infinity`` ``dumps_pretty`` writes (a loss that diverged)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        try:
            return json.loads(data)
        except ValueError:
            raise exc from None


def content_hash(obj: Any) -> str:
    return hashlib.sha256(canonical_bytes(obj)).hexdigest()
