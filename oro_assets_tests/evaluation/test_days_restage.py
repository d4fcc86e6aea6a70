"""benchmarks/days.py and restage.py: replicates of some stages alone (``--restage scaffold sft --only``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import dagster as dg
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import days  # noqa: E402
import restage  # noqa: E402


def _eval(data: Path, stage: str, solved: dict[str, bool]) -> None:
    path = data / "reports" / "eval" / stage
    path.mkdir(parents=True)
    rows = [{"problem_id": pid, "category": "Product", "greedy_success": ok, "n": 8, "c": 8 if ok else 0}
            for pid, ok in solved.items()]
    (path / "eval_result.json").write_text(json.dumps({
        "stage": stage, "policy_name": "p", "run_id": "r", "metrics": {}, "rows": rows, "trajectories_path": "",
        "samples_path": "", "config": {"pool": "test"}}))


def test_restaged_dirs_are_named_by_their_stages():
    assert days.restage_label(None) is None
    assert days.restage_label(["dr_grpo"]) == "dr_grpo"  # the existing replicates' dirs keep their names
    assert days.restage_label(["scaffold", "sft"], only=True) == "scaffold-sft-only"
    assert days.run_dir(Path("/r"), 201, "d", 1, "scaffold-sft-only") == Path("/r/seed201-d/scaffold-sft-only-seed1")
    assert days.run_dir(Path("/r"), 201, "d", 0, "scaffold-sft-only") == Path("/r/seed201-d")


def test_an_only_table_holds_the_restaged_stages_and_pairs_them_within_each_seed(tmp_path, monkeypatch, capsys):
    problems = [f"p{i}" for i in range(4)]
    for world in ("seed201-d1", "seed202-d2"):
        seed0 = tmp_path / world / "data"
        seed1 = tmp_path / world / "scaffold-sft-only-seed1" / "data"
        _eval(seed0, "scaffold", dict.fromkeys(problems, False))
        _eval(seed0, "sft", {p: p in ("p0", "p1") for p in problems})  # seed 0: sft +50 over its scaffold
        _eval(seed1, "scaffold", {p: p == "p0" for p in problems})
        _eval(seed1, "sft", {p: p == "p0" for p in problems})  # seed 1: +0 over its own scaffold
        for data in (seed0, seed1):  # the stage below sft, copied from seed 0: not a replicate
            _eval(data, "rejection_sft", dict.fromkeys(problems, True))
    out = tmp_path / "table.json"
    monkeypatch.setattr(sys, "argv", ["days.py", "--seeds", "201", "202", "--dates", "d1", "d2", "--root", str(tmp_path),
                                      "--restage", "scaffold", "sft", "--only", "--train-seeds", "0", "1",
                                      "--out", str(out)])
    assert days.main() == 0
    table = json.loads(out.read_text())
    assert [row["stage"] for row in table["product"]] == ["scaffold", "sft"]
    sft = table["product"][1]
    assert sft["asr_change"]["vs"] == "scaffold"
    assert sft["asr_change"]["delta"] == pytest.approx(0.25)  # (+0.5 + 0.0) / 2 in each world, not sft1 - scaffold0
    assert "the table holds only scaffold, sft" in out.with_suffix(".md").read_text()


def test_only_needs_restage_and_an_arm_needs_a_final_report(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["days.py", "--seeds", "201", "--dates", "d", "--only"])
    with pytest.raises(SystemExit):
        days.main()
    assert "--only needs --restage" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["days.py", "--seeds", "201", "--dates", "d", "--restage", "nonesuch"])
    with pytest.raises(SystemExit):
        days.main()
    assert "nonesuch: not a stage" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        restage.main(["scaffold", "sft", "--only"])
    assert "scaffold: an arm is trained by a final-report run only" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        restage.main(["nonesuch"])
    assert "unknown stage 'nonesuch'" in capsys.readouterr().err


def test_evaluate_only_selects_the_named_evaluations_and_the_report_and_no_training(monkeypatch, tmp_path, capsys):
    from oro_assets.ops import runner

    picked = {}

    class Job:
        def get_subset(self, asset_selection):
            picked["keys"] = sorted(k.to_user_string() for k in asset_selection)
            return self

        def execute_in_process(self, **kwargs):
            picked.update(kwargs)
            return type("Result", (), {"success": True})()

    monkeypatch.setenv("ORO_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(runner, "resolve_job", lambda name: Job())
    monkeypatch.setattr(runner, "get_instance", lambda settings: None)
    assert restage.main(["kto", "dr_grpo", "--final-report", "--evaluate-only"]) == 0
    assert picked["keys"] == ["eval_dr_grpo", "eval_kto", "eval_report"]
    ops = picked["run_config"]["ops"]
    assert set(ops) == {"eval_dr_grpo", "eval_kto"}
    assert ops["eval_kto"]["config"]["holdout_greedy_categories"] == ["Product", "Shop", "Voucher"]
    # without --evaluate-only the stage and the stages below it are retrained
    assert restage.main(["kto", "--final-report"]) == 0
    assert picked["keys"] == ["dr_grpo_checkpoint", "eval_dr_grpo", "eval_kto", "eval_report", "kto_checkpoint"]
    with pytest.raises(SystemExit):
        restage.main(["kto", "--evaluate-only", "--seed", "1"])
    assert "--evaluate-only trains nothing" in capsys.readouterr().err
    # --day adds the day's inputs of the named stages and runs that partition
    monkeypatch.setattr(restage, "day_inputs", lambda job, keys: {dg.AssetKey("sft_dataset")})
    assert restage.main(["sft", "--only", "--final-report", "--day", "2026-11-30"]) == 0
    assert picked["keys"] == ["eval_report", "eval_sft", "sft_checkpoint", "sft_dataset"]
    assert picked["partition_key"] == "2026-11-30"


def test_a_days_inputs_are_its_world_curation_and_datasets_not_other_stages_or_evaluations():
    from oro_assets.ops import runner

    job = runner.resolve_job(runner.FINAL_REPORT_JOB)
    named = {dg.AssetKey("sft_checkpoint"), dg.AssetKey("rejection_sft_checkpoint"), dg.AssetKey("eval_sft")}
    inputs = {k.to_user_string() for k in restage.day_inputs(job, named)}
    assert {"arena_world", "normalized_traces", "split_traces", "sft_dataset", "leak_clusters",
            "eval_problems"} <= inputs
    # the base is a stage: trained only when named; evaluations only when named; nothing downstream
    assert not inputs & {"base_model", "eval_base", "sft_checkpoint", "eval_rejection_sft", "teacher_sft_checkpoint",
                         "kto_dataset", "rl_prompts"}


def _checkpoint(data: Path, stage: str, version: str) -> None:
    path = data / "checkpoints" / stage / version
    path.mkdir(parents=True)
    (path / "oro_checkpoint.json").write_text(json.dumps({"version": version}))
    (data / "checkpoints" / stage / "current.json").write_text(json.dumps({"path": str(path), "version": version}))


def test_a_stage_every_run_shares_is_read_from_the_first_run(tmp_path, monkeypatch):
    """The Dr. GRPO replicates copy the seed-0 run's KTO; when only the seed-0 run's KTO is evaluated again (the
    report's greedy run on every problem), the replicates' stale copies of its old evaluation are not read."""
    problems = [f"p{i}" for i in range(4)]
    seed0 = tmp_path / "seed201-d1" / "data"
    seed1 = tmp_path / "seed201-d1" / "dr_grpo-seed1" / "data"
    for data, grpo in ((seed0, "g0"), (seed1, "g1")):
        _checkpoint(data, "kto", "k0")
        _checkpoint(data, "dr_grpo", grpo)
        _eval(data, "dr_grpo", dict.fromkeys(problems, True))
    _eval(seed0, "kto", dict.fromkeys(problems, False))  # evaluated again: every problem
    _eval(seed1, "kto", {"p0": False})  # the copy's older evaluation of the same checkpoint
    seed2 = tmp_path / "seed201-d1" / "dr_grpo-seed2" / "data"
    _checkpoint(seed2, "kto", "k0")
    _checkpoint(seed2, "dr_grpo", "g2")
    _eval(seed2, "dr_grpo", dict.fromkeys(problems, True))  # and a copy with no evaluation of it at all
    out = tmp_path / "table.json"
    monkeypatch.setattr(sys, "argv", ["days.py", "--seeds", "201", "--dates", "d1", "--root", str(tmp_path),
                                      "--restage", "dr_grpo", "--train-seeds", "0", "1", "2", "--out", str(out)])
    assert days.main() == 0
    table = json.loads(out.read_text())
    assert table["stages_with_one_shared_run"] == ["kto"]
    assert [row["asr"]["runs_by_world"] for row in table["product"]] == [{"seed201-d1": 3}] * 2
    kto, grpo = table["product"]
    assert kto["asr"]["n_by_world"] == {"seed201-d1": 4}
    assert grpo["asr_change"]["delta"] == pytest.approx(1.0)


def _trained_checkpoint(data: Path, stage: str, machine: str | None) -> None:
    from oro_assets.training.checkpoints import META_FILE, set_current_checkpoint

    path = data / "checkpoints" / stage / "v1"
    path.mkdir(parents=True)
    meta = {"stage": stage, "version": "v1", **({"trained_on": {"key": machine}} if machine else {})}
    (path / META_FILE).write_text(json.dumps(meta))
    set_current_checkpoint(data / "checkpoints", stage, path, "v1")


def test_the_table_says_which_machine_trained_each_run(tmp_path, monkeypatch, capsys):
    """Another CPU type trains other weights from the same inputs: a table pooling runs trained on two machines says so,
    and names each run's."""
    zen3, zen4 = "AMD EPYC, family 25 model 1, avx2", "AMD EPYC, family 25 model 17, avx512f"
    for world, machine in (("seed201-d1", zen3), ("seed202-d2", zen4)):
        data = tmp_path / world / "data"
        _eval(data, "sft", {"p0": True, "p1": False})
        _trained_checkpoint(data, "sft", machine)
    out = tmp_path / "table.json"
    argv = ["days.py", "--seeds", "201", "202", "--dates", "d1", "d2", "--root", str(tmp_path), "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    assert days.main() == 0
    md = out.with_suffix(".md").read_text()
    assert "Trained on 2 machines" in md
    assert f"seed201-d1/train-seed0: {zen3}" in md and f"seed202-d2/train-seed0: {zen4}" in md
    table = json.loads(out.read_text())
    assert table["worlds"][1]["checkpoints"]["train-seed0"]["sft"]["trained_on"] == zen4
    # one machine for every run: one line
    _trained_checkpoint(tmp_path / "seed202-d2" / "data", "rejection_sft", None)
    (tmp_path / "seed202-d2" / "data" / "checkpoints" / "sft" / "v1" / "oro_checkpoint.json").write_text(
        json.dumps({"stage": "sft", "version": "v1", "trained_on": {"key": zen3}}))
    assert days.main() == 0
    assert f"Trained on one machine: {zen3}." in out.with_suffix(".md").read_text()
