"""scripts/gpu_qwen3_4b_check.py --smoke: every stage of the qwen3-4b path and an evaluation run on the CPU, at
the profile's code path (LoRA, gradient checkpointing, length-grouped batches, SDPA), so a GPU run is not the
first run of any of them."""

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_qwen3_4b_check.py"


@pytest.mark.slow
def test_smoke_runs_every_stage_and_an_evaluation(tmp_path, data_dir, capsys):
    spec = importlib.util.spec_from_file_location("gpu_qwen3_4b_check", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["--smoke", "--out", str(tmp_path), "--steps", "2", "--problems", "24",
                        "--eval-problems", "2"]) == 0
    report = json.loads((tmp_path / "gpu_report.json").read_text())
    run = report["runs"]["fast_paths_on"]
    for stage in ("sft", "rejection_sft", "teacher_sft", "kto", "dr_grpo"):
        assert run[stage]["steps"] >= 1, stage
    assert run["rejection_sft"]["rollout_episodes_per_s"] > 0
    assert run["evaluation"]["episodes"] == 2 * 3 and sum(run["evaluation"]["outcomes"].values()) == 6
    assert report["lora"]["target_modules"] == "all-linear" and report["gradient_checkpointing"] is True
    assert report["attention"] == "sdpa"
    out = capsys.readouterr().out
    if importlib.util.find_spec("vllm") is None:
        assert [line for line in out.splitlines() if line.startswith("vllm:")] == [script.vllm_line()]
        assert "not installed - skipped" in script.vllm_line()
