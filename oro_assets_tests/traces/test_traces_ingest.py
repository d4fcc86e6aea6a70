"""Ingest of a partition that mixes every format and every ingest/normalise failure: conservation,
one reason per record, Parquet outputs written atomically and deterministically."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest

from oro_assets.traces import samples
from oro_assets.traces.ingest import normalize_partition
from oro_assets.traces.reader import iter_partition_files
from oro_assets.traces.schema import NORMALIZED_SCHEMA, QUARANTINE_SCHEMA, validate_row

DAY = "2026-01-09"


def build_day(root: Path) -> dict[str, int]:
    """Write a day of three parts; return the expected count per outcome (hand-tallied)."""
    day = root / DAY
    day.mkdir(parents=True)
    env, dlg, sb, oa = (orjson.dumps(f(i)) for f, i in ((samples.oro_envelope, 1), (samples.oro_dialogue, 2),
                                                         (samples.shoppingbench_rollout, 3), (samples.openai_row, 4)))
    part0 = [
        env, dlg, sb, oa,                                   # 4 good, one per format
        env,                                                # duplicate_record
        env[:-40],                                          # malformed_json (truncated line)
        b'{"query": "caf\xe9", "dialogue": []}',           # invalid_encoding
        b'{"score": NaN}',                                   # malformed_json
        b"[" * 1500 + b"]" * 1500,                           # malformed_json (too deep)
        b'{"hello": "world"}',                               # unknown_format
        b'{"problem_id": "p", "dialogue": null}',            # empty_dialogue
        b'{"problem_id": "p", "dialogue": [{"completion": {"message": "str"}}]}',  # schema_violation
        b"",                                                 # blank: not a record
        b'{"pad": "' + b"x" * 70_000 + b'"}',                # oversized_record (limit 64 KiB below)
    ]
    (day / "part-00000.jsonl").write_bytes(b"\n".join(part0) + b"\n")
    good = [orjson.dumps(samples.oro_envelope(i)) for i in range(10, 30)]
    blob = gzip.compress(b"\n".join(good) + b"\n")
    (day / "part-00001.jsonl.gz").write_bytes(blob[: len(blob) // 2])  # ends early -> corrupt_file for the rest
    (day / "part-00002.jsonl.gz").write_bytes(b"this is not gzip")       # corrupt_file
    (day / "part-00003.jsonl").write_bytes(b"")                          # empty: nothing
    return {"duplicate_record": 1, "malformed_json": 3, "invalid_encoding": 1, "unknown_format": 1,
            "empty_dialogue": 1, "schema_violation": 1, "oversized_record": 1, "corrupt_file": 2}


@pytest.fixture
def day_root(tmp_path):
    root = tmp_path / "firehose"
    expected = build_day(root)
    return root, expected


def run(root: Path, out: Path, **kw):
    files = iter_partition_files(str(root), DAY)
    return normalize_partition(files, DAY, out / "normalized.parquet", out / "quarantine.parquet",
                               max_line_bytes=64 * 1024, batch_size=7, **kw)


def test_conservation_and_reasons(day_root, tmp_path):
    root, expected = day_root
    out = tmp_path / "out"
    stats = run(root, out, validate=True)
    norm = pq.read_table(out / "normalized.parquet")
    quar = pq.read_table(out / "quarantine.parquet")
    assert norm.schema.equals(NORMALIZED_SCHEMA) and quar.schema.equals(QUARANTINE_SCHEMA)
    assert dict(stats.by_reason) == expected
    n_good_gz = norm.num_rows - 4
    assert 0 < n_good_gz < 20  # lines before the truncation point survive
    assert stats.raw_records == norm.num_rows + quar.num_rows == stats.normalized + stats.quarantined
    assert stats.blank_lines == 1 and stats.files == 4
    assert dict(stats.by_format) == {"oro_envelope": 1 + n_good_gz, "dialogue_only": 1,
                                     "shoppingbench_rollout": 1, "openai_messages": 1}
    # one ledger-ready row per record, ids unique across both tables
    ids = norm.column("trace_id").to_pylist() + quar.column("trace_id").to_pylist()
    assert len(ids) == len(set(ids))
    rows = norm.to_pylist()
    assert all(validate_row(r) == [] for r in rows)
    part0 = (root / DAY / "part-00000.jsonl").read_bytes().split(b"\n")
    for r in rows:
        if r["source_file"].endswith("part-00000.jsonl"):
            assert hashlib.sha256(part0[r["line_no"] - 1]).hexdigest() == r["raw_sha256"]
    by_reason = {q["reason"]: q for q in quar.to_pylist()}
    assert by_reason["duplicate_record"]["line_no"] == 5
    assert by_reason["unknown_format"]["stage"] == "normalize" and by_reason["unknown_format"]["line_no"] == 10
    assert by_reason["schema_violation"]["format"] == "oro_envelope"
    assert by_reason["oversized_record"]["line_no"] == 14
    corrupt = [q for q in quar.to_pylist() if q["reason"] == "corrupt_file"]
    assert {Path(q["source_file"]).name for q in corrupt} == {"part-00001.jsonl.gz", "part-00002.jsonl.gz"}
    assert sorted(p.name for p in out.iterdir()) == ["normalized.parquet", "quarantine.parquet"]  # no temp left


def test_rerun_is_identical(day_root, tmp_path):
    root, _ = day_root
    a, b = tmp_path / "a", tmp_path / "b"
    run(root, a)
    run(root, b)
    for name in ("normalized.parquet", "quarantine.parquet"):
        assert pq.read_table(a / name).equals(pq.read_table(b / name))


def test_failed_run_leaves_no_partial_file(day_root, tmp_path, monkeypatch):
    root, _ = day_root
    out = tmp_path / "out"
    import oro_assets.traces.ingest as ingest

    calls = {"n": 0}
    real = ingest.normalize_item

    def boom(item, **kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # an interruption mid-partition (not a record problem)
        return real(item, **kw)

    monkeypatch.setattr(ingest, "normalize_item", boom)
    with pytest.raises(KeyboardInterrupt):
        run(root, out)
    assert list(out.iterdir()) == []


def test_normaliser_bug_becomes_schema_violation(day_root, tmp_path, monkeypatch):
    root, _ = day_root
    import oro_assets.traces.ingest as ingest

    def broken(obj, *, provenance):
        raise RuntimeError("bug")

    monkeypatch.setattr(ingest, "normalize_record", broken)
    stats = run(root, tmp_path / "o")
    ingest_stage = 1 + 3 + 1 + 1 + 2  # duplicate, malformed x3, encoding, oversized, corrupt x2
    assert stats.normalized == 0
    assert stats.by_reason["schema_violation"] == stats.raw_records - ingest_stage > 10


def test_two_workers_give_the_serial_result(day_root, tmp_path):
    root, _ = day_root
    day = root / DAY
    # cross-file duplicates: a good line and a malformed line of part 0 repeated in part 4
    part0 = (day / "part-00000.jsonl").read_bytes().split(b"\n")
    (day / "part-00004.jsonl").write_bytes(part0[5] + b"\n" + part0[0] + b"\n" + part0[0] + b"\n")
    serial = run(root, tmp_path / "s")
    parallel = run(root, tmp_path / "p", workers=2)
    assert parallel.to_dict() == serial.to_dict()
    assert serial.by_reason["duplicate_record"] == 4
    for name in ("normalized.parquet", "quarantine.parquet"):
        assert pq.read_table(tmp_path / "p" / name).equals(pq.read_table(tmp_path / "s" / name))
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == ["normalized.parquet", "quarantine.parquet"]


def test_workers_do_not_fork_the_calling_process(day_root, tmp_path, monkeypatch):
    """A child forked from a process whose Arrow or torch threads hold a lock waits on it forever (a worker hung
    the suite this way); the workers start from the fork server, whose process has no such threads."""
    import multiprocessing

    asked: list[str | None] = []
    real = multiprocessing.get_context
    monkeypatch.setattr(multiprocessing, "get_context", lambda method=None: asked.append(method) or real(method))
    root, _ = day_root
    serial = run(root, tmp_path / "s")
    parallel = run(root, tmp_path / "p", workers=2)
    assert asked and "fork" not in asked
    assert parallel.to_dict() == serial.to_dict()


def test_iter_normalized_agrees_with_tables(day_root, tmp_path):
    from oro_assets.traces.ingest import iter_normalized

    root, expected = day_root
    files = iter_partition_files(str(root), DAY)
    items = list(iter_normalized(files, DAY, max_line_bytes=64 * 1024))
    run(root, tmp_path / "o")
    rows = pq.read_table(tmp_path / "o" / "normalized.parquet").to_pylist()
    got = [it for it in items if isinstance(it, tuple)]
    assert [r for r, _ in got] == rows
    assert all(p["steps"] == orjson.loads(r["steps"]) for r, p in got)
    assert len(items) - len(got) == sum(expected.values())


def test_row_batches_hand_on_what_the_batch_reads_back(day_root):
    """The in-memory chain feeds the next step the rows a batch was built from instead of reading the
    batch back: they must be what ``to_pylist`` gives, key order and Python types included."""
    from oro_assets.traces.ingest import ingest_batches, ingest_row_batches

    root, _ = day_root
    files = iter_partition_files(str(root), DAY)
    n = 0
    pairs = list(ingest_batches(files, DAY, batch_size=3, max_line_bytes=64 * 1024))
    for (rows, norm, quar), (norm2, quar2) in zip(
            ingest_row_batches(files, DAY, batch_size=3, max_line_bytes=64 * 1024), pairs, strict=True):
        assert norm.equals(norm2) and quar.equals(quar2)
        back = norm.to_pylist()
        assert [[(k, type(v), v) for k, v in r.items()] for r in rows] == \
            [[(k, type(v), v) for k, v in r.items()] for r in back]
        assert [list(r) for r in rows] == [NORMALIZED_SCHEMA.names] * len(rows)
        n += len(rows)
    # every format's good record of part 0, and part 1's lines decoded before its gzip breaks
    assert n == sum(norm.num_rows for norm, _ in pairs) > 4
