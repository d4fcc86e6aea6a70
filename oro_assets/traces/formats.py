"""Detection of the four raw firehose formats and the field-level parsing they share.

Formats (reference §2):

* ``oro_envelope`` — ``{"problem_id", "status", "error", "dialogue": [step...] | null, ...metadata}``
* ``dialogue_only`` — the per-problem S3 payload: the ``dialogue`` array of ORO steps alone
* ``shoppingbench_rollout`` — steps that carry ``prompt`` (system+user messages) and put results in
  ``message.obs = [{"tool_call_id", "results"}]``; a bare list, or ``{"steps"|"trajectory": [...]}``
* ``openai_messages`` — ``{"messages": [...], "tools": [...]}`` (a bare list of role messages too)

Everything here is pure and total on arbitrary JSON values: hostile input gives ``None``/empty
results or a :class:`FieldError`, never another exception.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from oro_assets import jsonio
from oro_assets.native import kernels as _kernels
from oro_assets.toolcalls import decode_block, scan_blocks
from oro_assets.traces.calls import answer_calls

CONTENT_LIMIT = 2000
_MAX_ID_DEPTH = 6


class Format(StrEnum):
    ORO_ENVELOPE = "oro_envelope"
    DIALOGUE_ONLY = "dialogue_only"
    SHOPPINGBENCH_ROLLOUT = "shoppingbench_rollout"
    OPENAI_MESSAGES = "openai_messages"
    SHAREGPT = "sharegpt"  # ShareGPT / NeMo ``conversations``: traces/sharegpt.py


class FieldError(ValueError):
    """A field of a recognised format has the wrong type (becomes SCHEMA_VIOLATION)."""


VALIDATOR_META_KEYS = (
    "eval_run_id", "agent_version_id", "miner_hotkey", "race_id", "suite_version", "category",
    "query", "recorded_at", "score", "reasoning",
    # envelope run statistics: useful evidence for the structural filter
    "execution_time", "inference_failure_count", "inference_total",
)
_ROLLOUT_CONTAINER_KEYS = ("steps", "trajectory", "rollout")


def _is_rollout_step(step: dict) -> bool:
    if "prompt" in step:
        return True
    comp = step.get("completion")
    msg = comp.get("message") if isinstance(comp, dict) else step.get("message")
    return isinstance(msg, dict) and "obs" in msg


def _first_dict(items: list) -> dict | None:
    for item in items:
        if isinstance(item, dict):
            return item
    return None


def _classify_step_list(items: list) -> Format | None:
    if not items:
        return Format.DIALOGUE_ONLY  # an empty payload: known format, empty dialogue
    first = _first_dict(items)
    if first is None:
        return None
    if _is_rollout_step(first):
        return Format.SHOPPINGBENCH_ROLLOUT
    if "completion" in first or "extra_info" in first:
        return Format.DIALOGUE_ONLY
    if "role" in first:
        return Format.OPENAI_MESSAGES
    if "from" in first and "value" in first:
        return Format.SHAREGPT
    return None


def detect_format(obj: Any) -> Format | None:
    """The record's format, or ``None`` when it is none of the four."""
    if isinstance(obj, list):
        return _classify_step_list(obj)
    if not isinstance(obj, dict):
        return None
    if "dialogue" in obj:
        dialogue = obj["dialogue"]
        if isinstance(dialogue, list) and dialogue:
            first = _first_dict(dialogue)
            if first is not None and _is_rollout_step(first):
                return Format.SHOPPINGBENCH_ROLLOUT
        return Format.ORO_ENVELOPE
    if "messages" in obj:
        return Format.OPENAI_MESSAGES
    if "conversations" in obj:
        return Format.SHAREGPT
    for key in _ROLLOUT_CONTAINER_KEYS:
        steps = obj.get(key)
        # a container of steps is a rollout export whether or not its steps carry `prompt`
        if isinstance(steps, list) and _classify_step_list(steps) in (
                Format.SHOPPINGBENCH_ROLLOUT, Format.DIALOGUE_ONLY):
            return Format.SHOPPINGBENCH_ROLLOUT
    return None


def step_list(obj: Any, fmt: Format) -> tuple[list | None, dict]:
    """(the list of steps or messages — ``None`` when null, the record-level dict or ``{}``)."""
    if isinstance(obj, list):
        return obj, {}
    if fmt is Format.OPENAI_MESSAGES:
        return obj.get("messages"), obj
    if "dialogue" in obj:
        return obj.get("dialogue"), obj
    for key in _ROLLOUT_CONTAINER_KEYS:
        if isinstance(obj.get(key), list):
            return obj[key], obj
    return None, obj


# ---------------------------------------------------------------- scalar helpers


def _where(field: str, step: int | None) -> str:
    return field if step is None else f"step {step}.{field}"


def opt_str(value: Any, field: str, step: int | None = None) -> str | None:
    """``value`` if a string or None; else :class:`FieldError` naming ``field`` (of ``step``)."""
    if value is None or type(value) is str:
        return value
    raise FieldError(f"{_where(field, step)} must be a string or null, got {type(value).__name__}")


def opt_dict(value: Any, field: str, step: int | None = None) -> dict:
    if type(value) is dict:
        return value
    if value is None:
        return {}
    raise FieldError(f"{_where(field, step)} must be an object or null, got {type(value).__name__}")


def opt_list(value: Any, field: str, step: int | None = None) -> list:
    if type(value) is list:
        return value
    if value is None:
        return []
    raise FieldError(f"{_where(field, step)} must be a list or null, got {type(value).__name__}")


def as_timestamp(value: Any) -> int | None:
    """Milliseconds as int; anything else (missing, string, NaN, bool) is ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else None
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return None


# ---------------------------------------------------------------- arguments and results


#: JSON text (the project's codec), bound directly: the normaliser encodes ~10 values a record
dumps = jsonio.dumps


def arguments_json(parameters: Any) -> str:
    """The one stored form of tool-call arguments: a JSON string.

    A dict is encoded; a string that parses as JSON is re-encoded compactly; a string that does not
    parse is kept verbatim so the gates can still see (and reject) unparseable arguments.
    """
    if parameters is None:
        return "{}"
    if isinstance(parameters, str):
        try:
            return jsonio.dumps(jsonio.loads(parameters))
        except jsonio.JSONDecodeError:
            return parameters
    return dumps(parameters)


def result_json(result: Any) -> str:
    """Tool message content: strings stay as the model saw them, anything else is JSON-encoded."""
    if type(result) is str:
        return result
    return dumps(result)


def _collect_ids(value: Any, out: dict[str, None], depth: int) -> None:
    """Collect ``product_id`` values; a dict that has one is a product and is not searched further."""
    if depth > _MAX_ID_DEPTH:
        return
    if type(value) is list:
        for item in value:
            if type(item) is dict:
                pid = item.get("product_id")
                if pid is None:
                    _collect_ids(item, out, depth + 1)
                elif type(pid) is str:
                    if pid:
                        out[pid] = None
                elif type(pid) is int:
                    out[str(pid)] = None
            elif type(item) is list:
                _collect_ids(item, out, depth + 1)
    elif type(value) is dict:
        pid = value.get("product_id")
        if pid is None:
            for item in value.values():
                if type(item) is dict or type(item) is list:
                    _collect_ids(item, out, depth + 1)
        elif type(pid) is str:
            if pid:
                out[pid] = None
        elif type(pid) is int:
            out[str(pid)] = None


_NOT_JSON = object()


def _result_value(value: Any) -> Any:
    """A tool result as the id walk reads it: JSON text of a list/dict parsed, any other text ``_NOT_JSON``."""
    if isinstance(value, str):
        if not value.lstrip().startswith(("[", "{")):
            return _NOT_JSON
        try:
            return jsonio.loads(value)
        except jsonio.JSONDecodeError:
            return _NOT_JSON
    return value


def product_ids(value: Any) -> list[str]:
    """Product ids found in a tool result (list/dict, or JSON text of one), first-seen order. The walk over the
    parsed value is the native kernel's where it is built (``oro_assets.native``: ``collect_ids``, the twin of
    :func:`_collect_ids`), else the reference's; :func:`product_ids_py` is the reference end to end."""
    value = _result_value(value)
    if value is _NOT_JSON:
        return []
    if _kernels is not None:
        return _kernels.collect_ids(value, _MAX_ID_DEPTH)
    out: dict[str, None] = {}
    _collect_ids(value, out, 0)
    return list(out)


def product_ids_py(value: Any) -> list[str]:
    """:func:`product_ids` by the Python reference alone."""
    value = _result_value(value)
    if value is _NOT_JSON:
        return []
    out: dict[str, None] = {}
    _collect_ids(value, out, 0)
    return list(out)


def id_list(value: Any) -> list[str] | None:
    """A ``result_product_ids`` field as a list of strings (``None`` if absent or malformed)."""
    if not isinstance(value, list):
        return None
    out: dict[str, None] = {}
    for item in value:
        if isinstance(item, str):
            out[item] = None
        elif isinstance(item, int) and not isinstance(item, bool):
            out[str(item)] = None
    return list(out)


# ---------------------------------------------------------------- harness content


_THINK = re.compile(r"<think>(.*?)(?:</think>|\Z)", re.S)
def split_content(content: str) -> tuple[str, list[dict], str]:
    """(think, tool calls, response text) recovered from harness/Qwen3 assistant text.

    Used only when a step has no structured ``message``. Blocks are read by the one parser
    (``oro_assets.toolcalls``); a block it cannot decode keeps its raw text as the arguments of a call
    named ``""`` so the gates see it.
    """
    think_parts = _THINK.findall(content)
    rest = _THINK.sub("", content)
    calls: list[dict] = []
    blocks, response = scan_blocks(rest)
    for body, _closed in blocks:
        parsed, _error = decode_block(body)
        if parsed is None:
            calls.append({"name": "", "parameters": body.strip()})
            continue
        for item in parsed if isinstance(parsed, list) else [parsed]:
            if isinstance(item, dict):
                params = item["arguments"] if "arguments" in item else item.get("parameters")
                calls.append({"name": item.get("name"), "parameters": params})
    return "\n".join(p.strip() for p in think_parts).strip(), calls, response.strip()


def think_and_text(content: str) -> tuple[str, str]:
    """Split a leading ``<think>`` block off an assistant content string."""
    if "<think>" not in content:
        return "", content
    think_parts = _THINK.findall(content)
    return "\n".join(p.strip() for p in think_parts).strip(), _THINK.sub("", content).strip()


# ---------------------------------------------------------------- proxy-call evidence


_RE_TOKENS = re.compile(r'"completion_tokens"\s*:\s*(\d+)')
# A name cut by the 2000-char truncation is kept as the prefix seen (the entry says truncated=True).
_RE_NAME = re.compile(r'"name"\s*:\s*"([^"\\]*(?:\\.[^"\\]*)*)(?:"|\\?\Z)')
_RE_CONTENT = re.compile(r'"content"\s*:\s*"([^"\\]*(?:\\.[^"\\]*)*)')


_RE_CUT_ESCAPE = re.compile(r'\\(?:u[0-9a-fA-F]{0,3}|u[dD][89abAB][0-9a-fA-F]{2}(?:\\u?[0-9a-fA-F]{0,3})?)?\Z')


def _unescape(fragment: str) -> str:
    """A JSON string body decoded; a body cut mid-escape (truncated at 2000 characters) loses only
    the cut escape, not the decoding of the rest."""
    try:
        return jsonio.loads(f'"{fragment}"')
    except jsonio.JSONDecodeError:
        pass
    cut = _RE_CUT_ESCAPE.sub("", fragment)
    try:
        return jsonio.loads(f'"{cut}"')
    except jsonio.JSONDecodeError:
        return fragment


def _evidence_from_text(body: str) -> tuple[int | None, list[str], str]:
    """Best-effort evidence from a truncated (unparseable) chat-completion body."""
    m = _RE_TOKENS.search(body)
    tokens = int(m.group(1)) if m and len(m.group(1)) < 12 else None
    names: list[str] = []
    pos = body.find('"tool_calls"')
    if pos >= 0:
        names = [_unescape(n) for n in _RE_NAME.findall(body, pos)]
    c = _RE_CONTENT.search(body)
    content = _unescape(c.group(1)) if c else ""
    return tokens, names, content


_UNPARSED = object()


def inference_evidence(call: dict) -> dict[str, Any]:
    """Evidence of one inference proxy call: what the model itself returned.

    ``tool_calls`` are the calls read from the answer (any shape, traces/calls.py); ``dropped``: ORO
    kept no body (over 2,000 characters), only ``response_length``; ``truncated``: no complete
    body to read (dropped, or a legacy cut prefix)."""
    resp = call.get("response")
    truncated = call.get("response_truncated") is True
    dropped = truncated and "response" not in call
    tokens: Any = None
    names: list[str] = []
    parsed_calls: list[dict] = []
    shape = "none"
    cut = False
    content: Any = ""
    if type(resp) is str:
        body, resp = resp, _UNPARSED
        if not truncated:  # a body cut at 2000 characters never parses: go straight to the scan
            try:
                resp = jsonio.loads(body)
            except jsonio.JSONDecodeError:
                resp = _UNPARSED
        if resp is _UNPARSED:
            tokens, names, content = _evidence_from_text(body)
            truncated = cut = True
            resp = None
    if type(resp) is dict:
        usage = resp.get("usage")
        if type(usage) is dict:
            tokens = usage.get("completion_tokens")
            if type(tokens) is not int or not -(2**63) <= tokens < 2**63:
                tokens = None
        choices = resp.get("choices")
        if type(choices) is list:
            for choice in choices:
                msg = choice.get("message") if type(choice) is dict else None
                if type(msg) is not dict:
                    continue
                if not content:
                    content = msg.get("content") or ""
                    if type(content) is not str:
                        content = ""
                got, got_shape, got_cut = answer_calls(msg)
                if got_shape != "none" and shape == "none":
                    shape = got_shape
                cut = cut or got_cut
                parsed_calls.extend(got)
        names = names + [c["name"] for c in parsed_calls]
    status = call.get("status_code")
    if type(status) is not int or not -(2**63) <= status < 2**63:
        status = None
    length = call.get("response_length")
    ts = call.get("timestamp")
    out = {"completion_tokens": tokens, "tool_call_names": names, "tool_calls": parsed_calls,
           "answer_shape": shape, "cut": cut,
           "content": content if len(content) <= CONTENT_LIMIT else content[:CONTENT_LIMIT],
           "status_code": status, "truncated": truncated, "dropped": dropped,
           "response_length": length if type(length) is int and 0 <= length < 2**63 else None,
           "timestamp": ts if type(ts) is int and -(2**63) <= ts < 2**63 else None}
    if len(content) > CONTENT_LIMIT:  # a whole long answer (later recorder): the evidence says what it cut
        out["content_chars"] = len(content)
    return out


def inference_succeeded(status_code: Any) -> bool:
    """An inference call succeeded: no status recorded, or 2xx (the structural filter and the judge)."""
    if status_code is None:
        return True
    try:
        return 200 <= int(status_code) < 300
    except (TypeError, ValueError):
        return False


def search_evidence(call: dict, path: str) -> dict[str, Any]:
    params = call.get("params")
    if not isinstance(params, dict):
        params = call.get("json_data")
    if not isinstance(params, dict):
        params = {}
    ids = id_list(call.get("result_product_ids"))
    if ids is None:
        ids = product_ids(call.get("response"))
    ts = call.get("timestamp")
    return {"path": path, "params": params, "result_product_ids": ids,
            "timestamp": ts if type(ts) is int and -(2**63) <= ts < 2**63 else None}


def proxy_evidence(proxy_calls: list) -> tuple[list[dict], list[dict]]:
    """(inference evidence, search evidence) of one step's proxy calls; ``attempt`` retries skipped. Read by the
    native kernel where it is built (``oro_assets.native``: ``proxy_evidence``, the twin of
    :func:`proxy_evidence_py`, with this module's own helpers for what it reads as text), else by the reference."""
    if _kernels is not None:
        return _kernels.proxy_evidence(proxy_calls, answer_calls, _evidence_from_text, jsonio.loads,
                                       jsonio.JSONDecodeError, product_ids, _MAX_ID_DEPTH, CONTENT_LIMIT)
    return proxy_evidence_py(proxy_calls)


def proxy_evidence_py(proxy_calls: list) -> tuple[list[dict], list[dict]]:
    """:func:`proxy_evidence` by the Python reference: :func:`inference_evidence` and :func:`search_evidence`."""
    inference: list[dict] = []
    search: list[dict] = []
    for call in proxy_calls:
        if type(call) is not dict or call.get("kind") == "attempt":
            continue
        path = call.get("path")
        if type(path) is not str:
            continue
        if "/inference" in path or path.endswith("/chat/completions"):
            inference.append(inference_evidence(call))
        elif "/search" in path:
            search.append(search_evidence(call, path))
    return inference, search
