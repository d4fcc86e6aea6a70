"""Per-example lineage: the whole story of one record, read back from the warehouse.

It reads every layer - the firehose's ledger, the curated datasets, the training checkpoints - so it lives
above them all, in ``ops`` (it was ``curation/lineage.py``, which imported ``training``: an upward import).

Warehouse layout (the lead's storage): ``<warehouse>/<asset>/<partition>.parquet`` for partitioned
assets and ``<warehouse>/<asset>.parquet`` for unpartitioned ones. Checkpoints:
``<checkpoints>/<stage>/<version>/manifest.jsonl`` (one example id a line) + ``mlflow_run.json``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from oro_assets import jsonio

DATASETS = ("sft_dataset", "kto_dataset", "rl_prompts")
_STEP = re.compile(r"^(?P<base>.+):(?P<step>\d+)$")  # rl_prompts ids: "<trace_id>:<step>", "teacher:<problem>:<step>"


def parse_id(record_id: str) -> tuple[str | None, str | None]:
    """``(trace_id, teacher_problem_key)`` of an id: a trace or SFT/KTO example id is its trace id;
    an rl_prompts id ``<trace_id>:<step>`` names its trace; ``teacher:<problem_key>:<step>`` a
    teacher episode (no trace)."""
    m = _STEP.match(record_id)
    base = m.group("base") if m else record_id
    if base.startswith("teacher:"):
        return None, base[len("teacher:"):]
    return base, None


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
    """Checkpoints that trained on one of ``example_ids`` (``via: direct``), and those built on such a
    checkpoint through their parent chain (``via``: the checkpoint that did)."""
    from oro_assets.training.augment import variant_origin
    from oro_assets.training.checkpoints import read_meta

    out: list[dict] = []
    if checkpoints_dir is None or not checkpoints_dir.is_dir():
        return out
    direct: set[str] = set()
    dirs = [m.parent for m in sorted(checkpoints_dir.rglob("manifest.jsonl"))]
    for d in dirs:
        with open(d / "manifest.jsonl", encoding="utf-8") as f:
            if any(variant_origin(line.strip().strip('"')) in example_ids for line in f):
                direct.add(str(d))
    for d in dirs:
        via, cur, seen = None, d, set()
        while cur is not None and str(cur) not in seen:  # walk up the parents to one that trained on it
            seen.add(str(cur))
            if str(cur) in direct:
                via = "direct" if cur == d else str(cur)
                break
            parent = read_meta(cur).get("parent_path")
            cur = Path(parent) if parent else None
        if via is None:
            continue
        entry: dict[str, Any] = {"checkpoint": str(d), "via": via}
        trained_on = (read_meta(d).get("trained_on") or {}).get("key")
        if trained_on:  # another CPU's kernels train other weights from the same rows
            entry["trained_on"] = trained_on
        run_file = d / "mlflow_run.json"
        if run_file.exists():
            entry["mlflow_run"] = jsonio.loads(run_file.read_bytes())
        out.append(entry)
    return out


def _dataset_hits(warehouse: Path, record_id: str, trace_id: str | None, problem_ids: set[str]) -> list[dict]:
    """The datasets holding this example: SFT/KTO by trace id (none for a teacher episode), rl_prompts
    by the exact id (or every step of the trace when a trace id is asked), eval_problems by the
    trace's problem."""
    out = []
    for name in DATASETS:
        n = 0
        for path in _files(warehouse, name):
            ids = pq.read_table(path, columns=["id"]).column("id").to_pylist()
            if name == "rl_prompts":  # a trace id names all its steps; a step id itself
                n += (sum(1 for i in ids if i.startswith(trace_id + ":")) if record_id == trace_id
                      else ids.count(record_id))
            elif trace_id is not None:
                n += ids.count(trace_id)
        if n:
            out.append({"dataset": name, "rows": n})
    if problem_ids:
        for path in _files(warehouse, "eval_problems"):
            if "problem_id" in pq.read_schema(path).names:
                found = [i for i in pq.read_table(path, columns=["problem_id"]).column("problem_id").to_pylist()
                         if i in problem_ids]
                if found:
                    out.append({"dataset": "eval_problems", "rows": len(found), "as": "its problem"})
    return out


def _cluster(warehouse: Path, problem_key: str | None, problem_id: str | None, split: dict) -> dict | None:
    """Cluster, pool and sibling problems from the leak-cluster registry table, else what the split
    recorded for the trace."""
    for path in _files(warehouse, "leak_clusters")[:1]:
        members = pq.read_table(path).to_pylist()
        mine = [m for m in members if (problem_key and m.get("problem_key") == problem_key)
                or (problem_id and m.get("problem_id") == problem_id)]
        if mine:
            m = mine[0]
            return {
                "problem_key": m["problem_key"],
                "cluster_id": m.get("cluster_id"),
                "pool": m.get("pool"),
                "status": m.get("status"),
                "conflict_clusters": _json(m.get("conflict_clusters")),
                "siblings": sorted((s["problem_key"], s.get("query")) for s in members
                                   if s.get("cluster_id") and s.get("cluster_id") == m.get("cluster_id")
                                   and s["problem_key"] != m["problem_key"]),
            }
    if split.get("cluster_id") or split.get("pool"):
        return {"problem_key": split.get("problem_key"), "cluster_id": split.get("cluster_id"),
                "pool": split.get("pool"), "status": None, "siblings": []}
    return None


def explain(
    record_id: str, warehouse_dir: str | os.PathLike, checkpoints_dir: str | os.PathLike | None = None
) -> dict:
    """Everything known about one trace or dataset example id. Raises RecordNotFound."""
    from oro_assets.training.augment import variant_origin

    warehouse = Path(warehouse_dir)
    record_id = variant_origin(record_id.strip())  # a word-swap variant is explained by the row it was made from
    trace_id, teacher_key = parse_id(record_id)
    is_step = record_id != (trace_id if trace_id is not None else f"teacher:{teacher_key}")
    datasets_found = None
    if is_step or teacher_key is not None:  # an rl_prompts example: it must exist as asked
        datasets_found = _dataset_hits(warehouse, record_id, None, set())
        if not datasets_found:
            raise RecordNotFound(f"{record_id!r} is no rl_prompts example under {warehouse}")
    if teacher_key is not None:
        story: dict[str, Any] = {"id": record_id, "trace_id": None,
                                 "teacher": {"problem_key": teacher_key,
                                             "note": "a teacher episode on a train problem, not a firehose trace"},
                                 "fate": [], "datasets": datasets_found}
        cluster = _cluster(warehouse, teacher_key, teacher_key, {})
        if cluster:
            story["cluster"] = cluster
        story["checkpoints"] = _checkpoints(Path(checkpoints_dir) if checkpoints_dir else None, {record_id})
        return story

    ledger = _find(warehouse, "trace_ledger", "trace_id", trace_id)
    normalized = _find(warehouse, "normalized_traces", "trace_id", trace_id)
    if not ledger and not normalized:
        hint = "" if _files(warehouse, "trace_ledger") else " (no trace_ledger there: materialise curation_job first)"
        raise RecordNotFound(
            f"{record_id!r} is not in the trace ledger or normalized_traces under {warehouse}{hint}"
        )
    story = {"id": record_id, "trace_id": trace_id}
    # The same line can arrive on several days (a later dump repeating it): one fate per occurrence,
    # each with its own partition and file:line; the stage details follow the occurrence that was kept.
    story["fate"] = [{k: r.get(k) for k in ("partition", "source_file", "line_no", "fate", "stage", "reason",
                                            "detail", "pool")} for r in ledger]
    first = next((r for r in ledger if r.get("fate") == "kept"), None) or (ledger or normalized)[0]
    partition = first.get("partition")
    norm = next((n for n in normalized if n.get("partition") == partition), normalized[0] if normalized else {})
    story["raw"] = {
        "source_file": first.get("source_file"),
        "line_no": first.get("line_no"),
        "partition": partition,
        "raw_sha256": first.get("raw_sha256"),
        "format": first.get("format") or norm.get("format"),
    }
    story["problem"] = {"problem_id": norm.get("problem_id"), "query": norm.get("query")}
    here = [r for r in ledger if r.get("partition") == partition]

    labels = _find(warehouse, "structural_labels", "trace_id", trace_id, partition)
    if labels:
        story["structural"] = {"label": labels[0].get("label"), "evidence": _json(labels[0].get("evidence"))}
        if labels[0].get("label") == "subtask":
            story["structural"]["kept_in"] = "subtask_traces"
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
        gate_rej = [r for r in here if r.get("stage") == "gates"]
        if gate_rej:
            story["gates"] = {"passed": False, "reason": gate_rej[0]["reason"], "detail": gate_rej[0]["detail"]}
    curated = _find(warehouse, "curated_traces", "trace_id", trace_id, partition)
    dedup_rej = [r for r in here if r.get("stage") == "dedup"]
    if curated:
        c = curated[0]
        story["dedup"] = {"decision": "kept", "rank_score": c.get("rank_score"), "group": c.get("dedup_group")}
    elif dedup_rej:
        story["dedup"] = {"decision": "dropped", "reason": dedup_rej[0]["reason"], "detail": dedup_rej[0]["detail"]}
    split = (_find(warehouse, "split_traces", "trace_id", trace_id, partition) or curated or [{}])[0]
    cluster = _cluster(warehouse, split.get("problem_key"), norm.get("problem_id"), split)
    if cluster:
        story["cluster"] = cluster
    problem_ids = {str(i) for i in (norm.get("problem_id"), (cluster or {}).get("problem_key")) if i}
    story["datasets"] = _dataset_hits(warehouse, record_id, trace_id, problem_ids)
    story["checkpoints"] = _checkpoints(Path(checkpoints_dir) if checkpoints_dir else None, {record_id, trace_id})
    return story


def format_explanation(story: dict) -> str:
    """A human-readable rendering of :func:`explain`'s dict."""
    if story.get("teacher"):
        t = story["teacher"]
        lines = [f"record {story['id']}", f"  teacher    problem {t['problem_key']}: {t['note']}"]
    else:
        lines = [f"record {story['id']}  (trace {story['trace_id']})"]
        raw = story["raw"]
        lines.append(
            f"  raw        {raw['source_file']}:{raw['line_no']}  partition {raw['partition']}  format {raw['format']}"
        )
        lines.append(f"  sha256     {raw['raw_sha256']}")
        p = story.get("problem") or {}
        lines.append(f"  problem    {p.get('problem_id')}  {p.get('query')!r}")
    several = len({f.get("partition") for f in story["fate"]}) > 1
    for f in story["fate"]:
        reason = f" {f['reason']}: {f['detail']}" if f.get("reason") else f" ({f.get('detail')})"
        where = f"  [{f.get('partition')} {f.get('source_file')}:{f.get('line_no')}]" if several else ""
        lines.append(f"  fate       {f['fate']} at {f['stage']}{reason}{where}")
    if "structural" in story:
        ev = story["structural"]["evidence"] or {}
        kept_in = f" (kept in {story['structural']['kept_in']})" if story["structural"].get("kept_in") else ""
        lines.append(f"  structural {story['structural']['label']}: {ev.get('reason')}{kept_in}")
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
        lines.append(f"  dataset    {d['dataset']} ({d['rows']} rows{', ' + d['as'] if d.get('as') else ''})")
    for c in story["checkpoints"]:
        run = c.get("mlflow_run") or {}
        via = "" if c.get("via", "direct") == "direct" else f"  (built on {c['via']})"
        machine = f"  trained on {c['trained_on']}" if c.get("trained_on") else ""
        lines.append(f"  checkpoint {c['checkpoint']}  mlflow run {run.get('run_id')}{via}{machine}")
    return "\n".join(lines)
