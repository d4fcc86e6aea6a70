"""Word-swap variants of curated rows: the same episode with the words the agent searched for renamed.

Why: in a day's curated corpus a product's brand is predictable from its noun ("lip balm" comes with a
handful of brands), so a from-scratch tiny model learns to *recall* brands instead of *copying* the query's
(measured on the main command's hold-out, issue 18: "gefabis velvet lip balm" searched as "piru leather lip
balm"). A variant renames every word of the row's first ``find_product`` query, consistently in every
message (user request, thinking, call arguments, tool results), to other words of the catalogue
vocabulary. The episode stays the same episode - the same hits, prices, options and choice - but the words
can only be got right by copying them from the request. Nothing else changes, so the variants keep the
corpus's own style and its real request templates (unlike made-up drills).

Each variant keeps its origin: ``id`` is ``<row id>~swap<k>`` and ``source`` names the original row, so a
trained example's lineage still leads to the curated trace it came from.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from typing import Any

from oro_assets import jsonio
from oro_assets.toolcalls import FIND_PRODUCT
from oro_assets.training.data import _as_list, _calls

SWAP_SOURCE = "word_swap"
_VARIANT_SUFFIX = re.compile(r"~swap\d+$")
# Words no swap touches: the request's and the tools' own vocabulary (a query word that is also one of these
# is part of the sentence or a filter, not of the product's name).
_PROTECTED_TEXT = (
    "a an the and or with for in of to me my by on at from under over between below above than less more "
    "find show looking look want need get buy i am is are be it its this that any some one item items "
    "price priced pesos peso php costing cost budget service services official cod flashsale freeshipping "
    "free shipping store sold deal sale flash product products recommend terminate success failure")
_PROTECTED = frozenset(_PROTECTED_TEXT.split())
_WORD = re.compile(r"[A-Za-z]+")


def variant_origin(example_id: str) -> str:
    """The id of the row a word-swap variant was made from (any other id unchanged)."""
    return _VARIANT_SUFFIX.sub("", example_id)


def swap_vocabulary(titles: Iterable[str], min_len: int = 3) -> list[str]:
    """Candidate replacement words: the alphabetic title words of a catalogue (sorted, deterministic)."""
    words = {w.lower() for t in titles for w in _WORD.findall(str(t)) if len(w) >= min_len}
    return sorted(words - _PROTECTED)


def searched_words(messages: Sequence[dict], every_search: bool = False) -> list[str]:
    """The words of the row's first ``find_product`` query (of every one with ``every_search``: each item of a
    request for several products) that the user's request contains (lower-cased, in order, no repeats) - the
    words an agent has to copy."""
    user = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "").lower()
    request = set(_WORD.findall(user))
    out: list[str] = []
    for name, args in _calls(messages):
        if name == FIND_PRODUCT and isinstance(args, dict):
            for w in _WORD.findall(str(args.get("q") or "").lower()):
                if w in request and w not in _PROTECTED and len(w) >= 2 and w not in out:
                    out.append(w)
            if not every_search:
                return out
    return out


def _recase(template: str, word: str) -> str:
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def rename_words(value: Any, mapping: dict[str, str], pattern: re.Pattern) -> Any:
    """``value`` (str / list / dict, JSON strings included) with every whole word of ``mapping`` replaced,
    case kept (Title, UPPER, lower)."""
    if isinstance(value, str):
        return pattern.sub(lambda m: _recase(m.group(0), mapping[m.group(0).lower()]), value)
    if isinstance(value, list):
        return [rename_words(v, mapping, pattern) for v in value]
    if isinstance(value, dict):
        return {k: rename_words(v, mapping, pattern) for k, v in value.items()}
    return value


def swap_variant(row: dict, vocabulary: Sequence[str], rng: random.Random, k: int = 0,
                 every_search: bool = False) -> dict | None:
    """One variant of ``row`` with its searched words renamed (``None`` when it searched no request word)."""
    messages = _as_list(row.get("messages"), "messages", row.get("id"))
    words = searched_words(messages, every_search)
    if not words:
        return None
    text = jsonio.stdlib_dumps(messages).lower()
    present = set(_WORD.findall(text))
    choices = [w for w in vocabulary if w not in present]
    if len(choices) < len(words):
        return None
    mapping = dict(zip(words, rng.sample(choices, len(words)), strict=True))
    pattern = re.compile(r"(?<![A-Za-z])(" + "|".join(re.escape(w) for w in words) + r")(?![A-Za-z])", re.I)
    out = dict(row)
    out["messages"] = rename_words(messages, mapping, pattern)
    out["id"] = f"{row.get('id')}~swap{k}"
    out["source"] = f"{SWAP_SOURCE}:{row.get('id')}"
    return out


def swap_variants(rows: Sequence[dict], vocabulary: Sequence[str], per_row: int, seed: int,
                  every_search: bool = False) -> list[dict]:
    """``per_row`` word-swap variants of every row that searched a request word (deterministic for ``seed``)."""
    if per_row <= 0 or not vocabulary:
        return []
    rng = random.Random(f"word-swap:{seed}")
    out = []
    for row in rows:
        for k in range(per_row):
            v = swap_variant(row, vocabulary, rng, k, every_search)
            if v is None:
                break
            out.append(v)
    return out


def catalogue_swap_variants(rows: Sequence[dict], catalogue: Iterable[dict] | None, per_row: int,
                            seed: int, every_search: bool = False) -> list[dict]:
    """:func:`swap_variants` with replacement words drawn from ``catalogue``'s titles (required when
    ``per_row > 0``: the replacements must be words the base tokenizer knows)."""
    if per_row <= 0:
        return []
    if catalogue is None:
        raise ValueError("word-swap variants need the catalogue")
    return swap_variants(rows, swap_vocabulary(p.get("title", "") for p in catalogue), per_row, seed, every_search)
