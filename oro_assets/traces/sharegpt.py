"""ShareGPT / NeMo chat rows, read as OpenAI messages (then normalised like any OpenAI row).

Layouts read (a record is ``{"conversations": [...], ...}`` or a bare list of turns):

* a turn is ``{"from": ..., "value": ...}`` (ShareGPT, NeMo) or ``{"role": ..., "content": ...}``;
* roles, case-insensitive: ``system``; ``human``/``user`` → user; ``gpt``/``chatgpt``/``assistant``/``model``
  → assistant; ``tool``/``observation``/``function_response``/``tool_response``/``ipython``/``function`` → tool;
  ``function_call`` → an assistant tool call. Any other role is a :class:`FieldError` (the row is
  quarantined as ``schema_violation`` naming the role), never guessed;
* the system prompt as a record-level ``system`` field (NeMo) or a system turn, or both;
* tool calls as ``<tool_call>`` text in an assistant turn (parsed by :func:`traces.calls.answer_calls`,
  the project's one reader of model answers), or as a ``function_call`` turn whose value is the
  call's JSON (``{"name", "arguments"|"parameters"}``, or a list of them). ``function_call`` turns
  right after an assistant turn (or after each other) are that turn's calls: one model turn, as the
  model wrote it. A block that does not parse stays a call whose arguments are the block's raw
  text, so the gates see (and reject) it;
* tool results: each tool turn (its ``<tool_response>`` blocks, when it has several) answers the
  earliest unanswered call; a result with no call left is kept as an orphan tool message. A user turn
  that holds nothing but ``<tool_response>`` blocks is tool results (how Qwen3's chat template renders
  them, so a NeMo file made from rendered dialogues has them there).

Other record fields (``tools``, ``problem_id``, ``query``, validator metadata) pass through as given.
"""

from __future__ import annotations

import re
from typing import Any

from oro_assets import jsonio
from oro_assets.traces.calls import answer_calls
from oro_assets.traces.formats import FieldError

USER, ASSISTANT, SYSTEM, TOOL, CALL = "user", "assistant", "system", "tool", "function_call"
ROLES: dict[str, str] = {
    "system": SYSTEM,
    "human": USER, "user": USER,
    "gpt": ASSISTANT, "chatgpt": ASSISTANT, "assistant": ASSISTANT, "model": ASSISTANT,
    "tool": TOOL, "observation": TOOL, "function_response": TOOL, "tool_response": TOOL, "ipython": TOOL,
    "function": TOOL,  # OpenAI's legacy role of a function's result
    "function_call": CALL,
}
_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.S)
_RESPONSE = re.compile(r"<tool_response>(.*?)(?:</tool_response>|\Z)", re.S)


def is_turn(item: Any) -> bool:
    """A ShareGPT turn (``from`` + ``value``): how a bare list of them is recognised."""
    return isinstance(item, dict) and "from" in item and "value" in item


def _role_and_text(turn: Any, where: str) -> tuple[str, Any]:
    if not isinstance(turn, dict):
        raise FieldError(f"{where} must be an object, got {type(turn).__name__}")
    key = "from" if "from" in turn else "role"
    raw = turn.get(key)
    if not isinstance(raw, str):
        raise FieldError(f"{where}.{key} must be a string, got {type(raw).__name__}")
    role = ROLES.get(raw.strip().lower())
    if role is None:
        raise FieldError(f"{where}.{key} {raw!r} is not a known role (one of {sorted(ROLES)})")
    return role, turn.get("value", turn.get("content"))


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    raise FieldError(f"{where}.value must be a string, got {type(value).__name__}")


def _openai_call(call: dict) -> dict[str, Any]:
    return {"type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}


def _block_calls(block: str) -> list[dict[str, Any]]:
    """The calls of one ``<tool_call>`` block (the whole tag included); a cut block keeps its raw text."""
    calls, _shape, cut = answer_calls({"content": block})
    if not cut:
        return [_openai_call(c) for c in calls]
    inner = _BLOCK.match(block)
    raw = (inner.group(1) if inner else block).strip()
    return [_openai_call({"name": calls[0]["name"] if calls else "", "arguments": raw})]


def _text_calls(text: str) -> tuple[str, list[dict[str, Any]]]:
    """(the text outside ``<tool_call>`` blocks, the blocks' calls) of an assistant turn."""
    if "<tool_call>" not in text:
        return text, []
    calls = [c for m in _BLOCK.finditer(text) for c in _block_calls(m.group(0))]
    return _BLOCK.sub("", text).strip(), calls


def _function_call(value: Any, where: str) -> list[dict[str, Any]]:
    text = value if isinstance(value, str) else jsonio.dumps(value) if isinstance(value, (dict, list)) else None
    if text is None:
        raise FieldError(f"{where}.value must be a call's JSON, got {type(value).__name__}")
    return _block_calls(f"<tool_call>{text}</tool_call>")


def _only_tool_responses(text: str) -> bool:
    return text.lstrip().startswith("<tool_response>") and not _RESPONSE.sub("", text).strip()


def _tool_results(text: str) -> list[str]:
    if "<tool_response>" not in text:
        return [text]
    return [m.strip() for m in _RESPONSE.findall(text)]


def to_openai(obj: Any) -> dict[str, Any]:
    """The record as an OpenAI-messages record ``{"messages": [...], ...other fields}``.

    ``conversations: null`` gives ``messages: null`` (the normaliser's empty dialogue)."""
    record = obj if isinstance(obj, dict) else {}
    turns = obj if isinstance(obj, list) else obj.get("conversations")
    out = {k: v for k, v in record.items() if k not in ("conversations", "system", "messages")}
    if turns is None:
        out["messages"] = None
        return out
    if not isinstance(turns, list):
        raise FieldError(f"conversations must be a list, got {type(turns).__name__}")
    system = record.get("system")
    if system is not None and not isinstance(system, str):
        raise FieldError(f"system must be a string, got {type(system).__name__}")
    messages: list[dict[str, Any]] = [{"role": SYSTEM, "content": system}] if system else []
    unanswered: list[str] = []  # ids of calls without a result yet, in call order
    n_calls = 0
    for j, turn in enumerate(turns):
        where = f"conversations[{j}]"
        role, value = _role_and_text(turn, where)
        if role == CALL:
            calls = _function_call(value, where)
            last = messages[-1] if messages else None
            if last is None or last["role"] != ASSISTANT:
                last = {"role": ASSISTANT, "content": ""}
                messages.append(last)
        elif role == ASSISTANT:
            content, calls = _text_calls(_text(value, where))
            last = {"role": ASSISTANT, "content": content}
            messages.append(last)
        elif role == TOOL:
            text = value if isinstance(value, str) else jsonio.dumps(value)
            for result in _tool_results(text):
                cid = unanswered.pop(0) if unanswered else None
                messages.append({"role": TOOL, "tool_call_id": cid, "content": result})
            continue
        else:
            text = _text(value, where)
            if role == USER and _only_tool_responses(text):  # Qwen3 renders tool results as a user turn
                for result in _tool_results(text):
                    cid = unanswered.pop(0) if unanswered else None
                    messages.append({"role": TOOL, "tool_call_id": cid, "content": result})
            elif not (role == SYSTEM and messages and messages[0] == {"role": SYSTEM, "content": text}):
                messages.append({"role": role, "content": text})
            continue
        if calls:
            for call in calls:
                call["id"] = f"sharegpt_{n_calls}"
                unanswered.append(call["id"])
                n_calls += 1
            last["tool_calls"] = [*last.get("tool_calls", ()), *calls]
    out["messages"] = messages
    return out
