"""Fresh-clone check: clone the repo, run the README's first command with a tiny setting, end to end.

The clone's ``.venv`` is made first and sees the packages of the environment running the tests (a ``.pth``
line), so the README command's own install step only installs the clone itself (17 s against 144 s for every
dependency from the wheels, measured on 2 cores). Installing every dependency from nothing is what CI does
anyway: it runs the README's test command, which installs into ``.venv`` on its own clean clone.
"""

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from oro_assets_tests.test_readme import readme_command

ROOT = Path(__file__).resolve().parents[1]


def make_venv_over_the_test_environment(clone: Path) -> None:
    """``clone/.venv``: an empty venv whose site-packages also reads this environment's (a plain path line:
    the ``.pth`` files there, this checkout's editable install among them, are not processed)."""
    subprocess.run([sys.executable, "-m", "venv", str(clone / ".venv")], check=True)
    site = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (Path(site) / "_test_environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")


@pytest.mark.slow
@pytest.mark.timeout(3600)  # install + main (smoke) + the '*eval_report' selection + the ablation smoke
def test_fresh_clone_runs_the_main_command(tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    # the test exercises the committed tree: uncommitted work is not part of a fresh clone
    make_venv_over_the_test_environment(clone)
    command = readme_command("main") + " --traces 150 --smoke --date 2026-01-03"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORO_", "DAGSTER_", "MLFLOW_", "VIRTUAL_ENV"))}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    proc = subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True, timeout=2400)
    tail = (proc.stdout[-4000:] + "\n" + proc.stderr[-4000:])
    assert proc.returncode == 0, tail
    assert "finished in" in proc.stdout and "success" in proc.stdout, tail
    data = clone / "data"
    assert (clone / ".venv" / "bin" / "oro-assets").exists()
    imported = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-c", "import oro_assets; print(oro_assets.__file__)"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(imported).is_relative_to(clone), imported  # the clone's code ran, not this checkout's
    assert any((data / "warehouse" / "trace_ledger").glob("2026-01-03.parquet"))
    assert (data / "reports" / "eval_report.md").exists(), tail
    assert (data / "warehouse.duckdb").exists()
    # each checkpoint says which machine trained it, and the report which machine measured it (this one)
    from oro_assets.machine import machine_signature

    here = machine_signature(with_torch=False)["key"]
    metas = sorted((data / "checkpoints").glob("*/*/oro_checkpoint.json"))
    assert metas and all(json.loads(m.read_text())["trained_on"]["key"].startswith(here) for m in metas), metas
    assert f"Measured on one machine: {here}" in (data / "reports" / "eval_report.md").read_text()
    assert f"machine:              {here}" in proc.stdout
    # Dagster's own way to run an asset with everything upstream, as the UI does for a selection: unchanged
    # checkpoints are reused (same data, config, parent and code), so this re-runs little
    from oro_assets.ops.runner import multiprocess_execution_config, smoke_run_config

    # forked step processes, as main runs them (a fresh interpreter per step costs 3-4 s more each)
    config = {**smoke_run_config(), **multiprocess_execution_config(2)}
    select = subprocess.run(
        [str(clone / ".venv" / "bin" / "python"), "-m", "dagster", "asset", "materialize", "-m", "oro_assets.definitions",
         "--select", "*eval_report", "--partition", "2026-01-03", "--config-json", json.dumps(config)],
        cwd=clone, env={**env, "DAGSTER_HOME": str(data / "dagster_home")}, capture_output=True, text=True,
        timeout=1800)
    assert select.returncode == 0, select.stdout[-3000:] + select.stderr[-3000:]
    assert "RUN_SUCCESS" in select.stdout + select.stderr
    # the curation ablation runs on what main left behind (its own job, not part of main)
    proc = subprocess.run([str(clone / ".venv" / "bin" / "oro-assets"), "ablation", "--smoke"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    report = json.loads((data / "reports" / "ablation" / "curation_ablation.json").read_text())
    sizes = report["sizes"]
    assert sizes["raw"] >= sizes["raw_success"] >= sizes["structural"] >= sizes["format_grounding"] \
        >= sizes["reasoning"] >= sizes["curated"] > 0, sizes
    assert [s["arm"] for s in report["summary"]] == ["raw", "curated"]
    assert (data / "reports" / "ablation" / "curation_ablation.png").exists()
