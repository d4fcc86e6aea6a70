"""What the model sees: the full chat, or a compact view for the tiny profile.

The compact view shrinks the big parts of an arena prompt and names products by short handles:

* no tool-schema block (the model learns the call protocol from the data; the Qwen3 template then
  renders no "# Tools" system block) and a one-line system prompt;
* **product handles**: the i-th distinct product the episode has shown the model is called ``i``
  (``1``, ``2``, ...). ``find_product`` results become one line per hit (the first ``MAX_HITS``):
  ``1. title: ... | price: ... | service: ... | shop: 1``; ``view_product_information`` results one line per
  product with its SKU options and attributes; product ids in the model's own thinking and in
  ``product_ids`` arguments are rewritten to handles. Other tool results are cut to a few hundred
  characters;
* **shop handles**: shops are numbered the same way, in their own series, so a Shop request's later items can
  be searched within the first item's shop (``find_product``'s ``shop_id`` argument takes the handle). Without
  them the view hid every shop id and the model had to produce a 7-digit ``shop_id`` it had never been shown;
* per-candidate verdict lines of the thinking keep only their yes/no verdicts.

The same functions are applied to the training data and, through :class:`ViewPolicy`, to the live
conversation at inference, so training and evaluation render identical prompts. At inference
:class:`ViewPolicy` maps handles in the model's ``product_ids`` arguments back to the real ids
before the arena sees the call, so tools, recorded trajectories and scoring only ever see real ids
(a handle the episode never showed passes through unchanged and fails like any unknown id). The
model still has to choose the product: the view spares a 0.7M-parameter model copying a 10-digit
id token by token, which it learns far more slowly than the choice itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from oro_assets import jsonio
from oro_assets.toolcalls import FIND_PRODUCT, RECOMMEND_PRODUCT, TERMINATE, VIEW_PRODUCT_INFORMATION

CORE_TOOLS = (FIND_PRODUCT, VIEW_PRODUCT_INFORMATION, RECOMMEND_PRODUCT, TERMINATE)
# The hits a ``find_product`` result shows: the scripted miners choose among the first 5 (their candidates), so a
# view of 3 hid the chosen product of 10% of curated Product rows (issue 18); a row whose recommendation the view
# still does not show is set aside by ``unseen_recommendations`` (training.data.sft_training_rows).
MAX_HITS = 5
MAX_RESULT_CHARS = 300
MAX_INFO_CHARS = 200
COMPACT_SYSTEM_PROMPT = "You are a shopping assistant. Search, recommend once, then terminate."
_ID_ARG = "product_ids"
_SHOP_ARG = "shop_id"


class Handles:
    """Per-episode handles: the i-th distinct product shown is ``str(i)``; shops are numbered in their own series."""

    def __init__(self) -> None:
        self.by_id: dict[str, str] = {}
        self.by_handle: dict[str, str] = {}
        self.shop_by_id: dict[str, str] = {}
        self.shop_by_handle: dict[str, str] = {}

    @staticmethod
    def _number(value: Any, by_id: dict[str, str], by_handle: dict[str, str]) -> str:
        key = str(value)
        if key not in by_id:
            handle = str(len(by_id) + 1)
            by_id[key] = handle
            by_handle[handle] = key
        return by_id[key]

    def add(self, product_id: Any) -> str:
        return self._number(product_id, self.by_id, self.by_handle)

    def add_shop(self, shop_id: Any) -> str:
        return self._number(shop_id, self.shop_by_id, self.shop_by_handle)

    def _map_ids(self, value: Any, table: dict[str, str]) -> Any:
        if isinstance(value, list):
            return [table.get(str(x).strip(), x) for x in value]
        if isinstance(value, str):
            return ",".join(table.get(p.strip(), p.strip()) for p in value.split(","))
        return value

    def _map_args(self, arguments: dict, products: dict[str, str], shops: dict[str, str]) -> dict:
        out = arguments
        if _ID_ARG in arguments:
            out = {**out, _ID_ARG: self._map_ids(arguments[_ID_ARG], products)}
        shop = arguments.get(_SHOP_ARG)
        if isinstance(shop, (str, int)) and str(shop).strip() in shops:
            out = {**out, _SHOP_ARG: shops[str(shop).strip()]}
        return out

    def to_handles(self, arguments: dict) -> dict:
        """Tool arguments with real product and shop ids replaced by handles (model side)."""
        return self._map_args(arguments, self.by_id, self.shop_by_id)

    def to_ids(self, arguments: dict) -> dict:
        """Tool arguments with handles replaced by the real product and shop ids (arena side)."""
        return self._map_args(arguments, self.by_handle, self.shop_by_handle)

    def rewrite_text(self, text: str) -> str:
        return _LONG_ID_RE.sub(lambda m: self.by_id.get(m.group(0), m.group(0)), text)


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


def _json_list(content: Any) -> list | None:
    try:
        value = jsonio.loads(content)
    except (jsonio.JSONDecodeError, TypeError):
        return None
    return value if isinstance(value, list) else None


def compact_find_result(content: str, handles: Handles | None = None) -> str:
    """``find_product`` JSON -> one line per hit: ``<handle>. title: ... | price: ... | service: ... | shop: <h>``."""
    hits = _json_list(content)
    if hits is None:
        return str(content)[:MAX_RESULT_CHARS]
    if not hits:
        return "no results"
    handles = handles if handles is not None else Handles()
    lines = []
    for hit in hits[:MAX_HITS]:
        if not isinstance(hit, dict):
            continue
        handle = handles.add(hit.get("product_id"))
        service = ", ".join(str(s).lower() for s in _items(hit.get("service"))) or "none"
        line = f"{handle}. title: {hit.get('title', '')} | price: {_fmt_price(hit.get('price'))} | service: {service}"
        if hit.get("shop_id") not in (None, ""):
            line += f" | shop: {handles.add_shop(hit['shop_id'])}"
        lines.append(line)
    return "\n".join(lines)


def _items(value: Any) -> list:
    """A field that should be a list, read leniently (tool results come from miners' harnesses)."""
    if isinstance(value, list):
        return value
    return [value] if isinstance(value, str) and value else []


def _mapping(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def option_text(product: dict) -> str:
    pairs: list[str] = []
    for sku in _mapping(product.get("sku_options")).values():
        if isinstance(sku, dict):
            for k, v in sku.items():
                pair = f"{k} {v}".lower()
                if pair not in pairs:
                    pairs.append(pair)
    return "; ".join(pairs) or "none"


def attribute_text(product: dict) -> str:
    parts = []
    for k, vals in _mapping(product.get("attributes")).items():
        values = vals if isinstance(vals, list) else [vals]
        parts.append(f"{k} {', '.join(str(v) for v in values)}".lower())
    return "; ".join(parts) or "none"


def compact_info_result(content: str, handles: Handles | None = None) -> str:
    """``view_product_information`` JSON -> ``<handle>. options: ... | attributes: ...`` per product."""
    products = _json_list(content)
    if not products:
        return str(content)[:MAX_RESULT_CHARS]
    handles = handles if handles is not None else Handles()
    lines = []
    for product in products:
        if not isinstance(product, dict):
            continue
        handle = handles.add(product.get("product_id"))
        line = f"{handle}. options: {option_text(product)} | attributes: {attribute_text(product)}"
        lines.append(line[:MAX_INFO_CHARS])
    return "\n".join(lines)


_LONG_ID_RE = re.compile(r"\b\d{5,}\b")
_CAND_RE = re.compile(r"^\s*(\d+):\s*(.*)$")
_YESNO_RE = re.compile(r"(words|price|service|sku|attributes?)\b[^;]*?\b(yes|no)\b", re.I)


def compact_think(think: str, handles: Handles) -> str:
    """Product ids -> handles; per-candidate lines ``<id>: price .. yes; words no`` -> ``<h>: price yes; words no``.

    Lines about candidates the view never showed are dropped; other text is kept (the rewrite is
    idempotent on the model's own output).
    """
    if not think or not handles.by_id:
        return think
    lines = []
    for line in think.split("\n"):
        m = _CAND_RE.match(line)
        if m and m.group(1) in handles.by_id:
            verdicts = "; ".join(f"{k.lower()} {v.lower()}" for k, v in _YESNO_RE.findall(m.group(2)))
            lines.append(f"{handles.by_id[m.group(1)]}: {verdicts}")
        elif m and len(m.group(1)) >= 5:
            continue  # a candidate the compact view does not show
        else:
            lines.append(handles.rewrite_text(line))
    return "\n".join(lines)


def _compact_call(call: dict, handles: Handles) -> dict:
    fn = call.get("function", call) if isinstance(call, dict) else None
    if not isinstance(fn, dict):
        return call
    args = fn.get("arguments")
    parsed = args
    if isinstance(args, str):
        try:
            parsed = jsonio.loads(args) if args.strip() else {}
        except jsonio.JSONDecodeError:
            return call
    if not isinstance(parsed, dict) or (_ID_ARG not in parsed and _SHOP_ARG not in parsed):
        return call
    mapped = handles.to_handles(parsed)
    new_args = jsonio.template_dumps(mapped) if isinstance(args, str) else mapped
    if "function" in call:
        return {**call, "function": {**fn, "arguments": new_args}}
    return {**call, "arguments": new_args}


def _system_message(template: dict | None) -> dict:
    keys = template.keys() if template else ("role", "content")
    return {**dict.fromkeys(keys), "role": "system", "content": COMPACT_SYSTEM_PROMPT}


def compact_messages(messages: Sequence[dict]) -> tuple[list[dict], Handles]:
    """The compact view of ``messages`` and the product handles it assigned.

    Every conversation starts with the compact system prompt: evaluation prompts always carry one, and most
    curated miner traces arrive without (issue 18: 91% of curated rows), so one is put first where none is.
    """
    out = []
    handles = Handles()
    if messages and not any(m.get("role") == "system" for m in messages):
        out.append(_system_message(messages[0]))
    for m in messages:
        m = dict(m)
        role = m.get("role")
        if role == "system":
            m["content"] = COMPACT_SYSTEM_PROMPT
        elif role == "tool" and isinstance(m.get("content"), str):
            if m.get("name") == FIND_PRODUCT:
                m["content"] = compact_find_result(m["content"], handles)
            elif m.get("name") == VIEW_PRODUCT_INFORMATION:
                m["content"] = compact_info_result(m["content"], handles)
            else:
                m["content"] = m["content"][:MAX_RESULT_CHARS]
        elif role == "assistant":
            if isinstance(m.get("reasoning_content"), str):
                m["reasoning_content"] = compact_think(m["reasoning_content"], handles)
            if m.get("tool_calls"):
                m["tool_calls"] = [_compact_call(c, handles) for c in m["tool_calls"]]
        out.append(m)
    return out, handles


def unseen_recommendations(messages: Sequence[dict]) -> list[str]:
    """Ids a ``recommend_product`` call of the compact view of ``messages`` names that the view never showed
    (no handle): the model cannot learn to choose a product it was not shown. [] = every one was shown."""
    viewed, handles = compact_messages(messages)
    out: list[str] = []
    for m in viewed:
        for call in (m.get("tool_calls") or []) if m.get("role") == "assistant" else []:
            fn = call.get("function", call) if isinstance(call, dict) else {}
            if fn.get("name") != RECOMMEND_PRODUCT:
                continue
            args = fn.get("arguments")
            try:
                parsed = jsonio.loads(args) if isinstance(args, str) else args
            except jsonio.JSONDecodeError:
                continue
            ids = parsed.get(_ID_ARG) if isinstance(parsed, dict) else None
            items = ids if isinstance(ids, list) else str(ids or "").split(",")
            out.extend(str(x).strip() for x in items if str(x).strip() and str(x).strip() not in handles.by_handle)
    return out


def view_messages(messages: Sequence[dict], view: str) -> list[dict]:
    """Messages as the model sees them (new dicts; the input is not modified)."""
    if view == "full":
        return [dict(m) for m in messages]
    return compact_messages(messages)[0]


class ViewPolicy:
    """Wraps a model policy so it sees the profile's view of the conversation (batching kept).

    Handles in the model's ``product_ids`` arguments are mapped back to real ids (see the module doc).
    """

    def __init__(self, inner: Any, view: str) -> None:
        self.inner = inner
        self.view = view
        self.name = inner.name

    def _see(self, messages: Sequence[dict]) -> tuple[list[dict], Handles | None]:
        if self.view == "full":
            return [dict(m) for m in messages], None
        return compact_messages(messages)

    @staticmethod
    def _resolve(turn: Any, handles: Handles | None) -> Any:
        if handles is None or isinstance(turn, BaseException):
            return turn
        for call in getattr(turn, "tool_calls", None) or []:
            if isinstance(call.arguments, dict):
                call.arguments = handles.to_ids(call.arguments)
        return turn

    def act(self, problem_view: dict, messages: list[dict], tools: list[dict]):
        seen, handles = self._see(messages)
        return self._resolve(self.inner.act(problem_view, seen, view_tools(tools, self.view)), handles)

    def act_batch(self, requests: Sequence[Any]) -> list:
        from oro_assets.agents.local_model import GenerationRequest

        views = [self._see(r.messages) for r in requests]
        turns = self.inner.act_batch([GenerationRequest(r.problem_view, seen, view_tools(r.tools, self.view))
                                      for r, (seen, _) in zip(requests, views, strict=True)])
        return [self._resolve(t, h) for t, (_, h) in zip(turns, views, strict=True)]
