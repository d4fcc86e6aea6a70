"""A bad argument to ``main``, ``materialize`` or ``backfill`` gets one line on stderr naming what is
accepted and exit code 2, before anything is launched (no traceback, no Dagster instance, no run)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from oro_assets.cli import main
from oro_assets.ops import runner

START = "2026-01-01"  # ORO_PARTITIONS_START's default
JOBS = ("arena_job, arms_job, curation_ablation_job, curation_job, datasets_job, evaluation_job, final_report_job, "
        "main_job, training_job")


@pytest.fixture
def cli(data_dir, monkeypatch, capsys):
    """``oro-assets <argv>`` in-process: (exit code, stderr lines, stdout); fails if a run would start."""

    def no_launch(*_args, **_kwargs):
        raise AssertionError("a job was launched despite a bad argument")

    monkeypatch.setattr(runner, "get_instance", no_launch)

    def invoke(*argv: str) -> tuple[int, list[str], str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, err.splitlines(), out

    return invoke


def accepted_range() -> str:
    return f"YYYY-MM-DD from {START} (ORO_PARTITIONS_START) to {runner.latest_partition()} (yesterday, UTC)"


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["materialize", "--partition", "2026-13-40"],
         "oro-assets materialize: --partition '2026-13-40' is not a date in YYYY-MM-DD format; accepted: {range}"),
        (["materialize", "--partition", "20260102"],
         "oro-assets materialize: --partition '20260102' is not a date in YYYY-MM-DD format; accepted: {range}"),
        (["materialize", "--partition", "2025-12-31"],
         "oro-assets materialize: --partition 2025-12-31 is not a partition of curation_job; accepted: {range}"),
        (["materialize", "--partition", "2999-01-01"],
         "oro-assets materialize: --partition 2999-01-01 is not a partition of curation_job; accepted: {range}"),
        (["materialize", "--job", "curation_job"],
         "oro-assets materialize: curation_job is partitioned and needs --partition; accepted: {range}"),
        (["materialize", "--job", "nosuch"], f"oro-assets materialize: unknown job 'nosuch'; accepted: {JOBS}"),
        (["materialize", "--job", "arena_job", "--partition", "2026-01-02"],
         "oro-assets materialize: arena_job is not partitioned; accepted: no --partition"),
        (["backfill", "--start", "2026-01-07", "--end", "2026-01-01"],
         "oro-assets backfill: backfill range is empty: --start 2026-01-07 is after --end 2026-01-01; "
         "accepted: start <= end"),
        (["backfill", "--start", "2026-01-01", "--end", "2026-02-30"],
         "oro-assets backfill: --end '2026-02-30' is not a date in YYYY-MM-DD format; accepted: {range}"),
        (["backfill", "--start", "2025-06-01", "--end", "2026-01-03"],
         "oro-assets backfill: --start 2025-06-01 is not a partition of curation_job; accepted: {range}"),
        (["backfill", "--job", "nosuch", "--start", "2026-01-01", "--end", "2026-01-02"],
         f"oro-assets backfill: unknown job 'nosuch'; accepted: {JOBS}"),
        (["backfill", "--job", "arena_job", "--start", "2026-01-01", "--end", "2026-01-02"],
         "oro-assets backfill: arena_job is not partitioned; accepted: curation_job, final_report_job, main_job"),
        (["main", "--date", "2026/01/02"],
         "oro-assets main: --date '2026/01/02' is not a date in YYYY-MM-DD format; accepted: {range}"),
        (["main", "--curation-only", "--date", "2020-01-01"],
         "oro-assets main: --date 2020-01-01 is not a partition of curation_job; accepted: {range}"),
        (["main", "--traces", "0"], "oro-assets main: --traces must be 1 or more, got 0"),
        (["main", "--max-concurrent", "0"], "oro-assets main: --max-concurrent must be 1 or more, got 0"),
        (["main", "--train-seed", "-1"], "oro-assets main: --train-seed must be 0 or more, got -1"),
        (["ablation", "--max-rows", "0"], "oro-assets ablation: --max-rows must be 1 or more"),
    ],
)
def test_a_bad_argument_gets_one_line_and_exit_2(cli, data_dir, argv, line):
    code, err, out = cli(*argv)
    assert code == 2, (argv, err)
    assert err == [line.format(range=accepted_range())]
    assert "Traceback" not in out
    assert not (data_dir / "dagster_home").exists(), "the Dagster instance was created before validation"


def test_a_good_argument_reaches_the_run(cli, monkeypatch):
    """The validation lets valid arguments through: the run is attempted (here: stopped at the instance)."""
    with pytest.raises(AssertionError, match="launched"):
        cli("materialize", "--job", "curation_job", "--partition", "2026-01-02")
    with pytest.raises(AssertionError, match="launched"):
        cli("materialize", "--job", "arena_job")
    with pytest.raises(AssertionError, match="launched"):
        cli("backfill", "--start", "2026-01-01", "--end", "2026-01-01")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["materialize", "--partition", "2026-13-40"], "not a date in YYYY-MM-DD format; accepted: YYYY-MM-DD from 2026-01-01"),
        (["materialize", "--job", "nosuch"], f"accepted: {JOBS}"),
        (["backfill", "--start", "2026-01-07", "--end", "2026-01-01"], "accepted: start <= end"),
    ],
)
def test_the_console_script_prints_no_traceback(tmp_path, argv, expected):
    """The issue's three commands, as a user runs them: one stderr line, exit 2."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORO_", "DAGSTER_HOME"))}
    env["ORO_DATA_DIR"] = str(tmp_path / "data")
    proc = subprocess.run([sys.executable, "-m", "oro_assets.cli", *argv], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and expected in lines[0], proc.stderr[-3000:]
    assert not (tmp_path / "data" / "dagster_home").exists()
