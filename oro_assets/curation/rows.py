"""Small helpers shared by the curation stages: JSON columns, stage stats, rejected rows.

Stages take canonical normalised rows (docs/architecture.md) as dicts whose JSON columns may be
strings (as stored in Parquet) or already parsed; they never mutate their input.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from oro_assets import jsonio
from oro_assets.reasons import ReasonCode, Stage
from oro_assets.toolcalls import FIND_PRODUCT, RECOMMEND_PRODUCT, VIEW_PRODUCT_INFORMATION

RECOMMEND = RECOMMEND_PRODUCT
FIND = FIND_PRODUCT
VIEW = VIEW_PRODUCT_INFORMATION


def parsed(value: Any, default: Any) -> Any:
    """A JSON column as a Python value: strings are decoded, ``None`` gives ``default``."""
    if value is None:
        return default
    if isinstance(value, str | bytes):
        if value in ("", b""):
            return default
        return jsonio.loads(value)
    return value


def modal_share(shapes: list[tuple]) -> float:
    """Share of the most frequent step shape (tuple of call names); 0 below 3 shapes."""
    if len(shapes) < 3:
        return 0.0
    counts: dict[tuple, int] = {}
    for shape in shapes:
        counts[shape] = counts.get(shape, 0) + 1
    return max(counts.values()) / len(shapes)


def messages_of(row: dict) -> list[dict]:
    return parsed(row.get("messages"), [])


def steps_of(row: dict) -> list[dict]:
    return parsed(row.get("steps"), [])


def meta_of(row: dict) -> dict:
    meta = parsed(row.get("meta"), {})
    return meta if isinstance(meta, dict) else {}


def tool_calls_of(messages: list[dict]) -> list[dict]:
    """Every assistant tool call in order, as ``{"id", "name", "arguments"}`` (arguments as stored)."""
    out = []
    for m in messages:
        if m.get("role") != "assistant":
            continue
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            out.append({"id": call.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments")})
    return out


def rejected_row(row: dict, stage: Stage, reason: ReasonCode, detail: str) -> dict:
    """One rejection in ledger shape (the ledger adds provenance from the row itself)."""
    return {
        "trace_id": row.get("trace_id"),
        "partition": row.get("partition"),
        "problem_id": row.get("problem_id"),
        "stage": str(stage),
        "reason": str(reason),
        "detail": detail,
    }


@dataclass
class StageStats:
    """What a stage saw, kept and dropped (datatrove style), plus free-form extras."""

    stage: str
    seen: int = 0
    kept: int = 0
    rejected: Counter = field(default_factory=Counter)
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "seen": self.seen,
            "kept": self.kept,
            "rejected": dict(sorted(self.rejected.items())),
            **self.extra,
        }


def as_rows(rows: Iterable[dict] | Any) -> Iterable[dict]:
    """Accept an iterable of dicts, a polars DataFrame or a pyarrow Table."""
    to_dicts = getattr(rows, "to_dicts", None)  # polars
    if callable(to_dicts):
        return to_dicts()
    to_pylist = getattr(rows, "to_pylist", None)  # pyarrow
    if callable(to_pylist):
        return to_pylist()
    return rows
