"""The curation ablation's arms are cumulative cuts read from production's own outputs (the ledger)."""

import pytest

from oro_assets.evaluation.ablation import (
    ARM_NAMES,
    AblationResult,
    ArmResult,
    Fate,
    build_arms,
    draw_rows,
    run_ablation,
)


def _trace(tid: str, problem: str) -> dict:
    return {"trace_id": tid, "problem_id": problem, "partition": "2026-11-29", "source_file": "part-0.jsonl",
            "line_no": int(tid[1:]), "tools": "[]",
            "messages": [{"role": "user", "content": f"find {problem}"},
                         {"role": "assistant", "content": "done"}]}


POOLS = {"p_train": "train", "p_eval": "eval"}
TRACES = {
    # trace id: (problem, success, fate)
    "t1": ("p_train", False, Fate(False, "structural", "subtask")),
    "t2": ("p_train", True, Fate(False, "structural", "subtask")),
    "t3": ("p_train", True, Fate(False, "gates", "ungrounded_recommendation")),
    "t4": ("p_train", True, Fate(False, "gates", "reasoning_below_threshold")),
    "t5": ("p_train", True, Fate(False, "dedup", "near_duplicate")),
    "t6": ("p_train", True, Fate(True)),
    "t7": ("p_eval", True, Fate(True)),  # an eval-pool problem is in no arm
    "t8": ("p_nowhere", True, Fate(True)),  # a problem the registry does not know: in no arm
    "t9": ("p_train", True, Fate(True)),  # curated, from the teacher miner kind
}


def _arms():
    rows = [_trace(t, p) for t, (p, _, _) in TRACES.items()]
    return build_arms(rows, {t: f for t, (_, _, f) in TRACES.items()},
                      pool_of=lambda r: POOLS.get(r["problem_id"]),
                      success=lambda r: TRACES[r["trace_id"]][1],
                      kind_of=lambda r: {"t1": "subtask_label", "t2": "subtask_label", "t9": "teacher"}.get(r["trace_id"], "agentic"))


def test_each_arm_is_the_previous_one_minus_what_its_stage_rejected():
    arms = _arms()
    members = {name: [r["id"] for r in arms.rows[name]] for name in ARM_NAMES}
    assert members == {
        "raw": ["t1", "t2", "t3", "t4", "t5", "t6", "t9"],
        "raw_success": ["t2", "t3", "t4", "t5", "t6", "t9"],
        "structural": ["t3", "t4", "t5", "t6", "t9"],
        "format_grounding": ["t4", "t5", "t6", "t9"],
        "reasoning": ["t5", "t6", "t9"],
        "curated": ["t6", "t9"],
        "scaffold": [],
        "curated_without_teacher_miner": ["t6"],
    }
    assert arms.skipped == {"pool_eval": 1, "pool_unknown": 1}
    assert arms.kinds["raw"] == {"subtask_label": 2, "agentic": 4, "teacher": 1}
    assert arms.kinds["structural"] == {"agentic": 4, "teacher": 1}


def test_rows_are_drawn_reproducibly_and_never_more_than_there_are():
    rows = [{"id": f"r{i}"} for i in range(10)]
    assert draw_rows(rows, 4, 0) == draw_rows(rows, 4, 0)
    assert draw_rows(rows, 4, 0) != draw_rows(rows, 4, 1)
    with pytest.raises(ValueError, match="cannot draw 11 rows from 10"):
        draw_rows(rows, 11, 0)


def test_the_summary_pools_seeds_and_says_when_a_stage_is_within_noise(tmp_path):
    arms = _arms()
    runs = [ArmResult("raw", 0, 1, 10, 150, "a"), ArmResult("raw", 1, 1, 14, 150, "b"),
            ArmResult("raw_success", 0, 1, 40, 150, "c"), ArmResult("raw_success", 1, 1, 44, 150, "d"),
            ArmResult("structural", 0, 1, 41, 150, "e"), ArmResult("structural", 1, 1, 45, 150, "f")]
    result = AblationResult(arms, 1, [0, 1], runs, "Product")
    rows = {s["arm"]: s for s in result.summary()}
    assert rows["raw"]["asr_mean"] == pytest.approx(12 / 150)
    assert (rows["raw"]["asr_min"], rows["raw"]["asr_max"]) == (pytest.approx(10 / 150), pytest.approx(14 / 150))
    assert rows["raw"]["ci_low"] < 24 / 300 < rows["raw"]["ci_high"]
    findings = result.findings()
    assert findings[0].startswith("+ production-strict success: +20.0 points over raw - a real gain")
    assert findings[1].endswith("within noise (intervals overlap)")
    assert "| raw (normalised firehose, train pool) | 7 | 1 | 8.0% (6.7–9.3)" in result.markdown()
    assert rows["raw"]["rule_mean"] is None
    assert result.plot(tmp_path / "p.png").stat().st_size > 1000


def test_the_scaffold_arm_is_compared_with_the_curated_arms(tmp_path):
    arms = _arms()
    runs = [ArmResult("scaffold", 0, 0, 20, 150, "s"), ArmResult("curated", 0, 2, 60, 150, "c"),
            ArmResult("curated_without_teacher_miner", 0, 1, 58, 150, "w")]
    result = AblationResult(arms, 2, [0], runs, "Product")
    rows = {s["arm"]: s for s in result.summary()}
    assert rows["scaffold"]["trained_rows"] == 0 and rows["curated_without_teacher_miner"]["trained_rows"] == 1
    findings = result.findings()
    assert any(f.startswith("+ dedup, ranking and split (the curated corpus): +26.7 points over scaffold - a real gain")
               for f in findings), findings
    assert any("over curated - within noise" in f for f in findings), findings


def test_the_scaffold_arm_trains_as_the_chains_scaffold_and_the_cuts_as_the_sft_stage(monkeypatch, tmp_path):
    """One way to train the scaffold: the chain's (``run_sft(curated=False)`` as checkpoint ``scaffold``)."""
    from types import SimpleNamespace

    import oro_assets.evaluation.report as report
    import oro_assets.training.stages as stages
    from oro_assets.training.profiles import get_profile

    calls = []

    def fake_sft(profile, rows, parent, out_root, tracking, **kwargs):
        calls.append((len(rows), kwargs.get("curated", True), kwargs.get("stage", "sft"), kwargs["seed"]))
        return SimpleNamespace(path=tmp_path / str(len(calls)), mlflow_run={})

    monkeypatch.setattr(stages, "run_sft", fake_sft)
    monkeypatch.setattr(report, "evaluate_checkpoint", lambda *a, **k: SimpleNamespace(metrics={"asr": 0.5}))
    result = run_ablation(_arms(), base_checkpoint=tmp_path / "base", profile=get_profile("tiny"),
                          eval_problems=[{"problem_id": "p_eval", "category": "Product"}] * 2, catalogue=None,
                          out_root=tmp_path, seeds=(0,), arm_names=("curated", "scaffold"),
                          trained_shapes_only=False, log=lambda m: None)
    assert calls == [(2, True, "sft", 0), (0, False, "scaffold", 0)]
    assert [(r.arm, r.rows, r.successes) for r in result.results] == [("curated", 2, 1), ("scaffold", 0, 1)]
