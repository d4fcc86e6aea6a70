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
from typing import Any
from urllib.parse import unquote_plus

from oro_assets import jsonio

#: The think text of ORO's reference-agent auto-recommend step (written by code, no inference).
FALLBACK_THINK = "Auto-recommending best available candidates."

_TOOL_BLOCK = re.compile(r"<tool_call>(.*?)(</tool_call>|\Z)", re.S)
_NAME = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
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


def _block_calls(block: str) -> tuple[list[dict], bool]:
    """Calls of one ``<tool_call>`` block: (calls, cut)."""
    text = block.strip()
    try:
        parsed = jsonio.loads(text)
    except jsonio.JSONDecodeError:
        return [{"name": n, "arguments": None} for n in _NAME.findall(text)], True
    items = parsed if isinstance(parsed, list) else [parsed]
    calls = []
    cut = False
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            args = item.get("parameters", item.get("arguments"))
            calls.append({"name": item["name"], "arguments": _arguments(args)})
        else:
            cut = True  # an entry that is not a call object
    return calls, cut


def answer_calls(message: Any) -> tuple[list[dict], str, bool]:
    """(calls ``{name, arguments}``, shape, cut) of one chat-completion ``message``.

    ``shape``: ``structured``, ``text_array``, ``qwen3_object`` or ``none`` (no call in the answer)."""
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
    if not isinstance(content, str) or "<tool_call>" not in content:
        return [], "none", False
    calls = []
    cut = False
    shape = "qwen3_object"
    for block, closing in _TOOL_BLOCK.findall(content):
        if block.lstrip().startswith("["):
            shape = "text_array"
        got, was_cut = _block_calls(block)
        calls.extend(got)
        cut = cut or was_cut or not closing
    return calls, shape, cut


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


def attribute_calls(stamps: list[Any], listed: list[list[dict]], run_started_ms: int | None = None,
                    ) -> tuple[list[list[dict]], str]:
    """Per step, the proxy calls made for it, and a note on how they were attributed.

    ``stamps``: each step's ``timestamp``; ``listed``: each step's ``proxy_calls`` as recorded."""
    calls = [c for bucket in listed for c in bucket]
    if not calls:
        return [[] for _ in listed], "no proxy calls"
    ints = [_stamp(s) for s in stamps]
    problem = None
    if any(s is None for s in ints):
        problem = f"{sum(s is None for s in ints)} step stamp(s) missing or not integer ms"
    elif any(b < a for a, b in zip(ints, ints[1:], strict=False)):
        problem = "step stamps out of order"
    if problem is not None:
        turns = _turns(calls)
        if turns is not None and len(turns) == len(listed):
            return turns, f"{problem}: the calls' own sequence split into one turn per step"
        return [list(b) for b in listed], f"{problem}: calls left on the step that lists them"
    out: list[list[dict]] = [[] for _ in listed]
    unstamped = after = early = 0
    for pos, bucket in enumerate(listed):
        for call in bucket:
            ts = _stamp(call.get("timestamp"))
            if ts is None:
                unstamped += 1
                out[pos].append(call)
                continue
            if run_started_ms is not None and ts < run_started_ms:
                early += 1
            k = next((i for i, s in enumerate(ints) if ts <= s), None)
            if k is None:
                after += 1
                k = len(ints) - 1
            out[k].append(call)
    for bucket in out:
        bucket.sort(key=lambda c: _stamp(c.get("timestamp")) or 0)
    notes = ["calls attributed by step stamps"]
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
