"""The one JSON codec of the project (orjson), plus canonical encoding for content hashes."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

JSONDecodeError = orjson.JSONDecodeError


def dumps(obj: Any) -> str:
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode()


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
