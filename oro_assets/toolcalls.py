"""The one ``<tool_call>`` parser, and the shopping tools' names (reference §2).

Used by the rollout engine (``agents/toolcall.py``: what a policy emitted), the normaliser and the
structural filter (``traces/calls.py``, ``traces/formats.py``: what a recorded answer said), so a rollout
and the curated trace of the same text read the same calls.

One behaviour for every text:

* a block runs from ``<tool_call>`` to ``</tool_call>``, or to the next ``<tool_call>``, or to the end of
  the text; a block without its ``</tool_call>`` is **cut short** (``unterminated_tool_call``);
* its body is one JSON value: an object ``{"name", "arguments"|"parameters"}`` (Qwen3, ORO's reference
  agent) or an array of them. A body that is not exact JSON is read leniently (a code fence, text before
  the value, text after it, a trailing comma): the calls recovered are complete, the slip is an error;
* a body that cannot be read at all (cut mid-value, not JSON) yields the names it shows, each as an
  *incomplete* call (``complete=False``, no arguments): a curated trace counts them, a rollout cannot
  run them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from oro_assets import jsonio

TOOL_OPEN = "<tool_call>"
TOOL_CLOSE = "</tool_call>"

# The shopping tools (ShoppingBench / ORO's sandbox).
FIND_PRODUCT = "find_product"
VIEW_PRODUCT_INFORMATION = "view_product_information"
CHECK_PRODUCT_MATCH = "check_product_match"
FIND_PRODUCTS_IN_SAME_SHOP = "find_products_in_same_shop"
CALCULATE_VOUCHER = "calculate_voucher"
RECOMMEND_PRODUCT = "recommend_product"
TERMINATE = "terminate"
#: The think text of ORO's reference-agent auto-recommend step (written by code, no inference).
FALLBACK_THINK = "Auto-recommending best available candidates."
#: The catalogue tools: each is a proxied search call (recommend and terminate are not).
CATALOGUE_TOOLS = (FIND_PRODUCT, VIEW_PRODUCT_INFORMATION, CHECK_PRODUCT_MATCH, FIND_PRODUCTS_IN_SAME_SHOP,
                   CALCULATE_VOUCHER)

_NAME = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
#: errors that concern a block's text (the block was not read as written); the others concern one
#: call's arguments
BLOCK_ERRORS = frozenset({"unterminated_tool_call", "no_json", "invalid_json", "trailing_garbage",
                          "call_not_object", "missing_name"})


@dataclass(frozen=True)
class ToolCall:
    name: str
    #: a JSON object's value; ``{}`` when the arguments were absent or not an object
    arguments: dict[str, Any]
    #: the arguments as written when they were not a JSON object (text, or the JSON of a non-object)
    raw_arguments: str | None = None
    #: False: read from a block that could not be decoded; only the name is known
    complete: bool = True


@dataclass
class ParsedCalls:
    calls: list[ToolCall]
    #: text outside the blocks
    outside: str
    errors: list[str] = field(default_factory=list)
    #: ``text_array`` (a block holds a JSON array: ORO's reference agent), ``qwen3_object`` or ``none``
    shape: str = "none"

    @property
    def cut(self) -> bool:
        """A block was not read as written (cut short, not exact JSON, an entry that is no call)."""
        return any(e in BLOCK_ERRORS for e in self.errors)


def scan_blocks(text: str) -> tuple[list[tuple[str, bool]], str]:
    """(blocks ``(body, closed)``, text outside them): a block ends at the first ``</tool_call>`` or the next
    ``<tool_call>``, whichever comes first, or at the end of the text (found with ``str.find``: answers
    can be long)."""
    blocks: list[tuple[str, bool]] = []
    outside: list[str] = []
    pos = 0
    start = text.find(TOOL_OPEN)
    while start >= 0:
        outside.append(text[pos:start])
        body = start + len(TOOL_OPEN)
        close = text.find(TOOL_CLOSE, body)
        nxt = text.find(TOOL_OPEN, body)
        if close >= 0 and (nxt < 0 or close < nxt):
            blocks.append((text[body:close], True))
            pos = close + len(TOOL_CLOSE)
            start = text.find(TOOL_OPEN, pos)
        elif nxt >= 0:
            blocks.append((text[body:nxt], False))
            pos = start = nxt
        else:
            blocks.append((text[body:], False))
            pos, start = len(text), -1
    outside.append(text[pos:])
    return blocks, "".join(outside)


def tool_blocks(text: str) -> list[tuple[str, bool]]:
    """``(body, closed)`` of every ``<tool_call>`` block of ``text``, in order."""
    return scan_blocks(text)[0]


def strip_blocks(text: str) -> str:
    """``text`` without its ``<tool_call>`` blocks."""
    return scan_blocks(text)[1]


def decode_block(body: str) -> tuple[Any, str | None]:
    """(JSON value, error) of one block's body; the value is ``None`` when nothing could be decoded
    (error ``no_json`` or ``invalid_json``); ``trailing_garbage`` when it was read leniently."""
    raw = body.strip()
    try:
        return jsonio.loads(raw), None
    except jsonio.JSONDecodeError:
        pass
    if raw.startswith("```"):
        raw = raw.strip("`")
        raw = (raw[4:] if raw.startswith("json") else raw).strip()
    starts = [i for i in (raw.find("{"), raw.find("[")) if i >= 0]
    if not starts:
        return None, "no_json"
    start = min(starts)
    # orjson decodes whole documents only; the lenient read needs a prefix decoder
    decoder = json.JSONDecoder()
    try:
        value, end = decoder.raw_decode(raw, start)
    except json.JSONDecodeError:
        fixed = _TRAILING_COMMA.sub(r"\1", raw[start:])
        try:
            value, end = decoder.raw_decode(fixed)
        except json.JSONDecodeError:
            return None, "invalid_json"
        return value, "trailing_garbage"
    return value, ("trailing_garbage" if raw[end:].strip() or start > 0 else None)


def names_shown(body: str) -> list[str]:
    """The ``"name": "..."`` values a block that could not be decoded shows."""
    out = []
    for name in _NAME.findall(body):
        try:
            out.append(jsonio.loads(f'"{name}"'))
        except jsonio.JSONDecodeError:
            out.append(name)
    return out


def call_from_item(item: Any) -> tuple[ToolCall | None, str | None]:
    """One decoded entry as a call, with the error it shows (if any)."""
    if not isinstance(item, dict):
        return None, "call_not_object"
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        return None, "missing_name"
    args: Any = item["arguments"] if "arguments" in item else item.get("parameters")
    err = None
    if isinstance(args, str):
        try:
            args = jsonio.loads(args) if args.strip() else {}
        except jsonio.JSONDecodeError:
            return ToolCall(name.strip(), {}, raw_arguments=item.get("arguments", item.get("parameters"))), \
                "arguments_unparseable"
        err = "arguments_as_string"
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return ToolCall(name.strip(), {}, raw_arguments=jsonio.dumps(args)), "arguments_not_object"
    return ToolCall(name.strip(), args), err


def parse_tool_calls(text: str) -> ParsedCalls:
    """Every call of ``text``'s ``<tool_call>`` blocks (see the module docstring). Never raises."""
    if TOOL_OPEN not in text:
        errors = ["stray_tool_close"] if TOOL_CLOSE in text else []
        return ParsedCalls([], text.replace(TOOL_CLOSE, ""), errors)
    calls: list[ToolCall] = []
    errors: list[str] = []
    shape = "qwen3_object"
    blocks, outside = scan_blocks(text)
    for body, closed in blocks:
        if not closed:
            errors.append("unterminated_tool_call")
        if body.lstrip().startswith("["):
            shape = "text_array"
        value, err = decode_block(body)
        if err is not None:
            errors.append(err)
        if value is None:
            calls.extend(ToolCall(n.strip(), {}, complete=False) for n in names_shown(body) if n.strip())
            continue
        for item in value if isinstance(value, list) else [value]:
            call, cerr = call_from_item(item)
            if cerr:
                errors.append(cerr)
            if call is not None:
                calls.append(call)
    return ParsedCalls(calls, outside, errors, shape)


def arguments_dict(arguments: Any) -> dict | None:
    """A tool call's arguments as a dict (a dict, or the JSON text or bytes of an object); None when they are not one."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str | bytes):
        try:
            value = jsonio.loads(arguments)
        except jsonio.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None
    return None
