"""The canonical normalised trace: Arrow schema, validation and conversion at the edges.

Stored forms (docs/architecture.md): ``messages``, ``tools``, ``steps``, ``meta`` are JSON strings;
tool-call ``arguments`` inside messages are JSON strings (OpenAI API form). Use
:func:`parse_json_columns` to get Python values, :func:`arguments_dict` for a dict at the edge
(HF chat templates), :func:`to_hf_messages` for dataset rows with a fixed key set.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pyarrow as pa

from oro_assets import jsonio

FORMATS = ("oro_envelope", "dialogue_only", "shoppingbench_rollout", "openai_messages", "sharegpt")
JSON_COLUMNS = ("messages", "tools", "steps", "meta")
MESSAGE_KEYS = ("role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name")

NORMALIZED_SCHEMA = pa.schema([
    pa.field("trace_id", pa.string(), nullable=False),
    pa.field("partition", pa.string(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("line_no", pa.int64(), nullable=False),
    pa.field("raw_sha256", pa.string(), nullable=False),
    pa.field("format", pa.string(), nullable=False),
    pa.field("problem_id", pa.string()),
    pa.field("query", pa.string()),
    pa.field("status", pa.string()),
    pa.field("error", pa.string()),
    pa.field("meta", pa.string(), nullable=False),
    pa.field("messages", pa.string(), nullable=False),
    pa.field("tools", pa.string(), nullable=False),
    pa.field("steps", pa.string(), nullable=False),
    pa.field("n_steps", pa.int64(), nullable=False),
    pa.field("n_tool_calls", pa.int64(), nullable=False),
])

# One row per record set aside at ingest/normalisation. ``raw_sha256`` is null only for the
# unreadable rest of a corrupt or oversized part; ``line_no`` is then the first line not read.
QUARANTINE_SCHEMA = pa.schema([
    pa.field("trace_id", pa.string(), nullable=False),
    pa.field("partition", pa.string(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("line_no", pa.int64(), nullable=False),
    pa.field("raw_sha256", pa.string()),
    pa.field("format", pa.string()),
    pa.field("stage", pa.string(), nullable=False),
    pa.field("reason", pa.string(), nullable=False),
    pa.field("detail", pa.string(), nullable=False),
])

_SHA = re.compile(r"^[0-9a-f]{64}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a raw record came from. ``raw_sha256`` hashes the line's bytes without its terminator."""

    source_file: str
    line_no: int
    partition: str
    raw_sha256: str
    trace_id: str | None = None  # default: trace_id_for(raw_sha256)


def trace_id_for(raw_sha256: str) -> str:
    return "tr_" + raw_sha256[:24]


def synthetic_trace_id(*parts: object) -> str:
    """Trace id for a ledger row without a raw line of its own (e.g. the unreadable rest of a part)."""
    text = "\x1f".join(str(p) for p in parts)
    return "tr_" + hashlib.sha256(text.encode()).hexdigest()[:24]


# --------------------------------------------------------------------------- default tools

@lru_cache(maxsize=1)
def default_tools_json() -> str:
    """JSON of the arena's ``TOOL_SCHEMAS`` (what records without ``tools`` were run with)."""
    from oro_assets.arena.tools import TOOL_SCHEMAS  # lazy: keeps `traces` importable on its own

    return jsonio.dumps(TOOL_SCHEMAS)


# --------------------------------------------------------------------------- edge conversions


def arguments_dict(arguments: str | dict[str, Any]) -> dict[str, Any]:
    """Tool-call arguments as a dict (HF chat-template form). Raises ``ValueError`` if not a JSON object."""
    if isinstance(arguments, dict):
        return arguments
    if not isinstance(arguments, str):
        raise ValueError(f"arguments must be a JSON string, got {type(arguments).__name__}")
    try:
        value = jsonio.loads(arguments)
    except jsonio.JSONDecodeError as exc:
        raise ValueError(f"arguments are not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"arguments must be a JSON object, got {type(value).__name__}")
    return value


def _loads_if_str(value: Any) -> Any:
    return jsonio.loads(value) if isinstance(value, str | bytes) else value


def parse_json_columns(row: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``row`` with the JSON columns (and ``error``) parsed; already-parsed values pass."""
    out = dict(row)
    for col in JSON_COLUMNS:
        if col in out and out[col] is not None:
            out[col] = _loads_if_str(out[col])
    if isinstance(out.get("error"), str):
        out["error"] = jsonio.loads(out["error"])
    return out


def to_hf_messages(messages: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages with the fixed key set of HF dataset rows (missing keys ``None``; arguments stay strings)."""
    msgs = _loads_if_str(messages)
    out = []
    for m in msgs:
        row = {k: m.get(k) for k in MESSAGE_KEYS}
        if row["tool_calls"] is not None:
            row["tool_calls"] = [
                {"id": tc["id"], "type": "function",
                 "function": {"name": tc["function"]["name"], "arguments": tc["function"]["arguments"]}}
                for tc in row["tool_calls"]
            ]
        out.append(row)
    return out


def to_oro_steps(row: dict[str, Any]) -> list[dict[str, Any]]:
    """Render a normalised row back into ORO steps (think, calls + parameters + results, timestamps).

    Proxy calls are not reproduced: only their evidence is stored. Call ids are the canonical ones.
    """
    r = parse_json_columns(row)
    results: dict[str, Any] = {}
    for m in r["messages"]:
        if m.get("role") == "tool":
            results[m["tool_call_id"]] = m["content"]
    assistants = [m for m in r["messages"] if m.get("role") == "assistant"]
    steps = []
    for ev, msg in zip(r["steps"], assistants, strict=False):
        calls = []
        for tc in msg.get("tool_calls") or []:
            fn = tc["function"]
            try:
                params: Any = arguments_dict(fn["arguments"])
            except ValueError:
                params = fn["arguments"]
            call = {"name": fn["name"], "parameters": params, "tool_call_id": tc["id"]}
            if tc["id"] in results:
                content = results[tc["id"]]
                try:
                    call["result"] = jsonio.loads(content)
                except jsonio.JSONDecodeError:
                    call["result"] = content
            calls.append(call)
        steps.append({
            "completion": {"reasoning_content": "", "message": {
                "think": msg.get("reasoning_content") or "", "tool_call": calls, "response": msg.get("content") or ""}},
            "extra_info": {"step": ev["step"], "query": r.get("query"), "timestamp": ev["timestamp"],
                           "problem_id": r.get("problem_id")},
        })
    return steps


# --------------------------------------------------------------------------- validation


def _check_messages(messages: Any, problems: list[str]) -> tuple[int, set[str]]:
    """Checks message shapes; returns (number of tool calls, call ids)."""
    if not isinstance(messages, list):
        problems.append("messages is not a list")
        return 0, set()
    n_calls = 0
    ids: set[str] = set()
    for j, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in _ROLES:
            problems.append(f"messages[{j}] has no valid role")
            continue
        if not isinstance(m.get("content"), str):
            problems.append(f"messages[{j}].content is not a string")
        role = m["role"]
        if role == "assistant":
            rc = m.get("reasoning_content")
            if rc is not None and not isinstance(rc, str):
                problems.append(f"messages[{j}].reasoning_content is not a string or null")
            tcs = m.get("tool_calls", [])
            if not isinstance(tcs, list):
                problems.append(f"messages[{j}].tool_calls is not a list")
                continue
            for i, tc in enumerate(tcs):
                fn = tc.get("function") if isinstance(tc, dict) else None
                if (not isinstance(fn, dict) or not isinstance(fn.get("name"), str)
                        or not isinstance(fn.get("arguments"), str) or tc.get("type") != "function"):
                    problems.append(f"messages[{j}].tool_calls[{i}] is not {{id, type: function, function: {{name, arguments: str}}}}")
                    continue
                cid = tc.get("id")
                if not isinstance(cid, str) or not cid.startswith("call_"):
                    problems.append(f"messages[{j}].tool_calls[{i}].id is not a call_<step>_<i> id")
                elif cid in ids:
                    problems.append(f"duplicate tool call id {cid}")
                else:
                    ids.add(cid)
                n_calls += 1
        elif role == "tool" and (not isinstance(m.get("tool_call_id"), str) or not isinstance(m.get("name"), str)):
            problems.append(f"messages[{j}] (tool) lacks a string tool_call_id or name")
    return n_calls, ids


def _check_steps(steps: Any, problems: list[str]) -> int:
    if not isinstance(steps, list):
        problems.append("steps is not a list")
        return -1
    for k, s in enumerate(steps):
        if not isinstance(s, dict):
            problems.append(f"steps[{k}] is not an object")
            continue
        missing = {"step", "timestamp", "think", "tool_calls", "inference", "search"} - set(s)
        if missing:
            problems.append(f"steps[{k}] lacks {sorted(missing)}")
            continue
        for c in s["tool_calls"]:
            if not isinstance(c, dict) or not isinstance(c.get("arguments"), str) or not isinstance(c.get("result_product_ids"), list):
                problems.append(f"steps[{k}].tool_calls has a malformed call")
        for inf in s["inference"]:
            if not isinstance(inf, dict) or len(inf.get("content", "")) > 2000:
                problems.append(f"steps[{k}].inference has a malformed entry")
    return len(steps)


def validate_row(row: dict[str, Any]) -> list[str]:
    """Problems of one normalised row against the canonical schema ([] = valid).

    Unpaired tool calls are *not* schema problems (the format gate rejects them with its own code).
    """
    problems: list[str] = []
    for f in NORMALIZED_SCHEMA:
        value = row.get(f.name)
        if value is None:
            if not f.nullable:
                problems.append(f"{f.name} is missing")
            continue
        want = int if pa.types.is_integer(f.type) else str
        if not isinstance(value, want) or isinstance(value, bool):
            problems.append(f"{f.name} is {type(value).__name__}, expected {want.__name__}")
    if problems:
        return problems
    if not _SHA.match(row["raw_sha256"]):
        problems.append("raw_sha256 is not 64 hex characters")
    elif not row["trace_id"].startswith(trace_id_for(row["raw_sha256"])):
        problems.append("trace_id does not derive from raw_sha256")
    if not _DATE.match(row["partition"]):
        problems.append("partition is not YYYY-MM-DD")
    if row["format"] not in FORMATS:
        problems.append(f"format {row['format']!r} is unknown")
    if row["line_no"] < 1:
        problems.append("line_no is not 1-based")
    try:
        parsed = parse_json_columns(row)
    except jsonio.JSONDecodeError as exc:
        return [*problems, f"a JSON column does not parse: {exc}"]
    n_calls, _ = _check_messages(parsed["messages"], problems)
    n_steps = _check_steps(parsed["steps"], problems)
    tools = parsed["tools"]
    if not isinstance(tools, list) or not all(
            isinstance(t, dict) and isinstance(t.get("function"), dict) and isinstance(t["function"].get("name"), str)
            for t in tools):
        problems.append("tools is not a list of function schemas")
    if not isinstance(parsed["meta"], dict):
        problems.append("meta is not an object")
    if n_calls != row["n_tool_calls"]:
        problems.append(f"n_tool_calls={row['n_tool_calls']} but messages hold {n_calls} calls")
    if n_steps >= 0 and n_steps != row["n_steps"]:
        problems.append(f"n_steps={row['n_steps']} but steps has {n_steps}")
    return problems
