"""A curated corpus for any day range, as a Hugging Face dataset folder.

``export_corpus(warehouse, start, end, out)`` writes::

    <out>/data/train-00000-of-00001.parquet
    <out>/data/eval-00000-of-00001.parquet
    <out>/README.md      (dataset card: YAML front matter + funnel, reason codes, provenance)

loadable with ``datasets.load_dataset("parquet", data_files={"train": ..., "eval": ...})`` or
``datasets.load_dataset(<out>)`` (the card's ``configs`` name the splits). Rows are the kept traces
of ``split_traces`` whose leak cluster is in the train pool (split ``train``) or on the ``dev`` side of the
held-out pool (split ``eval``); the locked ``test`` side, which only the final report reads, and ``never_touch``
clusters are withheld and counted. One row per trace id over the range (a line a later day repeats is the
same trace). Each day is streamed in Arrow batches; only the ids seen so far are held.
"""

from __future__ import annotations

import datetime as dt
import os
import posixpath
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from oro_assets.curation.clusters import ClusterConfig, heldout_side
from oro_assets.curation.datasets import _message_struct, recorded_success
from oro_assets.curation.ledger import funnel, reason_counts
from oro_assets.reasons import REASON_DOCS, ReasonCode
from oro_assets.storage import Warehouse, iter_parquet_batches
from oro_assets.traces.schema import to_hf_messages

SPLITS = ("train", "eval")  # the train pool, and the dev side of the held-out pool
#: never exported: the locked test side of the held-out pool (``Registry.pool_of`` says ``test``), and never_touch
WITHHELD = ("test", "never_touch")
BATCH_ROWS = 500
DEFAULT_LICENSE = "unknown"

CORPUS_SCHEMA = pa.schema([
    ("id", pa.string()),
    ("messages", pa.list_(_message_struct())),
    ("tools", pa.string()),
    ("problem_id", pa.string()),
    ("query", pa.string()),
    ("cluster_id", pa.string()),
    ("success", pa.bool_()),
    ("reasoning_score", pa.float64()),
    ("rank_score", pa.float64()),
    ("n_tool_calls", pa.int64()),
    ("partition", pa.string()),
    ("source_file", pa.string()),
    ("line_no", pa.int64()),
    ("raw_sha256", pa.string()),
    ("format", pa.string()),
])
COLUMN_DOCS = {
    "id": "The trace id (`tr_` + the first 24 hex digits of `raw_sha256`); `oro-assets lineage <id>` tells its story.",
    "messages": "The dialogue in the OpenAI tool-call schema: assistant `tool_calls` with JSON-string `arguments`, "
                "thinking in `reasoning_content`, tool results as `tool` messages paired by `tool_call_id`.",
    "tools": "The function schemas offered to the model (JSON text).",
    "problem_id": "The ShoppingBench problem the trace answers (null when the record did not say).",
    "query": "The user's request.",
    "cluster_id": "The leak cluster of the problem; a cluster is in exactly one split (or withheld).",
    "success": "The validator-recorded outcome (`meta.score.success`); null when not recorded.",
    "reasoning_score": "The reasoning gate's score of the trace.",
    "rank_score": "The ranking score dedup kept the trace with.",
    "n_tool_calls": "Tool calls in the dialogue.",
    "partition": "Provenance: the firehose day (YYYY-MM-DD) the record was read from.",
    "source_file": "Provenance: the part file, relative to the firehose root (`<day>/<file>`).",
    "line_no": "Provenance: the 1-based line of a JSONL part (decompressed), or row of a Parquet part.",
    "raw_sha256": "Provenance: sha256 of the raw line's bytes (JSONL), or of the row's canonical JSON (Parquet).",
    "format": "The raw layout the record was read from (oro_envelope, dialogue_only, shoppingbench_rollout, "
              "openai_messages, sharegpt).",
}
_SOURCE_COLUMNS = ("trace_id", "messages", "tools", "problem_id", "query", "cluster_id", "pool", "meta",
                   "reasoning_score", "rank_score", "n_tool_calls", "partition", "source_file", "line_no",
                   "raw_sha256", "format")


class ExportError(ValueError):
    """An export that cannot be made (bad range, days not curated); the message says which."""


@dataclass
class ExportResult:
    out_dir: Path
    partitions: list[str]
    files: dict[str, Path]
    rows: dict[str, int]
    withheld: dict[str, int] = field(default_factory=dict)
    repeated: int = 0
    reason_counts: dict[str, int] = field(default_factory=dict)
    funnel: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # days of the range without a ledger (skip_uncurated)

    def to_dict(self) -> dict[str, Any]:
        return {"out_dir": str(self.out_dir), "partitions": self.partitions, "skipped": self.skipped,
                "files": {k: str(v) for k, v in self.files.items()}, "rows": self.rows,
                "withheld": self.withheld, "repeated": self.repeated, "reason_counts": self.reason_counts}


def _day(value: str, what: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except (TypeError, ValueError):
        raise ExportError(f"{what} {value!r} is not a YYYY-MM-DD date") from None


def export_partitions(warehouse: Warehouse, start: str, end: str, *,
                      skip_uncurated: bool = False) -> tuple[list[str], list[str]]:
    """(the curated days in ``[start, end]``, the days skipped). A day is curated when it has both
    ``split_traces`` and ``trace_ledger``; one with only the first is an ExportError, or skipped with
    ``skip_uncurated``. ExportError when no day is left."""
    first, last = _day(start, "--start"), _day(end, "--end")
    if last < first:
        raise ExportError(f"--end {end} is before --start {start}")
    days = [p for p in warehouse.partitions("split_traces") if first <= dt.date.fromisoformat(p) <= last]
    missing = [p for p in days if not warehouse.exists("trace_ledger", p)]
    if missing and not skip_uncurated:
        raise ExportError(f"days without a trace_ledger (curate them first): {', '.join(missing)}")
    days = [p for p in days if p not in missing]
    if not days:
        raise ExportError(f"no curated day (split_traces and trace_ledger) between {start} and {end} "
                          f"under {warehouse.root}")
    return days, missing


def corpus_row(row: dict) -> dict[str, Any]:
    """One split_traces row as a corpus row (``CORPUS_SCHEMA``)."""
    source = row.get("source_file") or ""
    return {
        "id": row["trace_id"],
        "messages": to_hf_messages(row["messages"]),
        "tools": row["tools"],
        "problem_id": row.get("problem_id"),
        "query": row.get("query"),
        "cluster_id": row.get("cluster_id"),
        "success": recorded_success(row),
        "reasoning_score": row.get("reasoning_score"),
        "rank_score": row.get("rank_score"),
        "n_tool_calls": row.get("n_tool_calls"),
        "partition": row["partition"],
        "source_file": f"{row['partition']}/{posixpath.basename(source.replace(os.sep, '/'))}",
        "line_no": row.get("line_no"),
        "raw_sha256": row.get("raw_sha256"),
        "format": row.get("format"),
    }


def _pooled_rows(warehouse: Warehouse, partition: str, columns: list[str], withheld: dict[str, int],
                 side_of: dict[str | None, str], config: ClusterConfig) -> Iterator[dict]:
    """The day's train rows and the dev side of its eval rows; test and never_touch rows are only counted.

    The side is the held-out cluster's (:func:`heldout_side`, what ``Registry.pool_of`` reads); an eval row
    without a cluster id cannot show it is dev, so it stays locked. ``side_of`` caches it per cluster."""
    for batch in iter_parquet_batches(warehouse.path("split_traces", partition), BATCH_ROWS, columns):
        pools = batch.column("pool")
        withheld["never_touch"] += pc.sum(pc.equal(pools, "never_touch")).as_py() or 0
        for row in batch.filter(pc.fill_null(pc.is_in(pools, value_set=pa.array(SPLITS)), False)).to_pylist():
            if row["pool"] == "eval":
                cluster = row.get("cluster_id")
                if cluster not in side_of:
                    side_of[cluster] = heldout_side(cluster, config) if cluster else "test"
                if side_of[cluster] != "dev":
                    withheld["test"] += 1
                    continue
            yield row


def export_corpus(warehouse: Warehouse, start: str, end: str, out_dir: str | os.PathLike, *,
                  license: str = DEFAULT_LICENSE, name: str = "oro-sn15-curated",
                  skip_uncurated: bool = False, cluster_config: ClusterConfig = ClusterConfig()) -> ExportResult:
    """Write the curated corpus of the days ``start``..``end`` (inclusive) to ``out_dir`` (see the module doc).

    The files are written under a temporary folder in ``out_dir`` and moved into place only when
    all of them are complete. ``skip_uncurated``: see :func:`export_partitions`. ``cluster_config``: the
    registry's (its seed and test share fix each held-out cluster's side)."""
    days, skipped = export_partitions(warehouse, start, end, skip_uncurated=skip_uncurated)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".export-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "data").mkdir(parents=True)
    rel = {s: f"data/{s}-00000-of-00001.parquet" for s in SPLITS}
    counts = dict.fromkeys(SPLITS, 0)
    withheld = dict.fromkeys(WITHHELD, 0)
    nbytes = dict.fromkeys(SPLITS, 0)
    seen: set[str] = set()
    side_of: dict[str | None, str] = {}
    repeated = 0
    try:
        writers = {s: pq.ParquetWriter(tmp / rel[s], CORPUS_SCHEMA, compression="zstd") for s in SPLITS}
        try:
            for day in days:
                have = set(pq.ParquetFile(warehouse.path("split_traces", day)).schema_arrow.names)
                columns = [c for c in _SOURCE_COLUMNS if c in have]
                pending: dict[str, list[dict]] = {s: [] for s in SPLITS}
                for row in _pooled_rows(warehouse, day, columns, withheld, side_of, cluster_config):
                    pool = row["pool"]
                    if row["trace_id"] in seen:
                        repeated += 1
                        continue
                    seen.add(row["trace_id"])
                    pending[pool].append(corpus_row(row))
                    if len(pending[pool]) >= BATCH_ROWS:
                        nbytes[pool] += _write(writers[pool], pending[pool])
                        counts[pool] += len(pending[pool])
                        pending[pool] = []
                for s, rows in pending.items():
                    nbytes[s] += _write(writers[s], rows)
                    counts[s] += len(rows)
        finally:
            for w in writers.values():
                w.close()
        reasons, stages = _ledger_summary(warehouse, days)
        card = dataset_card(name=name, license=license, start=start, end=end, partitions=days, files=rel,
                            rows=counts, nbytes=nbytes, withheld=withheld, repeated=repeated,
                            reasons=reasons, stages=stages)
        (tmp / "README.md").write_text(card, encoding="utf-8")
        (out / "data").mkdir(exist_ok=True)
        for path in [*rel.values(), "README.md"]:
            os.replace(tmp / path, out / path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return ExportResult(out, days, {s: out / rel[s] for s in SPLITS} | {"card": out / "README.md"}, counts,
                        withheld, repeated, reasons, stages, skipped)


def _write(writer: pq.ParquetWriter, rows: list[dict]) -> int:
    if not rows:
        return 0
    table = pa.Table.from_pylist(rows, schema=CORPUS_SCHEMA)
    writer.write_table(table)
    return table.nbytes


def _ledger_summary(warehouse: Warehouse, days: list[str]) -> tuple[dict[str, int], list[dict]]:
    """Reason counts and the stage funnel summed over the days' ledgers."""
    reasons: dict[str, int] = {}
    stages: dict[str, dict[str, Any]] = {}
    for day in days:
        ledger = warehouse.path("trace_ledger", day)
        for k, v in reason_counts(ledger).items():
            reasons[k] = reasons.get(k, 0) + v
        for step in funnel(ledger):
            acc = stages.setdefault(step["stage"], {"stage": step["stage"], "entering": 0, "rejected": 0,
                                                    "remaining": 0})
            for k in ("entering", "rejected", "remaining"):
                acc[k] += step[k]
    return reasons, list(stages.values())


# ------------------------------------------------------------------------------------ dataset card


def _features(schema: pa.Schema | pa.StructType) -> list[dict[str, Any]]:
    return [_feature(f.name, f.type) for f in schema]


def _feature(name: str, t: pa.DataType) -> dict[str, Any]:
    """One field in the card's ``dataset_info.features`` form (as ``datasets`` writes it)."""
    if pa.types.is_struct(t):
        return {"name": name, "struct": _features(t)}
    if pa.types.is_list(t) and pa.types.is_struct(t.value_type):
        return {"name": name, "list": _features(t.value_type)}
    dtypes = {pa.string(): "string", pa.int64(): "int64", pa.float64(): "float64", pa.bool_(): "bool"}
    if t not in dtypes:
        raise TypeError(f"no card dtype for {t}")
    return {"name": name, "dtype": dtypes[t]}


def _type_name(t: pa.DataType) -> str:
    if pa.types.is_list(t):
        return f"list of {_type_name(t.value_type)}"
    if pa.types.is_struct(t):
        return "{" + ", ".join(f.name for f in t) + "}"
    return str(t)


def _size_category(n: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                         (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M")):
        if n < limit:
            return label
    return "n>10M"


def _table(header: list[str], rows: list[list[Any]]) -> str:
    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def dataset_card(*, name: str, license: str, start: str, end: str, partitions: list[str], files: dict[str, str],
                 rows: dict[str, int], nbytes: dict[str, int], withheld: dict[str, int], repeated: int,
                 reasons: dict[str, int], stages: list[dict]) -> str:
    """The card: YAML front matter (license, configs, features, splits) and the corpus's story."""
    import yaml

    total = sum(rows.values())
    meta = {
        "license": license,
        "pretty_name": f"{name} ({start} to {end})",
        "language": ["en"],
        "task_categories": ["text-generation"],
        "tags": ["tool-calling", "agents", "shopping", "bittensor-sn15", "oro"],
        "size_categories": [_size_category(total)],
        "configs": [{"config_name": "default",
                     "data_files": [{"split": s, "path": files[s]} for s in SPLITS]}],
        "dataset_info": {
            "features": _features(CORPUS_SCHEMA),
            "splits": [{"name": s, "num_bytes": nbytes[s], "num_examples": rows[s]} for s in SPLITS],
            "dataset_size": sum(nbytes.values()),
        },
    }
    raw = sum(v for v in reasons.values())
    kept = reasons.get("kept", 0)
    funnel_rows = [[s["stage"], s["entering"], s["rejected"], s["remaining"]] for s in stages]
    funnel_rows.append(["export: withheld pools (" + ", ".join(WITHHELD) + ")", kept, sum(withheld.values()),
                        kept - sum(withheld.values())])
    funnel_rows.append(["export: repeated trace ids across days", kept - sum(withheld.values()), repeated, total])
    reason_rows = [[f"`{code.value}`", reasons.get(code.value, 0), REASON_DOCS[code]] for code in ReasonCode]
    column_rows = [[f"`{f.name}`", _type_name(f.type), COLUMN_DOCS[f.name]] for f in CORPUS_SCHEMA]
    loads = ", ".join(f'"{s}": "{files[s]}"' for s in SPLITS)
    body = f"""
# {name}

Curated agent trajectories of the ORO ShoppingBench arena (Bittensor subnet 15), days {start} to {end}
({len(partitions)} curated day(s): {", ".join(partitions)}), written by `oro-assets export`.
Every row is a trace the curation chain kept (structural filter, format / grounding / reasoning gates,
deduplication, leak-guarded split) in the OpenAI tool-call schema, with its provenance in the raw firehose.

```python
from datasets import load_dataset

ds = load_dataset("parquet", data_files={{{loads}}})
```

## Splits: by leak cluster

| split | rows |
|---|---|
""" + "\n".join(f"| {s} | {rows[s]} |" for s in SPLITS) + f"""

Problems are grouped into leak clusters (near-duplicate queries and problems sharing a ground-truth
product are one cluster); each cluster belongs to exactly one pool, for ever. `train` holds the traces of
the train pool's clusters and `eval` those of the held-out pool's `dev` side, so no problem, paraphrase or
ground-truth product of `eval` is in `train`. Withheld: the held-out pool's locked `test` side, which only
a final report reads ({withheld.get("test", 0)} traces), and the `never_touch` clusters
({withheld.get("never_touch", 0)}). A trace id seen on an earlier day of the range is exported once
({repeated} repeats dropped).

## Funnel

{raw} raw records over the range; each has exactly one fate in the trace ledger. {kept} kept, {total} exported.

{_table(["stage", "entering", "rejected", "remaining"], funnel_rows)}

## Reason codes

Why the other records were set aside (the ledger's `reason`; one code per record):

{_table(["reason", "records", "meaning"], reason_rows)}

## Columns

{_table(["column", "type", "meaning"], column_rows)}

`partition`, `source_file`, `line_no` and `raw_sha256` find the raw record the row was made from.

## License

`{license}`. The traces were recorded by ORO's validators of the agents miners submitted; the terms of
the source dump apply. Set `oro-assets export --license` to the license your source data carries.
"""
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
    return f"---\n{front}---\n{body}"
