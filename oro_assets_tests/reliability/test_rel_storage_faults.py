"""Disk full and read-only data dir: a clear error, and nothing half-written.

Real faults where the machine allows them: a 640 KiB tmpfs mounted over the warehouse (ENOSPC) and
a read-only bind mount (EROFS), each inside a private mount namespace (``unshare -m``; skipped
where that is not permitted), plus RLIMIT_FSIZE in a subprocess, which works everywhere.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import CLI, DAY1, REPO, cli_env

from oro_assets.storage import StorageError, Warehouse
from oro_assets.traces.ingest import normalize_partition
from oro_assets.traces.reader import iter_partition_files


def _can_unshare() -> bool:
    try:
        probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=4k tmpfs /mnt"],
                               capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


needs_mount_ns = pytest.mark.skipif(not _can_unshare(), reason="private mount namespaces not permitted here")

CHECK = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import pyarrow.parquet as pq
    root = Path(sys.argv[1])
    bad, tmp, files = [], [], []
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        files.append(str(p.relative_to(root)))
        if ".tmp" in p.name or p.name.startswith("."):
            tmp.append(p.name)
        elif p.suffix == ".parquet":
            try:
                pq.read_metadata(p)
            except Exception as exc:
                bad.append(f"{p.name}: {exc}")
    print("CHECK " + json.dumps({"torn": bad, "tmp": tmp, "files": files}))
    """
)


def run_in_namespace(setup: str, data: Path, firehose: Path, warehouse: Path) -> tuple[int, str, dict]:
    """Run ``setup`` (mount commands), then curation_job for DAY1, then the CHECK of the warehouse,
    all inside one private mount namespace (the mounts vanish with it)."""
    cmd = " ".join(shlex.quote(c) for c in [*CLI, "materialize", "--job", "curation_job", "--partition", DAY1])
    check = " ".join(shlex.quote(c) for c in [sys.executable, "-c", CHECK, str(warehouse)])
    script = f"set -e; {setup}; set +e; {cmd}; echo \"RC=$?\"; {check}"
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], env=cli_env(data, firehose), cwd=REPO,
                          capture_output=True, text=True, timeout=240)
    out = proc.stdout + proc.stderr
    assert "RC=" in out, out[-3000:]
    rc = int(out.split("RC=")[1].split()[0])
    report = json.loads(out.split("CHECK ", 1)[1].splitlines()[0])
    return rc, out, report


@pytest.mark.slow
@needs_mount_ns
def test_disk_full_during_curation(fresh_root, sim_firehose):
    wh = fresh_root / "warehouse"
    seed = fresh_root / "warehouse_before"
    os.rename(wh, seed)
    wh.mkdir()
    setup = f"mount -t tmpfs -o size=640k tmpfs {shlex.quote(str(wh))}; cp -a {shlex.quote(str(seed))}/. {shlex.quote(str(wh))}/"
    rc, out, report = run_in_namespace(setup, fresh_root, sim_firehose, wh)
    assert rc == 1, out[-3000:]
    assert "No space left on device" in out
    assert "could not write" in out, "the failure names what could not be written"
    assert report["torn"] == [], "a partial Parquet file is visible under its final name"
    assert report["tmp"] == [], "temporary files were left behind"
    assert not any(f.startswith("trace_ledger/") for f in report["files"]), "no ledger for a failed day"


@pytest.mark.slow
@needs_mount_ns
def test_read_only_warehouse(fresh_root, sim_firehose):
    wh = fresh_root / "warehouse"
    before = sorted(str(p.relative_to(wh)) for p in wh.rglob("*") if p.is_file())
    q = shlex.quote(str(wh))
    rc, out, report = run_in_namespace(f"mount --bind {q} {q}; mount -o remount,ro,bind {q} {q}", fresh_root,
                                       sim_firehose, wh)
    assert rc == 1, out[-3000:]
    assert "Read-only file system" in out and "could not" in out
    assert report["files"] == before and report["torn"] == [] and report["tmp"] == []


FSIZE_PROBE = textwrap.dedent(
    """
    import json, resource, sys
    from pathlib import Path
    from oro_assets.storage import StorageError
    from oro_assets.traces.ingest import normalize_partition
    from oro_assets.traces.reader import iter_partition_files
    root, date, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))  # writes past 64 KiB fail (EFBIG)
    try:
        normalize_partition(iter_partition_files(root, date), date, out / "n.parquet", out / "q.parquet")
        print(json.dumps({"error": None}))
    except StorageError as exc:
        print(json.dumps({"error": str(exc)}))
    """
)


def test_file_size_limit_gives_storage_error_and_no_partial_files(tmp_path, sim_firehose):
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run([sys.executable, "-c", FSIZE_PROBE, str(sim_firehose), DAY1, str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    error = json.loads(proc.stdout.strip().splitlines()[-1])["error"]
    assert error is not None and "could not write" in error and "File too large" in error
    assert sorted(os.listdir(out)) == [], "nothing may be left in the output folder"


def test_failed_rename_keeps_the_previous_version(tmp_path, monkeypatch):
    wh = Warehouse(tmp_path)
    old = pa.table({"x": [1, 2, 3]})
    path = wh.write(old, "curated_traces", DAY1)
    before = path.read_bytes()

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(StorageError, match="No space left on device"):
        wh.write(pa.table({"x": [9]}), "curated_traces", DAY1)
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_unwritable_target_is_a_storage_error_not_a_traceback(tmp_path, sim_firehose):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("a file where the warehouse folder should be")
    with pytest.raises(StorageError, match="could not"):
        Warehouse(blocker).write(pa.table({"x": [1]}), "raw_traces", DAY1)
    with pytest.raises(StorageError, match="could not"):
        normalize_partition(iter_partition_files(str(sim_firehose), DAY1), DAY1, blocker / "n.parquet",
                            blocker / "q.parquet")


def test_rlimit_probe_is_not_leaking_into_this_process():
    assert resource.getrlimit(resource.RLIMIT_FSIZE)[0] == resource.RLIM_INFINITY
