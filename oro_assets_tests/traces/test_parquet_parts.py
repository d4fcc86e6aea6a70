"""Parquet parts of a day folder (as Hugging Face stores a dataset): read in batches, one record a row,
with the provenance JSONL lines have; every other file of the folder refused with a reason."""

from __future__ import annotations

import decimal
import hashlib
import json

import pyarrow as pa
import pyarrow.parquet as pq

from oro_assets.reasons import ReasonCode
from oro_assets.traces.reader import Quarantined, RawLine, iter_partition_files, read_records

DAY = "2026-01-02"


def rows_of(n: int, start: int = 0) -> list[dict]:
    return [{"messages": [{"role": "user", "content": f"find red shoes ñ {i}"},
                          {"role": "assistant", "content": f"answer {i}"}], "problem_id": f"p{i}"}
            for i in range(start, start + n)]


def canonical_sha(row: dict) -> str:
    """sha256 of the row's JSON with sorted keys and no spaces, computed with the standard library."""
    text = json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def write(path, rows: list[dict], **kw) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path, **kw)
    return str(path)


def read(files, **kw):
    return list(read_records(files, partition=DAY, **kw))


def test_rows_carry_file_row_and_sha_of_their_canonical_json(tmp_path):
    rows = rows_of(3)
    path = write(tmp_path / "train-00000-of-00001.parquet", rows)
    out = read([path])
    assert all(isinstance(x, RawLine) for x in out)
    assert [x.provenance.line_no for x in out] == [1, 2, 3]
    assert {x.provenance.source_file for x in out} == {path}
    assert [x.provenance.raw_sha256 for x in out] == [canonical_sha(r) for r in rows]
    assert [x.obj for x in out] == rows


def test_read_a_batch_at_a_time_across_row_groups_never_the_whole_file(tmp_path, monkeypatch):
    rows = rows_of(150)
    path = write(tmp_path / "big.parquet", rows, row_group_size=50)

    def whole(*_a, **_k):
        raise AssertionError("the whole Parquet file was read at once")

    monkeypatch.setattr(pq.ParquetFile, "read", whole)
    monkeypatch.setattr(pq, "read_table", whole)
    out = read([path])
    assert [x.provenance.line_no for x in out] == list(range(1, 151))
    assert [x.obj["problem_id"] for x in out] == [f"p{i}" for i in range(150)]


def test_a_row_group_that_breaks_keeps_the_rows_before_it(tmp_path):
    path = write(tmp_path / "part.parquet", rows_of(150), row_group_size=50, compression="none")
    group = pq.ParquetFile(path).metadata.row_group(1)
    data = bytearray((tmp_path / "part.parquet").read_bytes())
    for c in range(group.num_columns):  # overwrite the page headers of the second row group
        col = group.column(c)
        start = col.dictionary_page_offset or col.data_page_offset
        data[start:start + 16] = b"\xff" * 16
    (tmp_path / "part.parquet").write_bytes(bytes(data))
    out = read([path])
    assert [x.provenance.line_no for x in out[:-1]] == list(range(1, 51))
    rest = out[-1]
    assert isinstance(rest, Quarantined) and rest.reason is ReasonCode.CORRUPT_FILE
    assert rest.line_no == 51 and rest.raw_sha256 is None and "row 51" in rest.detail


def test_a_file_that_is_not_parquet_is_one_corrupt_file_row_and_the_next_file_is_read(tmp_path):
    bad = tmp_path / "a.parquet"
    bad.write_text("name,value\nnot,parquet\n")
    good = write(tmp_path / "b.parquet", rows_of(2))
    out = read([str(bad), good])
    assert isinstance(out[0], Quarantined) and out[0].reason is ReasonCode.CORRUPT_FILE
    assert out[0].source_file == str(bad) and out[0].raw_sha256 is None and "Parquet" in out[0].detail
    assert [type(x) for x in out[1:]] == [RawLine, RawLine]


def test_repeated_rows_are_duplicates_within_and_across_parquet_files(tmp_path):
    rows = rows_of(2)
    a = write(tmp_path / "a.parquet", [rows[0], rows[1], rows[0]])
    b = write(tmp_path / "b.parquet", [rows[1]])
    out = read([a, b])
    assert [type(x) for x in out] == [RawLine, RawLine, Quarantined, Quarantined]
    assert [x.reason for x in out[2:]] == [ReasonCode.DUPLICATE_RECORD] * 2
    assert (out[2].line_no, out[2].raw_sha256) == (3, canonical_sha(rows[0]))
    assert (out[3].source_file, out[3].line_no, out[3].raw_sha256) == (b, 1, canonical_sha(rows[1]))


def test_a_row_over_the_record_limit_is_oversized_with_its_sha(tmp_path):
    rows = [{"messages": [{"role": "user", "content": "x" * 5000}]}, *rows_of(1)]
    out = read([write(tmp_path / "a.parquet", rows)], max_line_bytes=4096)
    assert isinstance(out[0], Quarantined) and out[0].reason is ReasonCode.OVERSIZED_RECORD
    assert out[0].raw_sha256 == canonical_sha(rows[0]) and out[0].line_no == 1
    assert isinstance(out[1], RawLine)


def test_a_value_json_cannot_hold_is_a_schema_violation_row_not_a_crash(tmp_path):
    table = pa.table({"price": pa.array([decimal.Decimal("1.50"), decimal.Decimal("2.25")], pa.decimal128(5, 2)),
                      "messages": [[{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]]})
    pq.write_table(table, tmp_path / "a.parquet")
    out = read([str(tmp_path / "a.parquet")])
    assert [x.reason for x in out] == [ReasonCode.SCHEMA_VIOLATION] * 2
    assert [x.line_no for x in out] == [1, 2] and len({x.trace_id for x in out}) == 2


def test_every_file_of_the_day_is_read_or_refused_with_a_reason(tmp_path):
    day = tmp_path / DAY
    write(day / "train-00000-of-00001.parquet", rows_of(3))
    (day / "part-00000.jsonl").write_text(json.dumps(rows_of(1, 7)[0]) + "\n")
    (day / "notes.txt").write_text("a note\n")
    (day / "data.csv").write_text("a,b\n")
    (day / "_SUCCESS").write_text("")
    (day / ".train.parquet.crc").write_bytes(b"\0")
    files = iter_partition_files(str(tmp_path), DAY)
    assert [f.rsplit("/", 1)[1] for f in files] == ["data.csv", "notes.txt", "part-00000.jsonl",
                                                    "train-00000-of-00001.parquet"]
    out = read(files)
    refused = [x for x in out if isinstance(x, Quarantined)]
    assert [(x.source_file.rsplit("/", 1)[1], x.reason) for x in refused] == [
        ("data.csv", ReasonCode.UNSUPPORTED_FILE), ("notes.txt", ReasonCode.UNSUPPORTED_FILE)]
    assert all(x.raw_sha256 is None and x.line_no == 1 and ".parquet" in x.detail for x in refused)
    assert sum(isinstance(x, RawLine) for x in out) == 4


def test_a_parquet_file_without_rows_yields_nothing(tmp_path):
    path = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"messages": pa.array([], pa.list_(pa.struct([("role", pa.string())])))}), path)
    assert read([str(path)]) == []


def test_parallel_ingest_of_parquet_and_jsonl_parts_equals_the_serial_one(tmp_path):
    from oro_assets.traces.ingest import normalize_partition
    from oro_assets.traces.samples import openai_row

    day = tmp_path / DAY
    rows = [openai_row(s) for s in range(1, 6)]
    write(day / "a.parquet", rows[:3] + rows[:1])
    write(day / "b.parquet", rows[2:])  # repeats a.parquet's third row: a duplicate across parts
    (day / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[3:]) + "{broken\n")
    (day / "d.txt").write_text("x")
    files = iter_partition_files(str(tmp_path), DAY)
    tables = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        stats = normalize_partition(files, DAY, out / "n.parquet", out / "q.parquet", workers=workers)
        tables.append((pq.read_table(out / "n.parquet"), pq.read_table(out / "q.parquet"), stats.raw_records))
    (n1, q1, r1), (n2, q2, r2) = tables
    assert n1.equals(n2) and q1.equals(q2) and r1 == r2 == 4 + 3 + 3 + 1
    assert sorted(q1.column("reason").to_pylist()) == ["duplicate_record", "duplicate_record", "malformed_json",
                                                       "unsupported_file"]
