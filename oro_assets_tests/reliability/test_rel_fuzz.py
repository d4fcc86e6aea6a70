"""Fuzzed firehose: 10,000 hostile records from real simulator lines through ingest and curation.

Expectations come from the generator's manifest (what was written, line by line), never from the
code under test: every non-blank line of an intact file has exactly one ledger row with its sha256,
a corrupt part yields the lines before the break plus one ``corrupt_file`` row, and mutation kinds
with a determined fate (truncated → malformed_json, ...) get that reason on their first occurrence.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from rel_hostile import KINDS, base_lines, build_hostile_day, expected_rows

from oro_assets.arena.problems import load_problems
from oro_assets.curation.clusters import Registry
from oro_assets.curation.ledger import check_conservation
from oro_assets.curation.pipeline import curate_partition
from oro_assets.judge.rule import RuleJudge
from oro_assets.reasons import ReasonCode
from oro_assets.traces.ingest import normalize_partition
from oro_assets.traces.reader import iter_partition_files

N_FUZZ = 10_000
PART_LIMIT = 48 << 20  # decompressed bytes per part in this test (the 64 MiB bomb must trip it)


@pytest.fixture(scope="module")
def hostile_day(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fuzz")
    base, world = base_lines(tmp / "base", n=120)
    manifest = build_hostile_day(tmp / "firehose", base, N_FUZZ, seed=9, bomb_bytes=64 << 20)
    return manifest, tmp, world


@pytest.mark.slow
def test_ten_thousand_hostile_records_are_all_accounted_for(hostile_day):
    manifest, tmp, world = hostile_day
    assert sum(manifest.kinds.values()) == N_FUZZ
    assert set(manifest.kinds) >= set(KINDS) - {"clean"}, "every mutation kind is exercised"
    files = iter_partition_files(str(tmp / "firehose"), manifest.date)
    stats = normalize_partition(files, manifest.date, tmp / "n.parquet", tmp / "q.parquet", max_part_bytes=PART_LIMIT)
    normalized = pq.read_table(tmp / "n.parquet").to_pylist()
    quarantine = pq.read_table(tmp / "q.parquet").to_pylist()
    problems = load_problems([world / "problems.jsonl"])
    out = curate_partition(normalized, quarantine, Registry(), judge=RuleJudge(), pool_problems=problems,
                           partition=manifest.date)
    ledger = out.trace_ledger

    expected, rest, n_rest = expected_rows(manifest, ledger)
    # zero crashes, and every record has one ledger row: raw non-blank lines read + one row per unreadable rest
    assert len(ledger) == stats.raw_records
    assert len(ledger) == len(expected) + n_rest + sum(
        1 for r in ledger if r["raw_sha256"] is not None and Path(r["source_file"]).name in rest)
    assert check_conservation(stats.raw_records, ledger, out.curated_traces) == []
    got = {(Path(r["source_file"]).name, r["line_no"]): r for r in ledger if r["raw_sha256"] is not None}
    # corrupt parts: the first lines (decoded before the corruption point) are the lines written
    for name in ("part-00000.jsonl.gz", "part-00001.jsonl.gz"):
        f = next(f for f in manifest.files if f.name == name)
        first = [ln for ln in f.lines if not ln.blank][:100]
        assert [got[(name, ln.line_no)]["raw_sha256"] for ln in first] == [ln.sha256 for ln in first]
    all_read = got
    got = {k: v for k, v in got.items() if k[0] not in rest}
    assert set(got) == set(expected), "ledger rows of intact files differ from the lines written"
    for key, (sha, _kind) in expected.items():
        assert got[key]["raw_sha256"] == sha, key
    for row in ledger:
        assert row["fate"] in ("kept", "rejected")
        assert (row["reason"] is None) == (row["fate"] == "kept")
        if row["reason"] is not None:
            ReasonCode(row["reason"])
            assert row["detail"], row
    # the corrupt parts keep every line decoded before the break, and the good files of the day are whole
    assert rest["part-00000.jsonl.gz"] > 1 and rest["part-00001.jsonl.gz"] > 1
    assert rest["part-90002.jsonl.gz"] == 1
    intact = sum(1 for f in manifest.intact_files for ln in f.lines if not ln.blank)
    assert intact >= 0.75 * N_FUZZ
    # mutation kinds with a determined fate get it on the first occurrence of their bytes
    written = {(f.name, ln.line_no): ln for f in manifest.files for ln in f.lines}
    seen: set[str] = set()
    mismatches = []
    for key in sorted(all_read):  # files are read in name order, lines in order: the reader's order
        row = all_read[key]
        entry = written.get(key)
        kind = entry.kind if entry is not None and entry.sha256 == row["raw_sha256"] else None
        want = "duplicate_record" if row["raw_sha256"] in seen else KINDS.get(kind or "clean")
        seen.add(row["raw_sha256"])
        if want is not None and row["reason"] != want:
            mismatches.append((key, kind, want, row["reason"]))
    assert mismatches == [], mismatches[:20]
    counts = Counter(r["reason"] or "kept" for r in ledger)
    assert counts["kept"] > 0, "clean records still make it through"
    for reason in ("malformed_json", "invalid_encoding", "duplicate_record", "oversized_record", "corrupt_file",
                   "schema_violation", "unknown_format"):
        assert counts[reason] > 0, reason



MEMORY_PROBE = textwrap.dedent(
    """
    import json, sys
    from rel_hostile import peak_rss_mb
    from oro_assets.traces.ingest import normalize_partition
    from oro_assets.traces.reader import iter_partition_files
    root, date, out = sys.argv[1:4]
    import pyarrow  # noqa: F401  (imports are counted in the baseline)
    base = peak_rss_mb()
    stats = normalize_partition(iter_partition_files(root, date), date, out + "/n.parquet", out + "/q.parquet")
    peak = peak_rss_mb()
    print(json.dumps({"base_mb": base, "peak_mb": peak, "raw": stats.raw_records, "bytes": stats.bytes_read}))
    """
)


def _probe(root: Path, date: str, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    proc = subprocess.run([sys.executable, "-c", MEMORY_PROBE, str(root), date, str(out)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _big_day(root: Path, n: int, mib: int = 4) -> None:
    line = json.dumps({"messages": [{"role": "user", "content": "find a red lamp"},
                                    {"role": "assistant", "content": "", "reasoning_content": "%s"}]})
    day = root / "2026-01-02"
    day.mkdir(parents=True)
    with open(day / "part-00000.jsonl", "w") as fh:
        for i in range(n):
            fh.write(line.replace("%s", f"{i} " + "x" * (mib << 20)) + "\n")


@pytest.mark.slow
def test_ingest_memory_is_bounded_by_batch_bytes_not_by_day_size(tmp_path):
    """Days of 15 and 60 records of 4 MiB thinking (60 vs 240 MiB): peak RSS must not grow with the day."""
    growth = {}
    for n in (15, 60):
        _big_day(tmp_path / f"fh{n}", n)
        figures = _probe(tmp_path / f"fh{n}", "2026-01-02", tmp_path / f"out{n}")
        assert figures["raw"] == n
        growth[n] = figures["peak_mb"] - figures["base_mb"]
        assert figures["base_mb"] < 400, "the probe must measure its own peak, not its parent's"
    # holding the day would grow ~4x from 15 to 60 records (~850 MiB measured before the byte bound)
    assert growth[60] < 1.3 * growth[15] + 40, f"peak RSS growth {growth} MiB scales with the day"
    assert growth[60] < 400, growth
