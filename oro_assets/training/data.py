"""Curated dataset rows -> TRL datasets, plus content hashes used for checkpoint versions.

Input rows follow docs/architecture.md "Datasets": ``{id, messages, tools (JSON str), source}``
(+ ``label`` for KTO; ``rl_prompts`` rows ``{id, problem_id, prompt, teacher_next, reward_spec, step}``).
Rows may come as a list of dicts, a Parquet file or a JSONL file. ``messages`` / ``prompt`` may be
JSON strings (Parquet) or lists.

Tool-call arguments stay JSON *strings* (HF datasets would merge dict keys across rows), but are
re-serialised with ``json.dumps`` so their text equals what the chat template's ``tojson``
renders for the dict form used at inference.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from oro_assets import jsonio
from oro_assets.toolcalls import CALCULATE_VOUCHER, FIND_PRODUCTS_IN_SAME_SHOP, RECOMMEND_PRODUCT
from oro_assets.training.views import view_messages, view_tools

MESSAGE_KEYS = ("role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name")


class DatasetError(ValueError):
    """A training dataset row is malformed; the message names the row id."""


def load_rows(source: str | Path | Sequence[dict] | None) -> list[dict]:
    """Rows from a list, a ``.parquet`` file or a ``.jsonl`` file (``None`` -> [])."""
    if source is None:
        return []
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.exists():
            raise DatasetError(f"dataset file {path} does not exist")
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            return pq.read_table(path).to_pylist()
        rows = []
        with path.open("rb") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        rows.append(jsonio.loads(line))
                    except jsonio.JSONDecodeError as exc:
                        raise DatasetError(f"{path}:{n}: not JSON ({exc})") from None
        return rows
    return [dict(r) for r in source]


def _as_list(value: Any, what: str, row_id: Any) -> list:
    if isinstance(value, str):
        try:
            value = jsonio.loads(value)
        except jsonio.JSONDecodeError:
            raise DatasetError(f"row {row_id!r}: {what} is not valid JSON") from None
    if not isinstance(value, list):
        raise DatasetError(f"row {row_id!r}: {what} must be a list")
    return value


def tojson_arguments(arguments: Any) -> str:
    """Arguments as the chat template's ``tojson`` would render the parsed dict."""
    if isinstance(arguments, str):
        try:
            arguments = jsonio.loads(arguments) if arguments.strip() else {}
        except jsonio.JSONDecodeError:
            return arguments
    return jsonio.template_dumps(arguments)


def normalise_messages(messages: Iterable[dict], row_id: Any = None) -> list[dict]:
    """Every message with the same key set (missing -> None), arguments as tojson-style strings."""
    out = []
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
            raise DatasetError(f"row {row_id!r}: message without a valid role: {str(m)[:80]}")
        msg = {k: m.get(k) for k in MESSAGE_KEYS}
        if msg["content"] is None:
            msg["content"] = ""
        if msg["tool_calls"]:
            calls = []
            for c in msg["tool_calls"]:
                fn = c.get("function") or {}
                calls.append({"id": c.get("id") or "", "type": "function",
                              "function": {"name": fn.get("name") or "", "arguments": tojson_arguments(fn.get("arguments"))}})
            msg["tool_calls"] = calls
        else:
            msg["tool_calls"] = None
        out.append(msg)
    return out


def sft_example(row: dict, view: str, default_tools: Sequence[dict] | None = None) -> dict:
    """One HF dataset row -> ``{id, messages, tools}`` as TRL's conversational format wants it."""
    rid = row.get("id")
    messages = normalise_messages(_as_list(row.get("messages"), "messages", rid), rid)
    if not any(m["role"] == "assistant" for m in messages):
        raise DatasetError(f"row {rid!r}: no assistant message to train on")
    tools = row.get("tools")
    tools_list = _as_list(tools, "tools", rid) if tools not in (None, "") else list(default_tools or [])
    return {
        "id": str(rid),
        "messages": normalise_messages(view_messages(messages, view), rid),
        "tools": jsonio.template_dumps(view_tools(tools_list, view)),
    }


def kto_examples(row: dict, view: str, default_tools: Sequence[dict] | None = None) -> list[dict]:
    """A labelled trajectory -> one ``{prompt, completion, label}`` per assistant turn."""
    ex = sft_example(row, view, default_tools)
    label = row.get("label")
    if not isinstance(label, bool):
        raise DatasetError(f"row {ex['id']!r}: KTO rows need a boolean label")
    out = []
    for i, m in enumerate(ex["messages"]):
        if m["role"] == "assistant" and i > 0:
            out.append({"id": ex["id"], "prompt": ex["messages"][:i], "completion": [m], "label": label,
                        "tools": ex["tools"]})
    return out


def rows_hash(rows: Sequence[dict]) -> str:
    """Content hash of a dataset (order matters: it is the training order)."""
    return jsonio.content_hash([jsonio.content_hash(r) for r in rows])


def _calls(messages: Sequence[dict]) -> list[tuple[str, Any]]:
    out = []
    for m in messages:
        if m.get("role") != "assistant":
            continue
        for c in m.get("tool_calls") or []:
            fn = c.get("function", c) if isinstance(c, dict) else {}
            args = fn.get("arguments")
            try:
                args = jsonio.loads(args) if isinstance(args, str) and args.strip() else (args or {})
            except jsonio.JSONDecodeError:
                args = {}
            out.append((str(fn.get("name") or ""), args))
    return out


def row_shape(row: dict) -> str:
    """What a trajectory row does, read from its own calls (no label, no problem lookup): ``"Product"`` when its
    one ``recommend_product`` names one product and it never checks a voucher or a shop, else ``"multi"``
    (Shop / Voucher problems recommend several products); ``"none"`` without a recommendation."""
    messages = _as_list(row.get("messages"), "messages", row.get("id"))
    calls = _calls(messages)
    recs = [a for n, a in calls if n == RECOMMEND_PRODUCT]
    if not recs:
        return "none"
    if any(n in (CALCULATE_VOUCHER, FIND_PRODUCTS_IN_SAME_SHOP) for n, _ in calls):
        return "multi"
    ids = recs[-1].get("product_ids") if isinstance(recs[-1], dict) else None
    items = ids if isinstance(ids, list) else [x for x in str(ids or "").split(",") if x.strip()]
    return "Product" if len(items) == 1 else "multi"


def sft_training_rows(rows: Sequence[dict], view: str, *, shapes: Sequence[str] | None = None,
                      product_first: bool = False) -> tuple[list[dict], dict[str, Any]]:
    """The curated rows SFT trains on, and the count of those set aside by reason.

    * ``recommend_unseen`` (compact view only): a ``recommend_product`` id the view never showed the model
      (it is not among the hits it displays) - the model cannot learn to choose a product it was not shown;
    * ``shape``: with ``shapes`` given (e.g. ``("Product",)``), a row whose :func:`row_shape` is not one of them.

    ``product_first`` orders single-product rows before the others (stable), for a curriculum.
    """
    from oro_assets.training.views import unseen_recommendations

    kept: list[dict] = []
    dropped = {"recommend_unseen": 0, "shape": 0}
    shapes_seen: dict[str, int] = {}
    for r in rows:
        shape = row_shape(r)
        shapes_seen[shape] = shapes_seen.get(shape, 0) + 1
        if shapes is not None and shape not in shapes:
            dropped["shape"] += 1
            continue
        if view != "full" and unseen_recommendations(_as_list(r.get("messages"), "messages", r.get("id"))):
            dropped["recommend_unseen"] += 1
            continue
        kept.append(r)
    if product_first:
        kept.sort(key=lambda r: row_shape(r) != "Product")
    return kept, {"rows_in": len(rows), "rows_kept": len(kept), "dropped": dropped, "shapes": shapes_seen}
