"""The one JSON codec of the project (orjson), plus canonical encoding for content hashes."""

from __future__ import annotations

import hashlib
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


def stdlib_dumps(obj: Any) -> str:
    """Python's own ``json.dumps`` text (ASCII-escaped, ``", "`` separators): what ORO measures a
    body with before dropping it, so lengths compared with ORO's must be of this text."""
    import json

    return json.dumps(obj)


def dumps_bytes(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS)


def canonical_bytes(obj: Any) -> bytes:
    """Key-sorted encoding: equal values always give equal bytes (used for hashing)."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def canonical_dumps(obj: Any) -> str:
    return canonical_bytes(obj).decode()


def loads(data: str | bytes) -> Any:
    return orjson.loads(data)


def content_hash(obj: Any) -> str:
    return hashlib.sha256(canonical_bytes(obj)).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
