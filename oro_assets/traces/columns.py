"""A record's JSON columns parsed once per run, shared by the steps that read them.

A normalised row stores ``messages``, ``steps`` and ``meta`` as JSON text (that is what the
warehouse holds). The normaliser has just built their Python values, and the structural filter, the
gates, the judge and dedup each need them again: :func:`remember` keeps the values the normaliser
built, keyed by the text itself, and :func:`column_value` answers from them (else parses). Only an
in-process run that feeds its normalised rows straight to the next steps hands them over (the
ingest step, which also forgets them when its run ends); a row read from the warehouse is parsed
as before. A lookup with the very string object the row carries costs no hashing (``str`` caches its
hash) and no comparison (identity); a copy of the text (a row read back from Arrow) is hashed and
compared once, still far cheaper than a parse.

The values are shared and must be read only, as the stages already treat their input. Memory is
bounded by the text bytes held (:data:`MAX_TEXT_BYTES`), oldest first out: a run touches a
record's columns within a batch or two of normalising it, and a miss only costs the parse.
"""

from __future__ import annotations

import threading
from typing import Any

from oro_assets import jsonio

#: Text bytes (UTF-8 length approximated by ``len``) whose parsed values are held at most.
MAX_TEXT_BYTES = 48 << 20
#: Texts shorter than this are parsed each time (a dict entry would cost more than it saves).
MIN_TEXT_CHARS = 256

_values: dict[str, Any] = {}
_held = 0
_lock = threading.Lock()


def remember(text: str, value: Any) -> None:
    """``value`` is what ``jsonio.loads(text)`` gives (the caller built ``text`` from it)."""
    global _held
    if type(text) is not str or len(text) < MIN_TEXT_CHARS:
        return
    with _lock:
        if text in _values:
            return
        _values[text] = value
        _held += len(text)
        while _held > MAX_TEXT_BYTES and _values:
            old = next(iter(_values))
            del _values[old]
            _held -= len(old)


def column_value(text: str | bytes) -> Any:
    """``jsonio.loads(text)``, answered from the values held when it can be (read them only)."""
    value = _values.get(text, _MISSING) if type(text) is str else _MISSING
    return jsonio.loads(text) if value is _MISSING else value


def forget() -> None:
    """Drop every value held (tests; a long-lived process between runs)."""
    global _held
    with _lock:
        _values.clear()
        _held = 0


_MISSING = object()
