"""The curation assets' streamed outputs: batches appended to a temporary file that replaces the
partition only when the block succeeds, and metadata read without loading the partition."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from oro_assets.curation.schemas import REJECTIONS_SCHEMA
from oro_assets.curation.store import PartitionWriter
from oro_assets.defs.common import parquet_metadata
from oro_assets.storage import Warehouse

SCHEMA = pa.schema([("trace_id", pa.string()), ("score", pa.float64()), ("kept", pa.bool_())])
DAY = "2026-03-01"


def _files(wh: Warehouse) -> list[str]:
    return sorted(p.name for p in wh.root.rglob("*") if p.is_file())


def test_batches_are_appended_and_published_on_success(tmp_path):
    wh = Warehouse(tmp_path)
    with PartitionWriter(wh, "labels", DAY, SCHEMA) as out:
        out.write([{"trace_id": "a", "score": None}])  # score all-null in this batch, kept absent
        out.write([])
        out.write(pa.table({"trace_id": ["b", "c"], "score": [1, 2]}))  # int64 column cast to the schema
        assert not wh.exists("labels", DAY)  # nothing visible until the block ends
    table = pq.read_table(wh.path("labels", DAY))
    assert table.schema == SCHEMA
    assert table.to_pylist() == [{"trace_id": "a", "score": None, "kept": None},
                                 {"trace_id": "b", "score": 1.0, "kept": None},
                                 {"trace_id": "c", "score": 2.0, "kept": None}]
    assert pq.ParquetFile(wh.path("labels", DAY)).metadata.num_row_groups == 2
    assert out.rows == 3
    assert _files(wh) == [f"{DAY}.parquet"]


def test_a_failed_block_leaves_the_previous_partition_untouched(tmp_path):
    wh = Warehouse(tmp_path)
    with PartitionWriter(wh, "labels", DAY, SCHEMA) as out:
        out.write([{"trace_id": "old"}])
    before = wh.path("labels", DAY).read_bytes()
    with pytest.raises(RuntimeError), PartitionWriter(wh, "labels", DAY, SCHEMA) as out:
        out.write([{"trace_id": "new"}])
        raise RuntimeError("judge down")
    assert wh.path("labels", DAY).read_bytes() == before
    assert _files(wh) == [f"{DAY}.parquet"]  # no temporary file left behind


def test_an_undeclared_column_fails_loudly_and_rejections_keep_the_ledger_columns(tmp_path):
    wh = Warehouse(tmp_path)
    with pytest.raises(ValueError, match="surprise"), PartitionWriter(wh, "labels", DAY, SCHEMA) as out:
        out.write([{"trace_id": "a", "surprise": 1}])
    assert not wh.exists("labels", DAY)
    with PartitionWriter(wh, "rejections_gates", DAY, REJECTIONS_SCHEMA, undeclared="drop") as out:
        out.write([{"trace_id": "a", "stage": "gates", "reason": "think_then_stop", "messages": "[...]"}])
    (row,) = pq.read_table(wh.path("rejections_gates", DAY)).to_pylist()
    assert row["reason"] == "think_then_stop" and "messages" not in row


def test_an_empty_partition_is_a_valid_file(tmp_path):
    wh = Warehouse(tmp_path)
    with PartitionWriter(wh, "labels", DAY, SCHEMA):
        pass
    table = pq.read_table(wh.path("labels", DAY))
    assert table.num_rows == 0 and table.schema == SCHEMA
    meta = parquet_metadata(wh.path("labels", DAY))
    assert meta["dagster/row_count"] == 0 and "preview" not in meta


def test_parquet_metadata_reads_the_footer_and_the_first_rows(tmp_path):
    wh = Warehouse(tmp_path)
    with PartitionWriter(wh, "labels", DAY, SCHEMA) as out:
        for i in range(0, 30, 3):
            out.write([{"trace_id": f"t{j:02d}", "score": float(j)} for j in range(i, i + 3)])
    meta = parquet_metadata(wh.path("labels", DAY), preview_rows=4, preview_columns=["trace_id", "missing"])
    assert meta["dagster/row_count"] == 30
    assert [c.name for c in meta["dagster/column_schema"].columns] == ["trace_id", "score", "kept"]
    preview = meta["preview"].value
    assert "| trace_id |" in preview and "missing" not in preview
    assert [line.split("|")[1].strip() for line in preview.splitlines()[2:]] == ["t00", "t01", "t02", "t03"]


def test_streaming_a_partition_holds_one_batch_not_the_file(tmp_path):
    """pyarrow's default pre-buffering keeps every column chunk read so far alive; the streaming
    reader must not (its Arrow memory stays near one batch however long the file)."""
    import os

    from oro_assets.storage import iter_parquet_batches

    wh = Warehouse(tmp_path)
    rows_per_batch, batches = 50, 80
    with PartitionWriter(wh, "big", DAY, pa.schema([("trace_id", pa.string()), ("messages", pa.string())])) as out:
        for b in range(batches):  # incompressible 8 KB strings: ~400 KB per row group, ~16 MB compressed
            out.write([{"trace_id": f"{b}-{i}", "messages": os.urandom(4096).hex()} for i in range(rows_per_batch)])
    path = wh.path("big", DAY)
    assert path.stat().st_size > 12 << 20
    base = pa.total_allocated_bytes()
    peak = seen = 0
    for batch in iter_parquet_batches(path, rows_per_batch):
        seen += batch.num_rows
        peak = max(peak, pa.total_allocated_bytes() - base)
    assert seen == rows_per_batch * batches
    assert peak < 4 << 20, f"reader held {peak >> 20} MiB of a {path.stat().st_size >> 20} MiB file"


def test_row_groups_are_cut_by_the_rows_not_by_how_they_arrived(tmp_path):
    from oro_assets.storage import RowGroups, parquet_writer

    schema = pa.schema([("trace_id", pa.string()), ("messages", pa.string())])
    rows = [{"trace_id": f"t{i}", "messages": "x" * (10 if i % 7 else 400)} for i in range(230)]
    table = pa.Table.from_pylist(rows, schema=schema)

    def write(name: str, chunks: list[int]) -> bytes:
        path = tmp_path / name
        with parquet_writer(path, schema) as writer:
            groups = RowGroups(writer, max_rows=50, max_bytes=1000, size_columns=("messages",))
            start = 0
            for n in chunks:
                groups.write(table.slice(start, n))
                start += n
            groups.close()
        return path.read_bytes()

    one = write("one.parquet", [230])
    assert write("many.parquet", [1, 99, 3, 0, 127]) == one
    assert write("batches.parquet", [100, 100, 30]) == one
    meta = pq.ParquetFile(tmp_path / "one.parquet").metadata
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert sum(sizes) == 230 and max(sizes) <= 50
    assert min(sizes[:-1]) < 50  # the 1,000-byte cap cut some groups before 50 rows
    assert pq.read_table(tmp_path / "one.parquet").equals(table)
