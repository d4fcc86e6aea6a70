"""Security: the API key never leaves the environment, servers bind 127.0.0.1, firehose paths cannot
escape the data dir, records are data only, and size limits carry reason codes."""

from __future__ import annotations

import gzip
import hashlib
import inspect
import itertools
import json
import os
import re
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import REPO, cli_env, run_cli, trajectory_of
from rel_hostile import base_lines, build_hostile_day, expected_rows

from oro_assets.cli import build_parser
from oro_assets.judge.llm import LLMJudge, LLMJudgeConfig
from oro_assets.judge.testing import Reply, StubOpenAIServer, verdict_reply
from oro_assets.settings import Settings
from oro_assets.storage import StorageError, Warehouse, safe_join, validate_partition
from oro_assets.traces import reader
from oro_assets.traces.reader import PartitionPathError, iter_partition_files, read_records

KEY = "sk-planted-" + hashlib.sha256(b"reliability-suite").hexdigest()[:32]
HOSTILE_DAY = "2026-01-05"


_leaky_calls = itertools.count(1)


def _leaky_judge(body: dict) -> Reply:
    """A hostile endpoint: echoes the key in verdict explanations and in 401 error bodies.

    Every sixth request gets the 401, counted in arrival order rather than picked by trajectory: five 401s in a
    row would open the judge's circuit breaker (threshold 5) and fail the day, which a by-trajectory choice did in
    about one run of fifty, depending on the order the client's threads happened to send in."""
    digest = int(hashlib.sha256(trajectory_of(body).encode()).hexdigest(), 16)
    if next(_leaky_calls) % 6 == 0:
        return Reply(status=401, raw_body=json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}",
                                                                "type": "invalid_request_error"}}))
    return verdict_reply(0.9 if digest % 2 else 0.5, explanation=f"Gate 4 passed. (auth was Bearer {KEY})")


def grep_tree(root: Path, needle: bytes) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if needle in data or needle in gzip_payload(data):
                hits.append(str(path))
    return hits


def gzip_payload(data: bytes) -> bytes:
    if data[:2] != b"\x1f\x8b":
        return b""
    try:
        return gzip.decompress(data)
    except (OSError, EOFError):
        return b""


@pytest.mark.slow
def test_hostile_day_end_to_end_with_a_key_echoing_judge(tmp_path, sim_firehose):
    """Dagster, end to end, on 2,000 hostile records (ORO_FIREHOSE_DIR with problems.jsonl beside the
    days) with ORO_JUDGE=llm against an endpoint that echoes the API key: both jobs succeed, every
    record is in the ledger with a reason, the corrupt parts are quarantined without losing the good
    parts of the day, and the key appears in no output of the run."""
    firehose = tmp_path / "firehose"
    firehose.mkdir()
    for name in ("problems.jsonl", "catalogue.jsonl"):
        shutil.copyfile(sim_firehose / name, firehose / name)
    base, _ = base_lines(tmp_path / "base", n=60)
    manifest = build_hostile_day(firehose, base, 2000, seed=21, date=HOSTILE_DAY, per_file=400, n_multi_mb=2,
                                 n_oversized=1)
    data = tmp_path / "data"
    with StubOpenAIServer(default=_leaky_judge) as server:
        env = cli_env(data, firehose, ORO_JUDGE="llm", ORO_JUDGE_BASE_URL=server.base_url,
                      ORO_JUDGE_MODEL="judge-a", OPENAI_API_KEY=KEY)
        arena = run_cli(["materialize", "--job", "arena_job"], env, timeout=240)
        assert arena.returncode == 0, arena.stdout[-3000:]
        proc = run_cli(["materialize", "--job", "curation_job", "--partition", HOSTILE_DAY], env, timeout=300)
        assert proc.returncode == 0, proc.stdout[-4000:]
        requests = server.requests
    assert requests and all(r.headers.get("authorization") == f"Bearer {KEY}" for r in requests)

    ledger = pq.read_table(data / "warehouse" / "trace_ledger" / f"{HOSTILE_DAY}.parquet").to_pylist()
    expected, rest, n_rest = expected_rows(manifest, ledger)
    from_faulty = sum(1 for r in ledger if r["raw_sha256"] is not None and Path(r["source_file"]).name in rest)
    assert len(ledger) == len(expected) + n_rest + from_faulty
    got = {(Path(r["source_file"]).name, r["line_no"]): r["raw_sha256"] for r in ledger
           if r["raw_sha256"] is not None and Path(r["source_file"]).name not in rest}
    assert got == {k: sha for k, (sha, _) in expected.items()}, "a record of an intact part is missing"
    assert set(rest) == {"part-00000.jsonl.gz", "part-00001.jsonl.gz", "part-90002.jsonl.gz", "README.txt"}
    assert all((r["reason"] is None) == (r["fate"] == "kept") for r in ledger)
    reasons = {r["reason"] for r in ledger}
    assert {"judge_unavailable", "malformed_json", "corrupt_file", "oversized_record", None} <= reasons

    output = (arena.stdout + arena.stderr + proc.stdout + proc.stderr).encode()
    assert KEY.encode() not in output
    assert grep_tree(data, KEY.encode()) == [], "the API key was written under the data root"


def test_key_is_redacted_from_verdicts_and_failures():
    script = [verdict_reply(0.7, explanation=f"ok {KEY}"),
              Reply(status=401, raw_body=json.dumps({"error": {"message": f"bad key {KEY}"}}))]
    with StubOpenAIServer(script) as server:
        judge = LLMJudge(LLMJudgeConfig(base_url=server.base_url, models=("m",)), api_key=KEY, sleep=lambda _s: None)
        trace = {"query": "a lamp", "messages": "[]", "steps": "[]"}
        results = [judge.judge(trace), judge.judge(trace)]
    assert results[0].available and not results[1].available
    for result in results:
        assert KEY not in repr(result) and KEY not in result.explanation
    assert KEY not in repr(judge)


def test_key_is_not_part_of_settings_or_resources(monkeypatch):
    from oro_assets.defs.judge.resources import JudgeResource

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert "api_key" not in {f for f in Settings.__dataclass_fields__}
    assert not any("key" in name.lower() for name in JudgeResource.model_fields)


# ------------------------------------------------------------------------- 127.0.0.1 by default


def test_servers_bind_loopback_by_default():
    from oro_assets.arena import server as arena_server

    for fn in (arena_server.make_server, arena_server.serve, arena_server.running_server):
        assert inspect.signature(fn).parameters["host"].default == "127.0.0.1", fn.__name__
    with StubOpenAIServer() as stub:
        assert stub.base_url.startswith("http://127.0.0.1:")
    parser = build_parser()
    assert parser.parse_args(["arena", "serve"]).host == "127.0.0.1"
    assert parser.parse_args(["ui"]).host == "127.0.0.1"


def test_no_wildcard_bind_in_the_package():
    offenders = []
    for path in (REPO / "oro_assets").rglob("*.py"):
        if re.search(r"['\"]0\.0\.0\.0['\"]|host\s*=\s*['\"]['\"]", path.read_text(encoding="utf-8")):
            offenders.append(str(path))
    assert offenders == []


# ------------------------------------------------------------------------- paths cannot escape


@pytest.mark.parametrize("key", ["../2026-01-02", "2026-01-02/../../etc", "..", "/etc/passwd", "2026-02-30",
                                 "2026-1-2", "2026-01-02\x00", "2026-01-02/", "*", "~/2026-01-02", " 2026-01-02"])
def test_partition_keys_cannot_become_paths(tmp_path, key):
    with pytest.raises(StorageError):
        validate_partition(key)
    with pytest.raises(StorageError):
        Warehouse(tmp_path).path("raw_traces", key)
    with pytest.raises(PartitionPathError):
        iter_partition_files(str(tmp_path), key)


@pytest.mark.parametrize("parts", [("..", "x"), ("/etc", "passwd"), ("a", "..", "..", "b")])
def test_safe_join_refuses_escapes(tmp_path, parts):
    with pytest.raises(StorageError):
        safe_join(tmp_path / "root", *parts)


def test_asset_names_cannot_become_paths(tmp_path):
    for name in ("../x", "a/b", "A", "", ".hidden"):
        with pytest.raises(StorageError):
            Warehouse(tmp_path).path(name, "2026-01-02")


def test_symlinks_out_of_the_firehose_root_are_refused(tmp_path):
    root = tmp_path / "firehose"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_text('{"messages": []}\n')
    day = root / "2026-01-02"
    day.mkdir(parents=True)
    (day / "part-0.jsonl").symlink_to(outside / "secret.jsonl")
    with pytest.raises(PartitionPathError, match="outside the firehose root"):
        iter_partition_files(str(root), "2026-01-02")
    (root / "2026-01-03").symlink_to(outside, target_is_directory=True)  # a whole day folder elsewhere
    with pytest.raises(PartitionPathError):
        iter_partition_files(str(root), "2026-01-03")


def test_record_fields_never_become_paths(tmp_path):
    """Ids, file names and problem ids inside records stay data: trace ids are hashes of the bytes."""
    day = tmp_path / "2026-01-02"
    day.mkdir()
    hostile = (b'{"problem_id": "../../../etc/passwd", "trace_id": "../../x", "source_file": "/etc/shadow", '
               b'"messages": [{"role": "user", "content": "q"}]}\n')
    (day / "part-0.jsonl").write_bytes(hostile)
    items = list(read_records(iter_partition_files(str(tmp_path), "2026-01-02"), partition="2026-01-02"))
    assert len(items) == 1
    prov = items[0].provenance
    assert prov.source_file == str(day / "part-0.jsonl")
    assert re.fullmatch(r"[0-9a-f]{64}", prov.raw_sha256)


# ------------------------------------------------------------------------- data, never code


DANGEROUS = re.compile(r"(?<![\w.])(eval|exec)\(|pickle\.loads?\(|cPickle|dill\.|cloudpickle|marshal\.loads?\(|"
                       r"yaml\.load\(|yaml\.unsafe_load|shelve\.open|torch\.load\(|trust_remote_code\s*=\s*True|"
                       r"shell\s*=\s*True|os\.system\(|__import__\(")


def test_package_never_evaluates_or_unpickles():
    hits = []
    for path in sorted((REPO / "oro_assets").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if DANGEROUS.search(code):
                hits.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert hits == []


def test_the_pattern_catches_what_it_must():
    for bad in ("x = eval(s)", "exec(code)", "pickle.load(fh)", "yaml.load(text)", "torch.load(p)",
                "from_pretrained(p, trust_remote_code=True)", "subprocess.run(c, shell=True)"):
        assert DANGEROUS.search(bad), bad
    for ok in ("model.eval()", "yaml.safe_load(t)", "json.loads(s)", "evaluate(x)"):
        assert not DANGEROUS.search(ok), ok


# ------------------------------------------------------------------------- size limits with reason codes


def test_size_limits_are_finite_and_reported(tmp_path):
    assert 1 << 20 <= reader.MAX_LINE_BYTES <= 64 << 20
    assert reader.MAX_PART_BYTES <= 16 << 30
    day = tmp_path / "2026-01-02"
    day.mkdir()
    big = b'{"messages": [{"role": "user", "content": "' + b"a" * (3 << 20) + b'"}]}\n'
    (day / "part-0.jsonl").write_bytes(b'{"x": 1}\n' + big + b'{"x": 2}\n')
    with gzip.open(day / "part-1.jsonl.gz", "wb", compresslevel=9) as fh:  # ~1000:1 bomb
        for _ in range(32):
            fh.write(b"\n" * (1 << 20))
    bomb_ratio = (32 << 20) / os.path.getsize(day / "part-1.jsonl.gz")
    assert bomb_ratio > 500
    items = list(read_records(iter_partition_files(str(tmp_path), "2026-01-02"), partition="2026-01-02",
                              max_line_bytes=1 << 20, max_part_bytes=8 << 20))
    reasons = [getattr(i, "reason", None) for i in items]
    assert [str(r) if r else None for r in reasons] == [None, "oversized_record", None, "oversized_record"]
    assert "decompressed part exceeds" in items[-1].detail and items[1].raw_sha256 == hashlib.sha256(
        big.rstrip(b"\n")).hexdigest()
