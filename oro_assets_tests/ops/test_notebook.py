"""notebooks/explore.ipynb runs headless, on this interpreter's environment, against a materialised data root."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat
import polars as pl
import pytest
from nbclient import NotebookClient
from ops_support import EVAL_PROBLEMS, EVAL_STAGE, REPO_ROOT

NOTEBOOK = REPO_ROOT / "notebooks" / "explore.ipynb"
KERNEL = "oro-assets-test"


def _kernelspec(root: Path, env: dict[str, str]) -> Path:
    """A kernelspec that starts ipykernel with *this* Python (the venv), whatever else is installed."""
    spec_dir = root / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "oro-assets (test)", "language": "python", "env": env}
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    return root


def _text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out["text"])
        elif "data" in out:
            parts.append(out["data"].get("text/plain", ""))
    return "".join(parts)


def test_generated_notebook_is_committed():
    """The committed notebook is what scripts/make_notebook.py generates (edit the script, not the .ipynb)."""
    sys.path.insert(0, str(REPO_ROOT / "scripts"))
    try:
        import make_notebook
    finally:
        sys.path.pop(0)
    committed = nbformat.read(NOTEBOOK, as_version=4)
    assert [c.source for c in committed.cells] == [c.source for c in make_notebook.build().cells]
    assert all(not c.get("outputs") for c in committed.cells if c.cell_type == "code"), "commit it without outputs"


@pytest.mark.slow
def test_notebook_executes_against_a_materialised_root(materialised_root, artifacts_dir, tmp_path, monkeypatch):
    env = {"ORO_DATA_DIR": str(materialised_root.data_dir), "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    monkeypatch.setenv("JUPYTER_PATH", str(_kernelspec(tmp_path / "jupyter", env)))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "jupyter-runtime"))  # connection files stay here
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(nb, kernel_name=KERNEL, timeout=180, allow_errors=False,
                            resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()  # raises CellExecutionError, with the traceback, on any failing cell
    finally:
        nbformat.write(nb, artifacts_dir / "explore.executed.ipynb")

    code = [c for c in nb.cells if c.cell_type == "code"]
    outputs = [_text(c) for c in code]
    ledger = pl.read_parquet(materialised_root.data_dir / "warehouse" / "trace_ledger" /
                             f"{materialised_root.partition}.parquet")
    kept = ledger.filter(pl.col("fate") == "kept").height

    # The partition line: every raw record the simulator wrote for the day is in the ledger.
    assert f"{materialised_root.partition} {materialised_root.traces_per_day} raw records, {kept} kept" in outputs[1]
    # The funnel starts with every raw record and ends with the kept ones.
    funnel = outputs[2]
    assert re.search(rf"ingest\s*┆\s*{materialised_root.traces_per_day}\b", funnel), funnel
    assert re.search(rf"split\s*┆\s*{kept}\s*┆\s*0\s*┆\s*{kept}\b", funnel), funnel
    # The plot cell displayed a PNG figure.
    assert any("image/png" in out.get("data", {}) for out in code[3].get("outputs", [])), "no plot was displayed"
    # The lineage cell told one kept example's story from its raw line.
    lineage = outputs[5]
    assert re.search(r"^record tr_[0-9a-f]+", lineage, re.M), lineage
    assert f"partition {materialised_root.partition}" in lineage and "fate       kept at split" in lineage
    assert "sft_dataset" in lineage or "kto_dataset" in lineage
    # The evaluation report: one stage's ASR, the markdown table and both plots.
    report = code[6].get("outputs", [])
    assert re.search(rf"│\s*{EVAL_STAGE}\s*┆\s*[01]\.\d+", outputs[6]), outputs[6]
    markdown = "".join(out["data"].get("text/markdown", "") for out in report if "data" in out)
    assert f"/ {EVAL_PROBLEMS} |" in markdown and "published, not measured here" in markdown
    assert sum("image/png" in out.get("data", {}) for out in report) == 2
