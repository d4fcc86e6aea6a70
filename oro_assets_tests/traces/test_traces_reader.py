"""The streaming reader: provenance, every ingest quarantine reason from a real triggering file, paths."""

from __future__ import annotations

import gzip
import hashlib
import os
from pathlib import Path

import orjson
import pytest

from oro_assets.reasons import ReasonCode
from oro_assets.traces import samples
from oro_assets.traces.reader import (
    PartitionPathError,
    Quarantined,
    RawLine,
    iter_partition_files,
    read_records,
)

DAY = "2026-01-02"


def good_line(seed: int) -> bytes:
    return orjson.dumps(samples.oro_envelope(seed))


def write(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return str(path)


def read(files, **kw):
    return list(read_records(files, partition=DAY, **kw))


def test_provenance_line_numbers_and_sha(tmp_path):
    lines = [good_line(1), good_line(2), good_line(3)]
    # CRLF terminator on line 2, blank line between 2 and 3, no final newline
    data = lines[0] + b"\n" + lines[1] + b"\r\n\n" + lines[2]
    path = write(tmp_path / DAY / "part-00000.jsonl", data)
    out = read([path])
    assert all(isinstance(x, RawLine) for x in out)
    assert [x.provenance.line_no for x in out] == [1, 2, 4]  # the blank line 3 counts but yields nothing
    for x, raw in zip(out, lines, strict=True):
        # sha256 of the exact line bytes without the terminator
        assert x.provenance.raw_sha256 == hashlib.sha256(raw).hexdigest()
        assert x.provenance.source_file == path and x.provenance.partition == DAY
        assert x.obj == orjson.loads(raw)


def test_gzip_part_reads_like_plain(tmp_path):
    lines = [good_line(i) for i in range(3)]
    plain = write(tmp_path / "a.jsonl", b"\n".join(lines) + b"\n")
    gz = write(tmp_path / "b.jsonl.gz", gzip.compress(b"\n".join(lines) + b"\n"))
    a = read([plain])
    b = list(read_records([gz], partition=DAY))
    assert [x.provenance.raw_sha256 for x in a] == [x.provenance.raw_sha256 for x in b]
    assert [x.provenance.line_no for x in b] == [1, 2, 3]


def only(items, cls=Quarantined):
    assert len(items) == 1 and isinstance(items[0], cls), items
    return items[0]


def test_truncated_line_is_malformed_json(tmp_path):
    raw = good_line(4)[:-500]
    q = only(read([write(tmp_path / "p.jsonl", raw + b"\n")]))
    assert q.reason is ReasonCode.MALFORMED_JSON
    assert q.raw_sha256 == hashlib.sha256(raw).hexdigest() and q.line_no == 1
    assert q.trace_id == "tr_" + q.raw_sha256[:24]


def test_invalid_utf8(tmp_path):
    raw = b'{"problem_id": "p", "dialogue": [], "query": "caf\xe9"}'
    q = only(read([write(tmp_path / "p.jsonl", raw)]))
    assert q.reason is ReasonCode.INVALID_ENCODING


@pytest.mark.parametrize("raw", [b'{"score": NaN, "dialogue": []}', b'{"x": Infinity}', b'[-Infinity]',
                                 b'{"a": 1} trailing', b"{'single': 'quotes'}"])
def test_nan_infinity_and_garbage_are_malformed(tmp_path, raw):
    assert only(read([write(tmp_path / "p.jsonl", raw)])).reason is ReasonCode.MALFORMED_JSON


def test_deep_nesting_is_malformed(tmp_path):
    raw = b"[" * 2000 + b"]" * 2000
    assert only(read([write(tmp_path / "p.jsonl", raw)])).reason is ReasonCode.MALFORMED_JSON


def test_oversized_line_hashed_and_skipped(tmp_path):
    big = b'{"dialogue": [], "pad": "' + b"x" * 50_000 + b'"}'
    assert len(good_line(1)) < 30_000 and len(good_line(2)) < 30_000
    path = write(tmp_path / "p.jsonl", good_line(1) + b"\n" + big + b"\n" + good_line(2) + b"\n")
    out = read([path], max_line_bytes=30_000)
    assert [type(x).__name__ for x in out] == ["RawLine", "Quarantined", "RawLine"]
    q = out[1]
    assert q.reason is ReasonCode.OVERSIZED_RECORD and q.line_no == 2
    assert q.raw_sha256 == hashlib.sha256(big).hexdigest()
    assert out[2].provenance.line_no == 3


def test_oversized_last_line_spanning_chunks(tmp_path):
    big = b"y" * (3 << 20)  # longer than the 1 MiB read chunk, no final newline
    out = read([write(tmp_path / "p.jsonl", good_line(1) + b"\n" + big)], max_line_bytes=1 << 20)
    assert isinstance(out[0], RawLine)
    assert out[1].reason is ReasonCode.OVERSIZED_RECORD and out[1].raw_sha256 == hashlib.sha256(big).hexdigest()


def test_decompressed_part_limit_stops_a_gzip_bomb(tmp_path):
    lines = b"\n".join(good_line(i) for i in range(2)) + b"\n" + b" " * (4 << 20)
    path = write(tmp_path / "bomb.jsonl.gz", gzip.compress(lines))
    out = read([path], max_part_bytes=2 << 20)
    # the lines decoded before the limit are kept; one row stands for the unread rest
    assert [type(x).__name__ for x in out] == ["RawLine", "RawLine", "Quarantined"]
    assert out[2].reason is ReasonCode.OVERSIZED_RECORD and out[2].raw_sha256 is None
    assert out[2].line_no == 3


def test_truncated_gzip_keeps_earlier_lines(tmp_path):
    lines = [good_line(i) for i in range(40)]
    blob = gzip.compress(b"\n".join(lines) + b"\n")
    path = write(tmp_path / "cut.jsonl.gz", blob[: len(blob) * 2 // 3])
    out = read([path])
    good = [x for x in out if isinstance(x, RawLine)]
    assert good, "lines before the cut must be kept"
    assert [x.provenance.raw_sha256 for x in good] == [hashlib.sha256(raw).hexdigest() for raw in lines[: len(good)]]
    tail = out[-1]
    assert isinstance(tail, Quarantined) and tail.reason is ReasonCode.CORRUPT_FILE
    assert tail.line_no == len(good) + 1 and tail.raw_sha256 is None
    assert sum(isinstance(x, Quarantined) for x in out) == 1


def test_corrupt_gzip_body(tmp_path):
    blob = bytearray(gzip.compress(b"\n".join(good_line(i) for i in range(20)) + b"\n"))
    for i in range(200, 260):
        blob[i] ^= 0xFF
    out = read([write(tmp_path / "bad.jsonl.gz", bytes(blob))])
    assert out[-1].reason is ReasonCode.CORRUPT_FILE
    assert all(isinstance(x, RawLine) for x in out[:-1])


def test_not_gzip_named_gz(tmp_path):
    q = only(read([write(tmp_path / "plain.jsonl.gz", good_line(1) + b"\n")]))
    assert q.reason is ReasonCode.CORRUPT_FILE and "not gzip" in q.detail


def test_empty_files_yield_nothing(tmp_path):
    assert read([write(tmp_path / "e.jsonl", b""), write(tmp_path / "e2.jsonl.gz", b""),
                 write(tmp_path / "e3.jsonl.gz", gzip.compress(b""))]) == []


def test_duplicates_within_partition_across_files(tmp_path):
    a, b = good_line(1), good_line(2)
    f1 = write(tmp_path / "p0.jsonl", a + b"\n" + b + b"\n" + a + b"\n")
    f2 = write(tmp_path / "p1.jsonl.gz", gzip.compress(a + b"\n"))
    out = read([f1, f2])
    kinds = [(type(x).__name__, getattr(x, "reason", None)) for x in out]
    assert kinds == [("RawLine", None), ("RawLine", None), ("Quarantined", ReasonCode.DUPLICATE_RECORD),
                     ("Quarantined", ReasonCode.DUPLICATE_RECORD)]
    sha = hashlib.sha256(a).hexdigest()
    assert out[2].trace_id == f"tr_{sha[:24]}_dup1" and out[3].trace_id == f"tr_{sha[:24]}_dup2"
    assert (out[3].source_file, out[3].line_no) == (f2, 1)


def test_a_corrupt_file_does_not_lose_the_good_files(tmp_path):
    f1 = write(tmp_path / "a.jsonl.gz", b"garbage, not gzip")
    f2 = write(tmp_path / "b.jsonl", good_line(7) + b"\n")
    out = read([f1, f2])
    assert out[0].reason is ReasonCode.CORRUPT_FILE and isinstance(out[1], RawLine)


def test_iter_partition_files_sorted_and_filtered(tmp_path):
    day = tmp_path / DAY
    for name in ("part-00001.jsonl.gz", "part-00000.jsonl", "notes.txt", "part-2.json", "train.parquet",
                 "_SUCCESS", ".part-3.jsonl.crc"):
        write(day / name, b"")
    (day / "sub.jsonl").mkdir()
    # every file of the day but hidden files and markers: the reader reads or refuses each
    assert iter_partition_files(str(tmp_path), DAY) == [str(day / n) for n in (
        "notes.txt", "part-00000.jsonl", "part-00001.jsonl.gz", "part-2.json", "train.parquet")]
    assert iter_partition_files(str(tmp_path), "2026-02-01") == []
    assert iter_partition_files("file://" + str(tmp_path), DAY)[1].endswith("part-00000.jsonl")


@pytest.mark.parametrize("date", ["../etc", "2026-01-02/..", "2026/01/02", "2026-13-01", "..", "", "2026-01-02\n"])
def test_path_traversal_dates_rejected(tmp_path, date):
    with pytest.raises(PartitionPathError):
        iter_partition_files(str(tmp_path), date)


def test_symlink_escaping_root_rejected(tmp_path):
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(good_line(1))
    root = tmp_path / "root"
    (root / DAY).mkdir(parents=True)
    os.symlink(outside, root / DAY / "part-00000.jsonl")
    with pytest.raises(PartitionPathError):
        iter_partition_files(str(root), DAY)


def test_invalid_partition_for_reader():
    with pytest.raises(PartitionPathError):
        list(read_records([], partition="../x"))


def test_fsspec_url_root(tmp_path):
    import fsspec

    fs = fsspec.filesystem("memory")
    root = "memory://firehose-test"
    with fs.open(f"/firehose-test/{DAY}/part-00000.jsonl.gz", "wb") as fh:
        fh.write(gzip.compress(good_line(1) + b"\n" + good_line(2) + b"\n"))
    try:
        files = iter_partition_files(root, DAY)
        assert len(files) == 1 and files[0].startswith("memory://")
        assert files[0].endswith(f"/firehose-test/{DAY}/part-00000.jsonl.gz")
        out = read(files)
        assert [x.provenance.line_no for x in out] == [1, 2]
        assert out[0].provenance.source_file == files[0]
    finally:
        fs.rm("/firehose-test", recursive=True)


def test_oversized_crlf_line_hash_excludes_the_cr_at_a_chunk_boundary():
    from oro_assets.traces.reader import _LINE, _LONG, _physical_lines

    class Chunks:  # a stream whose reads end exactly where the test says
        def __init__(self, *chunks: bytes) -> None:
            self.chunks = list(chunks)

        def read1(self, n: int) -> bytes:
            return self.chunks.pop(0) if self.chunks else b""

        read = read1

    big = b"z" * 5_000
    for chunks in ([big[:3_000], big[3_000:] + b"\r", b"\nok\r\n"],  # "\r" ends a read, "\n" starts the next
                   [big + b"\r", b"\nok\r\n"],                     # the line turns oversized in the read that ends with "\r"
                   [big[:3_000], big[3_000:], b"\r\nok\r\n"]):
        events = list(_physical_lines(Chunks(*chunks), 1_000, 1 << 30))
        assert events[0] == (_LONG, hashlib.sha256(big).hexdigest(), len(big) + 1)
        assert events[1] == (_LINE, b"ok\r")


def test_record_limit_is_on_the_record_not_its_crlf(tmp_path):
    line = good_line(1)
    out = read([write(tmp_path / "p.jsonl", line + b"\r\n")], max_line_bytes=len(line))
    assert isinstance(out[0], RawLine)
    assert out[0].provenance.raw_sha256 == hashlib.sha256(line).hexdigest()
    over = read([write(tmp_path / "q.jsonl", line + b"\r\n")], max_line_bytes=len(line) - 1)
    assert over[0].reason is ReasonCode.OVERSIZED_RECORD


def test_repeated_oversized_lines_are_duplicates_with_their_own_ids(tmp_path):
    big = b'{"pad": "' + b"x" * 5_000 + b'"}'
    out = read([write(tmp_path / "p.jsonl", big + b"\n" + big + b"\n")], max_line_bytes=1000)
    assert [q.reason for q in out] == [ReasonCode.OVERSIZED_RECORD, ReasonCode.DUPLICATE_RECORD]
    assert out[1].trace_id == out[0].trace_id + "_dup1" and out[1].line_no == 2


def test_a_first_line_of_only_a_bom_is_blank(tmp_path):
    from oro_assets.traces.reader import RecordReader

    reader = RecordReader([write(tmp_path / "p.jsonl", b"\xef\xbb\xbf\n" + good_line(1) + b"\n")], partition=DAY)
    out = list(reader)
    assert len(out) == 1 and isinstance(out[0], RawLine) and out[0].provenance.line_no == 2
    assert reader.blank_lines == 1
