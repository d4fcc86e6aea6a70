"""The instance of deploy/dagster.postgres-local.yaml against a real PostgreSQL server started here.

Uses Debian's ``postgresql`` package (``/usr/lib/postgresql/<v>/bin``). The server listens on 127.0.0.1 at
a free port, with password (SCRAM) authentication, and runs as the ``postgres`` system user when the
tests run as root (PostgreSQL refuses to run as root). Skipped without the binaries, except under ``CI``.
"""

from __future__ import annotations

import os
import pwd
import re
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from ops_support import REPO_ROOT, free_port, oro_env, required_tool_missing, run_cli

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

CURATION_ASSETS = {"raw_traces", "normalized_traces", "structural_labels", "subtask_traces", "gated_traces",
                   "curated_traces", "split_traces", "trace_ledger"}


@dataclass(frozen=True)
class PgServer:
    host: str
    port: int
    user: str
    password: str

    def connect(self, dbname: str):
        import psycopg2

        return psycopg2.connect(host=self.host, port=self.port, user=self.user, password=self.password,
                                dbname=dbname, connect_timeout=10)


def _pg_bin() -> Path | None:
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name)
                        if p.parent.name.isdigit() else 0)
    for bin_dir in reversed(candidates):
        if (bin_dir / "initdb").exists() and (bin_dir / "pg_ctl").exists():
            return bin_dir
    return None


def _run(cmd: list[str], as_user: list[str]) -> None:
    proc = subprocess.run([*as_user, *cmd], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited {proc.returncode}:\n{(proc.stdout + proc.stderr)[-3000:]}")


@pytest.fixture
def pg_server() -> Iterator[PgServer]:
    bin_dir = _pg_bin()
    if bin_dir is None:
        required_tool_missing("PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin; "
                              "install with: apt-get install -y postgresql")
    as_user: list[str] = []
    base = Path(tempfile.mkdtemp(prefix="oro-pg-"))
    if os.geteuid() == 0:
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(base)
            required_tool_missing("running as root and there is no 'postgres' system user to run the server as")
        os.chown(base, account.pw_uid, account.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    server = PgServer(host="127.0.0.1", port=free_port(), user="oro", password=secrets.token_hex(16))
    pwfile = base / "pwfile"
    pwfile.write_text(server.password + "\n")
    if as_user:
        os.chown(pwfile, account.pw_uid, account.pw_gid)
    pgdata, sockets = base / "data", base / "sock"
    started = False
    try:
        _run([str(bin_dir / "initdb"), "-D", str(pgdata), "-U", server.user, "--auth=scram-sha-256",
              f"--pwfile={pwfile}", "-E", "UTF8", "--no-sync"], as_user)
        _run(["mkdir", "-p", str(sockets)], as_user)
        options = (f"-c listen_addresses={server.host} -c port={server.port} -c unix_socket_directories={sockets} "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
        started = True
        _run([str(bin_dir / "pg_ctl"), "-D", str(pgdata), "-l", str(base / "server.log"), "-w", "-t", "60",
              "-o", options, "start"], as_user)
        yield server
    finally:
        if started:
            subprocess.run([*as_user, str(bin_dir / "pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w", "stop"],
                           capture_output=True, timeout=60)
        shutil.rmtree(base, ignore_errors=True)


def test_curation_partition_materialises_through_a_postgres_instance(materialised_root, pg_server, tmp_path):
    admin = pg_server.connect("postgres")
    try:
        admin.autocommit = True  # CREATE DATABASE cannot run inside a transaction
        with admin.cursor() as cur:
            cur.execute("CREATE DATABASE oro_dagster")
    finally:
        admin.close()

    home = tmp_path / "dagster_home"
    home.mkdir()
    instance_yaml = (REPO_ROOT / "deploy" / "dagster.postgres-local.yaml").read_text()
    (home / "dagster.yaml").write_text(instance_yaml)
    data_dir = materialised_root.copy_without_instance(tmp_path / "data")  # the arena/problem state is reused
    env = oro_env(data_dir, DAGSTER_HOME=str(home), DAGSTER_PG_HOST=pg_server.host, DAGSTER_PG_PORT=str(pg_server.port),
                  DAGSTER_PG_DB="oro_dagster", DAGSTER_PG_USER=pg_server.user, DAGSTER_PG_PASSWORD=pg_server.password)

    partition = materialised_root.partition
    proc = run_cli(["materialize", "--job", "curation_job", "--partition", partition], env)
    found = re.search(rf"curation_job \[{partition}\] succeeded in \d+s \(run ([0-9a-f-]{{36}})\)", proc.stdout)
    assert found, proc.stdout[-2000:]
    run_id = found.group(1)
    assert pg_server.password not in proc.stdout + proc.stderr

    # The user's DAGSTER_HOME kept its PostgreSQL instance file, and no SQLite storage appeared beside it.
    assert (home / "dagster.yaml").read_text() == instance_yaml
    assert not list(home.rglob("*.db")), sorted(str(p) for p in home.rglob("*.db"))

    conn = pg_server.connect("oro_dagster")
    with conn, conn.cursor() as cur:
        cur.execute("SELECT run_id, pipeline_name, status, partition FROM runs")
        runs = cur.fetchall()
        cur.execute("SELECT asset_key, partition FROM event_logs WHERE run_id = %s AND dagster_event_type = %s",
                    (run_id, "ASSET_MATERIALIZATION"))
        materialisations = cur.fetchall()
        cur.execute("SELECT check_name, execution_status FROM asset_check_executions WHERE run_id = %s",
                    (run_id,))
        checks = dict(cur.fetchall())
    conn.close()

    assert runs == [(run_id, "curation_job", "SUCCESS", partition)]
    # asset keys are stored as JSON lists: '["trace_ledger"]'
    assert {re.sub(r'[\[\]" ]', "", key) for key, _ in materialisations} == CURATION_ASSETS
    assert len(materialisations) == len(CURATION_ASSETS)
    assert {p for _, p in materialisations} == {partition}
    assert checks.get("conservation") == "SUCCEEDED", checks
