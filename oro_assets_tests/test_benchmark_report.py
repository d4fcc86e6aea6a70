"""benchmarks/report.py: every saved benchmark result names the machine that measured it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import report  # noqa: E402


def test_a_saved_report_names_its_machine_and_keeps_one_it_already_names(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(report, "cpu_model", lambda: "AMD EPYC, family 25 model 1, avx2")
    report.emit({"ratio": 0.2}, str(tmp_path / "a.json"))
    assert json.loads((tmp_path / "a.json").read_text()) == {"machine": "AMD EPYC, family 25 model 1, avx2",
                                                            "ratio": 0.2}
    named = {"machine": {"cpu": "Intel Xeon", "key": "Intel Xeon, family 6 model 143, avx512f"}, "ratio": 0.3}
    report.emit(named, str(tmp_path / "b.json"))
    assert json.loads((tmp_path / "b.json").read_text()) == named
    assert '"ratio": 0.3' in capsys.readouterr().out

