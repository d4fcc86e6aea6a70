"""benchmarks/same_weights.py: two checkpoints' weights compared tensor by tensor."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from same_weights import main  # noqa: E402


def _checkpoint(path: Path, tensors: dict[str, np.ndarray]) -> Path:
    from safetensors.numpy import save_file

    (path / "model").mkdir(parents=True)
    save_file(tensors, str(path / "model" / "model.safetensors"))
    return path


def test_equal_checkpoints_pass_and_one_changed_value_or_name_fails(tmp_path, capsys):
    w = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.ones(4, dtype=np.float32)}
    base = _checkpoint(tmp_path / "base", w)
    assert main([str(base), str(_checkpoint(tmp_path / "same", {k: v.copy() for k, v in w.items()}))]) == 0
    assert capsys.readouterr().out.strip() == "2 tensors, 0 differ"
    nudged = {**w, "b": np.array([1, 1, 1, np.nextafter(np.float32(1), np.float32(2))], dtype=np.float32)}
    assert main([str(base), str(_checkpoint(tmp_path / "nudged", nudged))]) == 1
    assert capsys.readouterr().out.strip() == "2 tensors, 1 differ: b"
    assert main([str(base), str(_checkpoint(tmp_path / "extra", {**w, "c": np.zeros(1, dtype=np.float32)}))]) == 1
    assert main([str(base), str(_checkpoint(tmp_path / "reshaped", {**w, "a": w["a"].reshape(3, 2)}))]) == 1
    assert main([str(base)]) == 2
