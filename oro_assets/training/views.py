"""What the model sees: the full chat, or a compact view for the tiny profile.

The compact view shrinks the big parts of an arena prompt: no tool-schema block at all (the
model learns the call protocol from the data; the Qwen3 template then renders no "# Tools"
system block), a one-line system prompt, and tool results cut down (the first few
``find_product`` hits as one line each, fields the task needs first and the id last; other
results cut to a few hundred characters). Per-candidate thinking names candidates by rank. The same functions are applied to the training data
and, through :class:`ViewPolicy`, to the live conversation at inference, so training and
evaluation render identical prompts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

CORE_TOOLS = ("find_product", "view_product_information", "recommend_product", "terminate")
MAX_HITS = 3  # the scripted teacher's choice is rank 1-2 on easy/medium Product problems
MAX_RESULT_CHARS = 300
COMPACT_SYSTEM_PROMPT = "You are a shopping assistant. Search, recommend once, then terminate."


def _compact_schema(tool: dict) -> dict:
    fn = tool.get("function", tool)
    params = fn.get("parameters") or {}
    props = {k: {"type": (v or {}).get("type", "string")} for k, v in (params.get("properties") or {}).items()}
    return {"type": "function", "function": {"name": fn.get("name"), "parameters": {
        "type": "object", "properties": props, "required": list(params.get("required") or [])}}}


def view_tools(tools: Sequence[dict], view: str) -> list[dict]:
    if view == "full":
        return list(tools)
    if view == "core":
        return [_compact_schema(t) for t in tools if t.get("function", t).get("name") in CORE_TOOLS]
    return []


def _fmt_price(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def compact_find_result(content: str) -> str:
    """``find_product`` JSON -> one line per hit: ``title ... | price ... | id ...``."""
    try:
        hits = json.loads(content)
    except (json.JSONDecodeError, TypeError):
        return content[:MAX_RESULT_CHARS]
    if not isinstance(hits, list):
        return content[:MAX_RESULT_CHARS]
    if not hits:
        return "no results"
    lines = []
    for i, hit in enumerate(hits[:MAX_HITS], 1):
        if not isinstance(hit, dict):
            continue
        lines.append(f"{i}. title: {hit.get('title', '')} | price: {_fmt_price(hit.get('price'))} | id: {hit.get('product_id')}")
    return "\n".join(lines)


_CAND_RE = re.compile(r"^\s*(\d{3,}):\s*(.*)$")
_CHOOSE_RE = re.compile(r"\b(Choose|Chose|choose)\s+([\d,\s]+)\.")
_YESNO_RE = re.compile(r"(words|price|service|sku|attributes?)\b[^;]*?\b(yes|no)\b", re.I)


def _result_ids(content: str) -> list[str]:
    try:
        hits = json.loads(content)
    except (json.JSONDecodeError, TypeError):
        return []
    return [str(h.get("product_id")) for h in hits[:MAX_HITS] if isinstance(h, dict)] if isinstance(hits, list) else []


def compact_think(think: str, shown_ids: list[str]) -> str:
    """Per-candidate scaffold lines ``<id>: price .. yes; words no; ..`` -> ``<rank>: price yes; words no``.

    A candidate is named by its rank in the compact result list (the id is copied once, in the
    call), and only the yes/no verdicts are kept. Lines naming ids not shown are dropped; text in
    any other shape is kept unchanged (so the rewrite is idempotent on the model's own output).
    """
    if not shown_ids or not think:
        return think
    rank = {pid: i for i, pid in enumerate(shown_ids, 1)}
    lines = []
    changed = False
    for line in think.split("\n"):
        m = _CAND_RE.match(line)
        if m and m.group(1) in rank:
            verdicts = "; ".join(f"{k.lower()} {v.lower()}" for k, v in _YESNO_RE.findall(m.group(2)))
            lines.append(f"{rank[m.group(1)]}: {verdicts}")
            changed = True
        elif m and len(m.group(1)) >= 5:
            changed = True  # a candidate the compact view does not show
        else:
            lines.append(line)
    text = "\n".join(lines)

    def _choose(mc: re.Match) -> str:
        ids = [x.strip() for x in mc.group(2).split(",") if x.strip()]
        if ids and all(i in rank for i in ids):
            return f"{mc.group(1)} {', '.join(str(rank[i]) for i in ids)}."
        return mc.group(0)

    new = _CHOOSE_RE.sub(_choose, text)
    return new if (changed or new != text) else think


def view_messages(messages: Sequence[dict], view: str) -> list[dict]:
    """Messages as the model sees them (new dicts; the input is not modified)."""
    if view == "full":
        return [dict(m) for m in messages]
    out = []
    shown: list[str] = []
    for m in messages:
        m = dict(m)
        if m.get("role") == "system":
            m["content"] = COMPACT_SYSTEM_PROMPT
        elif m.get("role") == "tool" and isinstance(m.get("content"), str):
            if m.get("name") == "find_product":
                shown = _result_ids(m["content"]) or shown
                m["content"] = compact_find_result(m["content"])
            else:
                m["content"] = m["content"][:MAX_RESULT_CHARS]
        elif m.get("role") == "assistant" and isinstance(m.get("reasoning_content"), str):
            m["reasoning_content"] = compact_think(m["reasoning_content"], shown)
        out.append(m)
    return out


class ViewPolicy:
    """Wraps a model policy so it sees the profile's view of the conversation (batching kept)."""

    def __init__(self, inner: Any, view: str) -> None:
        self.inner = inner
        self.view = view
        self.name = inner.name

    def act(self, problem_view: dict, messages: list[dict], tools: list[dict]):
        return self.inner.act(problem_view, view_messages(messages, self.view), view_tools(tools, self.view))

    def act_batch(self, requests: Sequence[Any]) -> list:
        from oro_assets.agents.local_model import GenerationRequest

        return self.inner.act_batch([
            GenerationRequest(r.problem_view, view_messages(r.messages, self.view), view_tools(r.tools, self.view))
            for r in requests
        ])
