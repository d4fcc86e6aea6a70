"""Per-example lineage: the whole story of one record, read back from the warehouse.

Warehouse layout (the lead's storage): ``<warehouse>/<asset>/<partition>.parquet`` for partitioned
assets and ``<warehouse>/<asset>.parquet`` for unpartitioned ones. Checkpoints:
``<checkpoints>/<stage>/<version>/manifest.jsonl`` (one example id a line) + ``mlflow_run.json``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from oro_assets import jsonio

DATASETS = ("sft_dataset", "kto_dataset", "rl_prompts")


class RecordNotFound(LookupError):
    """The id is in no ledger, normalised table or dataset of the warehouse."""


def _files(warehouse: Path, asset: str, partition: str | None = None) -> list[Path]:
    single = warehouse / f"{asset}.parquet"
    folder = warehouse / asset
    out = [single] if single.exists() else []
    if folder.is_dir():
        if partition is not None and (folder / f"{partition}.parquet").exists():
            out.append(folder / f"{partition}.parquet")
        elif partition is None or not out:
            out.extend(sorted(folder.glob("*.parquet")))
    return out


def _find(warehouse: Path, asset: str, column: str, value: Any, partition: str | None = None) -> list[dict]:
    rows: list[dict] = []
    for path in _files(warehouse, asset, partition):
        schema = pq.read_schema(path)
        if column not in schema.names:
            continue
        table = pq.read_table(path, filters=[(column, "=", value)])
        rows.extend(table.to_pylist())
    return rows


def _json(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return jsonio.loads(value)
        except jsonio.JSONDecodeError:
            return value
    return value


def _checkpoints(checkpoints_dir: Path | None, example_ids: set[str]) -> list[dict]:
    out: list[dict] = []
    if checkpoints_dir is None or not checkpoints_dir.is_dir():
        return out
    for manifest in sorted(checkpoints_dir.rglob("manifest.jsonl")):
        with open(manifest, encoding="utf-8") as f:
            hit = any(line.strip().strip('"') in example_ids for line in f)
        if not hit:
            continue
        entry: dict[str, Any] = {"checkpoint": str(manifest.parent)}
        run_file = manifest.parent / "mlflow_run.json"
        if run_file.exists():
            entry["mlflow_run"] = jsonio.loads(run_file.read_bytes())
        out.append(entry)
    return out


def explain(
    record_id: str, warehouse_dir: str | os.PathLike, checkpoints_dir: str | os.PathLike | None = None
) -> dict:
    """Everything known about one trace or dataset example id. Raises RecordNotFound."""
    warehouse = Path(warehouse_dir)
    trace_id = record_id.split(":", 1)[0]  # rl_prompts ids are "<trace_id>:<step>"
    ledger = _find(warehouse, "trace_ledger", "trace_id", trace_id)
    normalized = _find(warehouse, "normalized_traces", "trace_id", trace_id)
    if not ledger and not normalized:
        raise RecordNotFound(
            f"{record_id!r} is not in the trace ledger or normalized_traces under {warehouse}"
        )
    story: dict[str, Any] = {"id": record_id, "trace_id": trace_id}
    first = (ledger or normalized)[0]
    partition = first.get("partition")
    story["raw"] = {
        "source_file": first.get("source_file"),
        "line_no": first.get("line_no"),
        "partition": partition,
        "raw_sha256": first.get("raw_sha256"),
        "format": first.get("format") or (normalized[0].get("format") if normalized else None),
    }
    story["fate"] = [{k: r.get(k) for k in ("fate", "stage", "reason", "detail", "pool")} for r in ledger]
    norm = normalized[0] if normalized else {}
    story["problem"] = {"problem_id": norm.get("problem_id"), "query": norm.get("query")}

    labels = _find(warehouse, "structural_labels", "trace_id", trace_id, partition)
    if labels:
        story["structural"] = {"label": labels[0].get("label"), "evidence": _json(labels[0].get("evidence"))}
    gated = _find(warehouse, "gated_traces", "trace_id", trace_id, partition)
    if gated:
        g = gated[0]
        story["gates"] = {
            "passed": True,
            "recommended_ids": _json(g.get("recommended_ids")),
            "n_tokens": g.get("n_tokens"),
            "reasoning_score": g.get("reasoning_score"),
            "reasoning_source": g.get("reasoning_source"),
            "judge_id": g.get("judge_id"),
            "judge_explanation": g.get("judge_explanation"),
        }
    else:
        gate_rej = [r for r in ledger if r.get("stage") == "gates"]
        if gate_rej:
            story["gates"] = {
                "passed": False,
                "reason": gate_rej[0]["reason"],
                "detail": gate_rej[0]["detail"],
            }
    curated = _find(warehouse, "curated_traces", "trace_id", trace_id, partition)
    dedup_rej = [r for r in ledger if r.get("stage") == "dedup"]
    if curated:
        c = curated[0]
        story["dedup"] = {
            "decision": "kept",
            "rank_score": c.get("rank_score"),
            "group": c.get("dedup_group"),
        }
        story["cluster"] = {
            "cluster_id": c.get("cluster_id"),
            "pool": c.get("pool"),
            "problem_key": c.get("problem_key"),
        }
    elif dedup_rej:
        story["dedup"] = {
            "decision": "dropped",
            "reason": dedup_rej[0]["reason"],
            "detail": dedup_rej[0]["detail"],
        }

    # Cluster and siblings from the registry table.
    clusters = _files(warehouse, "leak_clusters")
    if clusters:
        table = pq.read_table(clusters[0])
        members = table.to_pylist()
        key = (story.get("cluster") or {}).get("problem_key") or norm.get("problem_id")
        mine = [
            m
            for m in members
            if m.get("problem_key") == key
            or (m.get("problem_id") and m.get("problem_id") == norm.get("problem_id"))
        ]
        if mine:
            m = mine[0]
            story["cluster"] = {
                "problem_key": m["problem_key"],
                "cluster_id": m.get("cluster_id"),
                "pool": m.get("pool"),
                "status": m.get("status"),
                "conflict_clusters": _json(m.get("conflict_clusters")),
                "siblings": sorted(
                    (s["problem_key"], s.get("query"))
                    for s in members
                    if s.get("cluster_id")
                    and s.get("cluster_id") == m.get("cluster_id")
                    and s["problem_key"] != m["problem_key"]
                ),
            }
    datasets = []
    for name in DATASETS:
        rows = _find(warehouse, name, "id", record_id) if name != "rl_prompts" else []
        if name == "rl_prompts":
            for path in _files(warehouse, name):
                t = pq.read_table(path, columns=["id"])
                ids = [i for i in t.column("id").to_pylist() if i == trace_id or i.startswith(trace_id + ":")]
                rows.extend({"id": i} for i in ids)
        elif not rows and record_id != trace_id:
            rows = _find(warehouse, name, "id", trace_id)
        if rows:
            datasets.append({"dataset": name, "rows": len(rows)})
    story["datasets"] = datasets
    example_ids = {record_id, trace_id}
    story["checkpoints"] = _checkpoints(Path(checkpoints_dir) if checkpoints_dir else None, example_ids)
    return story


def format_explanation(story: dict) -> str:
    """A human-readable rendering of :func:`explain`'s dict."""
    lines = [f"record {story['id']}  (trace {story['trace_id']})"]
    raw = story["raw"]
    lines.append(
        f"  raw        {raw['source_file']}:{raw['line_no']}  partition {raw['partition']}  format {raw['format']}"
    )
    lines.append(f"  sha256     {raw['raw_sha256']}")
    p = story.get("problem") or {}
    lines.append(f"  problem    {p.get('problem_id')}  {p.get('query')!r}")
    for f in story["fate"]:
        reason = f" {f['reason']}: {f['detail']}" if f.get("reason") else f" ({f.get('detail')})"
        lines.append(f"  fate       {f['fate']} at {f['stage']}{reason}")
    if "structural" in story:
        ev = story["structural"]["evidence"] or {}
        lines.append(f"  structural {story['structural']['label']}: {ev.get('reason')}")
    if "gates" in story:
        g = story["gates"]
        if g["passed"]:
            lines.append(
                f"  gates      passed; recommended {g['recommended_ids']}; tokens {g['n_tokens'] if g['n_tokens'] is not None else 'under budget'}; "
                f"reasoning {g['reasoning_score']} ({g['reasoning_source']}, {g['judge_id']})"
            )
        else:
            lines.append(f"  gates      failed {g['reason']}: {g['detail']}")
    if "dedup" in story:
        d = story["dedup"]
        lines.append(
            f"  dedup      {d['decision']}"
            + (f" rank {d['rank_score']}" if d["decision"] == "kept" else f": {d['detail']}")
        )
    if "cluster" in story:
        c = story["cluster"]
        lines.append(
            f"  cluster    {c.get('cluster_id')} pool {c.get('pool')}"
            + (f" [{c['status']}]" if c.get("status") not in (None, "assigned") else "")
        )
        for key, query in c.get("siblings", [])[:10]:
            lines.append(f"    sibling  {key}  {query!r}")
    for d in story["datasets"]:
        lines.append(f"  dataset    {d['dataset']} ({d['rows']} rows)")
    for c in story["checkpoints"]:
        run = c.get("mlflow_run") or {}
        lines.append(f"  checkpoint {c['checkpoint']}  mlflow run {run.get('run_id')}")
    return "\n".join(lines)
