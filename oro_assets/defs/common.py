"""Conventions every asset follows: partitions, owners, groups, kinds, code versions, metadata."""


import datetime as dt
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq

from oro_assets.code_version import code_modules, code_version
from oro_assets.settings import partitions_start
from oro_assets.storage import iter_parquet_batches

OWNER_DATA = "team:oro-data"
OWNER_ML = "team:oro-ml"

# The graph's partitions are part of its definition: only ORO_PARTITIONS_START is read when the location loads.
DAILY = dg.DailyPartitionsDefinition(start_date=partitions_start(), timezone="UTC")
SINGLE_RUN = dg.BackfillPolicy.single_run()

# Freshness of what the daily run refreshes (curated days, the window datasets, the weekly report).
CURATED_FRESHNESS = dg.FreshnessPolicy.time_window(fail_window=dt.timedelta(hours=30), warn_window=dt.timedelta(hours=26))
DATASET_FRESHNESS = dg.FreshnessPolicy.time_window(fail_window=dt.timedelta(days=2), warn_window=dt.timedelta(hours=30))
REPORT_FRESHNESS = dg.FreshnessPolicy.time_window(fail_window=dt.timedelta(days=8), warn_window=dt.timedelta(days=7))

__all__ = ["code_modules", "code_version"]  # re-exported: what every asset module versions itself with


def table_metadata(table: pa.Table, path: Path | None = None, preview_rows: int = 5,
                   preview_columns: list[str] | None = None) -> dict[str, Any]:
    """Row count, column schema, a markdown preview and the file URI of an in-memory table."""
    cols = [c for c in (preview_columns or table.column_names[:6]) if c in table.column_names]
    preview = table.select(cols).slice(0, preview_rows).to_pylist() if table.num_rows else []
    return _metadata(table.schema, table.num_rows, preview, path)


def parquet_metadata(path: Path, preview_rows: int = 5, preview_columns: list[str] | None = None) -> dict[str, Any]:
    """:func:`table_metadata` of a written Parquet file, read from its footer and first rows only
    (a day's normalised traces are gigabytes: never load a partition to describe it)."""
    parquet = pq.ParquetFile(path)
    schema = parquet.schema_arrow
    cols = [c for c in (preview_columns or schema.names[:6]) if c in schema.names]
    first = next(iter_parquet_batches(path, preview_rows, cols), None)
    preview = first.to_pylist()[:preview_rows] if first is not None else []
    return _metadata(schema, parquet.metadata.num_rows, preview, path)


def _metadata(schema: pa.Schema, num_rows: int, preview: list[dict], path: Path | None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "dagster/row_count": num_rows,
        "dagster/column_schema": dg.TableSchema(columns=[dg.TableColumn(name=f.name, type=str(f.type))
                                                         for f in schema]),
    }
    if path is not None:
        meta["dagster/uri"] = dg.MetadataValue.path(str(path))
    if preview:
        meta["preview"] = dg.MetadataValue.md(markdown_table(preview))
    return meta


def markdown_table(rows: list[dict[str, Any]], max_cell: int = 60) -> str:
    if not rows:
        return "_empty_"
    headers = list(rows[0])

    def cell(value: Any) -> str:
        text = str(value).replace("|", "\\|").replace("\n", " ")
        return text if len(text) <= max_cell else text[: max_cell - 1] + "…"

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(r.get(h)) for h in headers) + " |" for r in rows]
    return "\n".join(lines)
