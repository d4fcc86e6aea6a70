"""What the model itself said, and which step it said it for (reference §2, "How the model's calls appear").

* :func:`answer_calls` reads the tool calls out of one chat-completion message in any of the three
  answer shapes of the firehose: structured ``tool_calls``; ORO's reference-agent text
  ``<tool_call>[{"name", "parameters"}]</tool_call>`` (a JSON array, or one object); Qwen3's
  ``<tool_call>\\n{"name", "arguments"}\\n</tool_call>`` blocks. A block cut short or not JSON is
  read for the names it shows and marked ``cut``; arguments that are not an object stay as text.
* :func:`attribute_calls` re-derives, from the step stamps, which proxy calls happened for which
  step: a step is stamped after its own calls, so step k's calls are those that ended after step
  k−1's stamp and at or before step k's. The list a call sits in (ORO's bucketing) is used only
  where the stamps cannot be read, and the note says so.
* :func:`canonical_arguments` makes the model's and the harness's arguments comparable: ``None``
  values and defaults (``page`` 1, ``sort``/``service`` "default") dropped, ``q`` URL-decoded and
  whitespace-collapsed, scalars as text.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from functools import lru_cache, partial
from typing import Any
from urllib.parse import unquote_plus, urlparse

from oro_assets import jsonio
from oro_assets.native import kernels as _kernels
from oro_assets.toolcalls import (
    CALCULATE_VOUCHER,
    CHECK_PRODUCT_MATCH,
    FIND_PRODUCT,
    FIND_PRODUCTS_IN_SAME_SHOP,
    TOOL_OPEN,
    VIEW_PRODUCT_INFORMATION,
    parse_tool_calls,
)

_DEFAULTS = {"page": {"1"}, "sort": {"default", ""}, "service": {"default", ""}}


def _arguments(value: Any) -> Any:
    """Arguments as a dict when they are a JSON object (or its text), else as given."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = jsonio.loads(value) if value.strip() else {}
        except jsonio.JSONDecodeError:
            return value
        return parsed if isinstance(parsed, dict) else value
    return {} if value is None else value


AnswerCalls = tuple[list[dict], str, bool]


def answer_calls_py(message: Any) -> AnswerCalls:
    """(calls ``{name, arguments}``, shape, cut) of one chat-completion ``message`` (the reference of
    :data:`answer_calls`).

    ``shape``: ``structured``, ``text_array``, ``qwen3_object`` or ``none`` (no call in the answer).
    Text is read by the one parser (``oro_assets.toolcalls``); a call only named in a block that could
    not be decoded has ``arguments`` None."""
    if not isinstance(message, dict):
        return [], "none", False
    tcs = message.get("tool_calls")
    if isinstance(tcs, list) and tcs:
        calls = []
        cut = False
        for tc in tcs:
            fn = tc.get("function") if isinstance(tc, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                calls.append({"name": fn["name"], "arguments": _arguments(fn.get("arguments"))})
            else:
                cut = True
        return calls, "structured", cut
    content = message.get("content")
    if not isinstance(content, str) or TOOL_OPEN not in content:
        return [], "none", False
    parsed = parse_tool_calls(content)
    calls = [{"name": c.name, "arguments": (c.arguments if c.raw_arguments is None else c.raw_arguments)
              if c.complete else None} for c in parsed.calls]
    return calls, parsed.shape, parsed.cut


#: :func:`answer_calls_py` of a message, natively where the kernels are built (``oro_assets.native``: ``answer_calls``
#: reads a content whose ``<tool_call>`` blocks are closed and exact JSON, ~0.5 us against ~3.6 in the parser, and
#: calls the reference for any other message); a C callable, as the normaliser's kernels call it for every answer
answer_calls: Callable[[Any], AnswerCalls] = (
    partial(_kernels.answer_calls, answer_calls_py, jsonio.decode) if _kernels is not None else answer_calls_py)


def canonical_arguments(arguments: Any) -> Any:
    """Comparable form of one call's arguments (see the module docstring); text stays text."""
    args = _arguments(arguments)
    if not isinstance(args, dict):
        return " ".join(str(args).split())
    out = {}
    for key, value in args.items():
        if value is None:
            continue
        text = value if isinstance(value, str) else jsonio.dumps(value).strip('"')
        if key == "q":
            text = unquote_plus(text) if "+" in text or "%" in text else text
            text = " ".join(text.split()).lower()
        if text in _DEFAULTS.get(key, ()):
            continue
        out[str(key)] = text
    return out


def same_calls(said: list[dict], done: list[dict]) -> tuple[bool, bool]:
    """(names match as a multiset, names and canonical arguments match) of two call lists."""
    names_said = sorted(str(c.get("name")) for c in said)
    names_done = sorted(str(c.get("name")) for c in done)
    if names_said != names_done:
        return False, False

    def key(c: dict) -> str:
        return str(c.get("name")) + "\x00" + jsonio.canonical_dumps(canonical_arguments(c.get("arguments")))

    return True, sorted(map(key, said)) == sorted(map(key, done))


def _stamp(value: Any) -> int | None:
    return value if type(value) is int else None


def _time_key(call: dict) -> int:
    ts = call.get("timestamp")
    return ts if type(ts) is int else 0


#: :func:`attribute_calls`' notes of a dialogue without proxy calls, and of one whose calls all went by the stamps
NO_PROXY_CALLS = "no proxy calls"
ATTRIBUTED = "calls attributed by step stamps"


def attribute_calls(stamps: list[Any], listed: list[list[dict]], run_started_ms: int | None = None,
                    ) -> tuple[list[list[dict]], str]:
    """Per step, the proxy calls made for it, and a note on how they were attributed.

    ``stamps``: each step's ``timestamp``; ``listed``: each step's ``proxy_calls`` as recorded."""
    if not any(listed):
        return [[] for _ in listed], NO_PROXY_CALLS
    ints = [s if type(s) is int else None for s in stamps]
    problem = None
    if None in ints:
        problem = f"{ints.count(None)} step stamp(s) missing or not integer ms"
    elif any(b < a for a, b in zip(ints, ints[1:], strict=False)):
        problem = "step stamps out of order"
    if problem is not None:
        turns = _turns([c for bucket in listed for c in bucket])
        if turns is not None and len(turns) == len(listed):
            return turns, f"{problem}: the calls' own sequence split into one turn per step"
        return [list(b) for b in listed], f"{problem}: calls left on the step that lists them"
    n = len(ints)
    out: list[list[dict]] = [[] for _ in listed]
    tops: list[Any] = [None] * len(out)  # each bucket's latest sort key: a bucket is sorted only if one came in lower
    unsorted = False
    unstamped = after = early = 0
    for pos, bucket in enumerate(listed):
        for call in bucket:
            ts = call.get("timestamp")
            if type(ts) is not int:
                unstamped += 1
                k, ts = pos, 0
            else:
                if run_started_ms is not None and ts < run_started_ms:
                    early += 1
                k = bisect_left(ints, ts)  # the first step stamped at or after the call (stamps are in order here)
                if k == n:
                    after += 1
                    k = n - 1
            top = tops[k]
            if top is not None and ts < top:
                unsorted = True
            tops[k] = ts
            out[k].append(call)
    if unsorted:
        for bucket in out:
            bucket.sort(key=_time_key)
    notes = [ATTRIBUTED]
    if unstamped:
        notes.append(f"{unstamped} call(s) without an integer timestamp left on their listed step")
    if after:
        notes.append(f"{after} call(s) ended after the last step's stamp (given to the last step)")
    if early:
        notes.append(f"{early} call(s) stamped before the run began")
    return out, "; ".join(notes)


def _is_inference(call: dict) -> bool:
    path = call.get("path")
    return isinstance(path, str) and ("/inference" in path or path.endswith("/chat/completions"))


def _ok(call: dict) -> bool:
    status = call.get("status_code")
    return status is None or (type(status) is int and 200 <= status < 300)


def _turns(calls: list[dict]) -> list[list[dict]] | None:
    """The calls in their own time order, split into turns: each answered inference call starts
    one (failed requests before it join it; searches after it belong to it; searches before any
    answer form a turn of their own). None when a call has no integer timestamp."""
    if any(_stamp(c.get("timestamp")) is None for c in calls):
        return None
    turns: list[list[dict]] = []
    waiting: list[dict] = []  # failed inference requests, joined to the next answered one
    for call in sorted(calls, key=lambda c: c["timestamp"]):
        if _is_inference(call) and not _ok(call):
            waiting.append(call)
        elif _is_inference(call) or not turns:
            turns.append([*waiting, call])
            waiting = []
        else:
            turns[-1].append(call)
    if waiting:
        if not turns:
            turns.append([])
        turns[-1].extend(waiting)
    return turns


# ---------------------------------------------------------------- ORO's recorder era and agentic richness

ERA_A6B1CF3 = "a6b1cf3"
ERA_LATER = "later"
ERA_MIXED = "mixed"
#: ORO's a6b1cf3 recorder dropped a body whose stdlib ``json.dumps`` exceeded this many characters.
DROP_LIMIT = 2000


def _answer_text_length(response: Any) -> int:
    """Characters of answer text (content + reasoning) in a chat-completion body: a lower bound on
    its JSON length that costs no re-encoding."""
    n = 0
    for choice in response.get("choices") or () if isinstance(response.get("choices"), list) else ():
        msg = choice.get("message") if isinstance(choice, dict) else None
        if isinstance(msg, dict):
            for key in ("content", "reasoning_content"):
                value = msg.get(key)
                if isinstance(value, str):
                    n += len(value)
    return n


def recorder_era(listed: list[list[dict]]) -> tuple[str | None, dict[str, int]]:
    """Which of ORO's recorders wrote these proxy calls (reference §2 and §2b), with the signs seen.

    a6b1cf3: a dropped body (``response_truncated``), an inference request logged without
    ``messages``, a ``find_product`` list kept without ``result_product_ids`` (a6b1cf3 adds them only
    to a dropped list). Later: an inference request with ``messages``, a ``find_product`` entry with both
    its whole list and ``result_product_ids``, an answer kept whole past 2,000 characters. Both kinds
    of sign in one record: ``mixed``; none (no proxy calls, or nothing that tells): ``None``."""
    era, signs, _ = era_and_richness(listed)
    return era, signs


#: ORO's catalogue routes (``src/analytics/agentic_richness.py``); inference, recommend and terminate
#: are not dispatches.
CATALOGUE_TOOLS = {
    "/search/find_product": FIND_PRODUCT,
    "/search/view_product_information": VIEW_PRODUCT_INFORMATION,
    "/search/check_product_match": CHECK_PRODUCT_MATCH,
    "/search/find_products_in_same_shop": FIND_PRODUCTS_IN_SAME_SHOP,
    "/search/calculate_voucher": CALCULATE_VOUCHER,
}
ORO_INFERENCE_PATH = "/inference/chat/completions"
_ORO_TAG = re.compile(r"<tool_call>\s*(\[.*?\]|\{.*?\})\s*</tool_call>", re.S)


@lru_cache(maxsize=1024)
def _str_route(path: str) -> str:
    """A logged path as ORO's calculator compares it: the URL's path, trailing "/" removed; once
    per distinct path (a day logs a handful of routes)."""
    if path[:1] == "/" and path[1:2] != "/" and path.isprintable() and not any(c in path for c in "?#;"):
        return path.rstrip("/")  # a plain path (what the recorder logs) is its own URL path
    return urlparse(path).path.rstrip("/")


def _named_tools_py(call: dict) -> list[str] | None:
    """The tools one inference answer named, in order, read as ORO's calculator reads them: native
    ``tool_calls[].function.name`` then ``<tool_call>`` blocks (an array or one object, keyed
    ``name``/``tool``/``function``) of each choice. ``None``: no body to read. The reference of :data:`_named_tools`."""
    response = call.get("response")
    if type(response) is not dict:
        return None
    names: list[str] = []
    choices = response.get("choices")
    for choice in choices if type(choices) is list else ():
        msg = choice.get("message") if type(choice) is dict else None
        if type(msg) is not dict:
            continue
        for tc in msg.get("tool_calls") or () if type(msg.get("tool_calls")) is list else ():
            fn = tc.get("function") if type(tc) is dict else None
            if type(fn) is dict and type(fn.get("name")) is str:
                names.append(fn["name"])
        content = msg.get("content")
        if type(content) is not str or "<tool_call>" not in content:
            continue
        for block in _ORO_TAG.findall(content):
            try:
                payload = jsonio.loads(block.strip())
            except jsonio.JSONDecodeError:
                continue
            for item in payload if type(payload) is list else [payload]:
                if type(item) is not dict:
                    continue
                name = item.get("name") or item.get("tool") or item.get("function")
                if type(name) is str:
                    names.append(name)
    return names


#: :func:`_named_tools_py` of a call, natively where the kernels are built (``oro_assets.native``: ``named_tools`` finds
#: the blocks as ``_ORO_TAG`` does, without the regex engine's backtracking over a long answer, and calls the reference
#: for a call that is not an exact dict or a block the decoder raises on)
_named_tools: Callable[[dict], list[str] | None] = (
    partial(_kernels.named_tools, _named_tools_py, jsonio.decode) if _kernels is not None else _named_tools_py)


def oro_agentic_richness(listed: list[list[dict]]) -> dict[str, Any]:
    """ORO's ``agentic_richness`` of one dialogue, from its ``proxy_calls`` as ORO bucketed them.

    Per step, walking that step's ``summary`` entries in order: an inference answer sets the tools
    it named as pending; each catalogue dispatch counts as emitted when it is the first pending
    tool, and takes the first pending tool off either way. richness = emitted / dispatches (None
    when the dialogue has no dispatch; ORO reports 0.0 then). Pending tools never carry over to the
    next step's list, so a dispatch whose answer ORO bucketed onto the step before counts as not
    emitted; an answer whose body was dropped (a6b1cf3) names nothing. ``misses`` says which of
    these cost each dispatch that was not counted."""
    return era_and_richness(listed)[2]


def era_and_richness(listed: list[list[dict]]) -> tuple[str | None, dict[str, int], dict[str, Any]]:
    """:func:`recorder_era` and :func:`oro_agentic_richness` of the same calls in one pass (the
    normaliser needs both for every record). The calls are counted by the native kernel where it is built
    (``oro_assets.native``: ``era_counts``, the twin of :func:`_era_counts_py`), else by the reference."""
    if _kernels is not None:
        counts = _kernels.era_counts(listed, CATALOGUE_TOOLS, _str_route, _named_tools, ORO_INFERENCE_PATH,
                                     DROP_LIMIT)
        if counts is not None:  # None: a shape the kernel leaves to the reference (not lists of dicts)
            return _era_and_richness_of(*counts)
    return _era_and_richness_of(*_era_counts_py(listed))


def era_and_richness_py(listed: list[list[dict]]) -> tuple[str | None, dict[str, int], dict[str, Any]]:
    """:func:`era_and_richness` by the Python reference alone."""
    return _era_and_richness_of(*_era_counts_py(listed))


def _era_counts_py(listed: list[list[dict]]) -> tuple[int, int, int, int, int, int, int, int, dict[str, int],
                                                        int, int, int, int]:
    """The counts :func:`era_and_richness` is made of: the six recorder signs (dropped bodies, requests without
    messages, whole lists without ids, requests with messages, ids beside a whole list, whole bodies over the
    limit), the dispatches emitted, the dispatches, the dispatches by tool, and the four kinds of miss."""
    # counted in locals (this runs once per record over every proxy call)
    dropped = no_messages = list_no_ids = with_messages = ids_beside = whole_over = 0
    emitted = dispatches = 0
    by_tool: dict[str, int] = {}
    misses = {"no_answer_in_step": 0, "dropped_body": 0, "no_body": 0, "not_named": 0}
    for bucket in listed:
        pending: list[str] = []
        last: str | None = None  # what the step's latest answer was: "read", "dropped", "none"
        for call in bucket:
            path = call.get("path")
            if type(path) is not str:
                continue  # neither a sign of an era nor a route (a route is read from a string path)
            kind = call.get("kind")
            if kind == "attempt":
                continue
            response = call.get("response")
            truncated = call.get("response_truncated") is True
            if truncated:
                dropped += 1
            if "/inference" in path or path.endswith("/chat/completions"):
                request = call.get("json_data")
                if type(request) is dict:
                    if "messages" in request:
                        with_messages += 1
                    else:
                        no_messages += 1
                if type(response) is dict and _answer_text_length(response) > DROP_LIMIT:
                    whole_over += 1
            elif "/search/find_product" in path and type(response) is list:
                if "result_product_ids" in call:
                    ids_beside += 1
                else:
                    list_no_ids += 1
            if kind != "summary":
                continue
            route = _str_route(path)
            if route == ORO_INFERENCE_PATH:
                named = _named_tools(call) if type(response) is dict else None
                pending = named or []
                last = "read" if named is not None else "dropped" if truncated else "none"
                continue
            tool = CATALOGUE_TOOLS.get(route)
            if tool is None:
                continue
            dispatches += 1
            by_tool[tool] = by_tool.get(tool, 0) + 1
            if pending and pending[0] == tool:
                emitted += 1
            elif last is None:
                misses["no_answer_in_step"] += 1
            elif last == "dropped":
                misses["dropped_body"] += 1
            elif last == "none":
                misses["no_body"] += 1
            else:
                misses["not_named"] += 1
            if pending:
                pending.pop(0)
    return (dropped, no_messages, list_no_ids, with_messages, ids_beside, whole_over, emitted, dispatches, by_tool,
            misses["no_answer_in_step"], misses["dropped_body"], misses["no_body"], misses["not_named"])


def _era_and_richness_of(dropped: int, no_messages: int, list_no_ids: int, with_messages: int, ids_beside: int,
                         whole_over: int, emitted: int, dispatches: int, by_tool: dict[str, int],
                         no_answer_in_step: int, dropped_body: int, no_body: int,
                         not_named: int) -> tuple[str | None, dict[str, int], dict[str, Any]]:
    misses = {"no_answer_in_step": no_answer_in_step, "dropped_body": dropped_body, "no_body": no_body,
              "not_named": not_named}
    signs = {"dropped_bodies": dropped, "requests_without_messages": no_messages,
             "whole_list_without_ids": list_no_ids, "requests_with_messages": with_messages,
             "ids_beside_whole_list": ids_beside, "whole_bodies_over_limit": whole_over}
    old = dropped + no_messages + list_no_ids
    new = with_messages + ids_beside + whole_over
    era = ERA_MIXED if old and new else ERA_A6B1CF3 if old else ERA_LATER if new else None
    richness = {"agentic_richness": round(emitted / dispatches, 6) if dispatches else None, "emitted": emitted,
                "dispatches": dispatches, "by_tool": dict(sorted(by_tool.items())),
                "misses": {k: v for k, v in misses.items() if v}}
    return era, {k: v for k, v in signs.items() if v}, richness
