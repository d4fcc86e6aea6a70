"""The declared output schemas of the curation steps (one Arrow schema per written table).

A step that starts emitting a column not declared here fails loudly when its rows are written
(:func:`oro_assets.storage.conform`), in memory as in the warehouse, instead of the column's type
drifting between batches. Each schema extends the one before it with what its step adds.
"""

from __future__ import annotations

import pyarrow as pa

from oro_assets.traces.schema import NORMALIZED_SCHEMA


def extend(base: pa.Schema, *fields: tuple[str, pa.DataType]) -> pa.Schema:
    """``base`` followed by ``fields``."""
    return pa.schema([pa.field(f.name, f.type) for f in base] + [pa.field(n, t) for n, t in fields])


#: every step's rejected rows (``rejections_<step>``): what the ledger needs, plus the gate's score
REJECTIONS_SCHEMA = pa.schema(
    [
        ("trace_id", pa.string()),
        ("partition", pa.string()),
        ("problem_id", pa.string()),
        ("stage", pa.string()),
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("reasoning_score", pa.float64()),
    ]
)
#: one row per normalised trace (``curation.structural.structural_filter``) + whether it goes on to
#: the gates, and the run id and validator score the gates' per-run coefficients count for the traces
#: they never see
LABELS_SCHEMA = pa.schema([("trace_id", pa.string()), ("partition", pa.string()), ("label", pa.string()),
                           ("evidence", pa.string()), ("agentic_richness", pa.float64()), ("recorder_era", pa.string()),
                           ("kept", pa.bool_()), ("eval_run_id", pa.string()), ("validator_score", pa.float64())])
SUBTASK_SCHEMA = extend(NORMALIZED_SCHEMA, ("structural_label", pa.string()))
#: normalised row + what the gates add (``curation.gates.gate_traces``)
GATED_SCHEMA = extend(NORMALIZED_SCHEMA, ("recommended_ids", pa.string()), ("n_tokens", pa.int64()),
                      ("reasoning_score", pa.float64()), ("reasoning_source", pa.string()),
                      ("judge_id", pa.string()), ("judge_explanation", pa.string()))
#: + what dedup and ranking add (``curation.dedup.dedup_and_rank``)
CURATED_SCHEMA = extend(GATED_SCHEMA, ("rank_score", pa.float64()), ("dedup_group", pa.string()))
#: + what the split adds (``curation.split.split_traces``)
SPLIT_SCHEMA = extend(CURATED_SCHEMA, ("problem_key", pa.string()), ("problem_known", pa.bool_()),
                      ("cluster_id", pa.string()), ("pool", pa.string()))
RAW_INDEX_COLUMNS = ("trace_id", "partition", "source_file", "line_no", "raw_sha256", "format")
#: one row per raw record: its provenance and the ingest verdict (``raw_traces``)
RAW_INDEX_SCHEMA = pa.schema([(name, pa.int64() if name == "line_no" else pa.string())
                              for name in [*RAW_INDEX_COLUMNS, "ingest", "stage", "reason", "detail"]])
