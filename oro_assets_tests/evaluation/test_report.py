import json

import pytest

from oro_assets.evaluation.report import (
    PUBLISHED,
    PUBLISHED_NOTE,
    EvalResult,
    build_comparison_report,
    log_report_to_mlflow,
)


def _metrics(asr, n=75, pk=None):
    solved = round(asr * n)
    return {"asr": solved / n, "asr_ci": [max(0.0, asr - 0.1), min(1.0, asr + 0.1)], "solved": solved, "n_problems": n,
            "points_per_problem": 100 / n, "asr_basis": "greedy", "gt_rate": asr / 2, "mean_rule": asr, "format": 1.0,
            "pass_at_k": pk or {}, "pass_at_1": (pk or {}).get("1"), "pass_at_8": (pk or {}).get("8"),
            "by_category": {"Product": {"asr": asr, "n_problems": n, "solved": solved, "asr_ci": [0, 1],
                                        "gt_rate": 0, "mean_rule": 0}},
            "by_difficulty": {}, "process": {"mean_steps": 4.0, "mean_views": 1.0, "hallucination_rate": 0.0}}


def test_comparison_report_orders_stages_and_marks_published_rows(tmp_path):
    results = {
        "kto": EvalResult("kto", "p", "r3", _metrics(0.4, pk={"1": 0.3, "2": 0.4, "8": 0.5}), [], None, None),
        "base": EvalResult("base", "p", "r1", _metrics(0.0), [], None, None),
        "sft": {"metrics": _metrics(0.2)},
        "scripted:teacher": _metrics(0.96),
    }
    report = build_comparison_report(results, tmp_path / "rep")
    assert report.stages == ["base", "sft", "kto", "scripted:teacher"]
    table = [line for line in report.markdown.splitlines() if line.startswith("| ")]
    stage_rows = [line.split("|")[1].strip() for line in table[1:]]
    assert stage_rows[:4] == ["base", "sft", "kto", "scripted:teacher"]
    published = [line for line in table if PUBLISHED_NOTE in line]
    assert len(published) == len(PUBLISHED) == 6
    assert any("| *42.7* |" in line and "*34.8*" in line and "*53.3*" in line for line in published)
    kto_row = next(line for line in table if line.startswith("| kto |"))
    assert "| 40.0 |" in kto_row and "| 30 / 75 |" in kto_row and "| 50.0 |" in kto_row
    for path in report.plots.values():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    inline = report.markdown_with_inline_plots()
    assert "](asr_per_stage.png)" not in inline and inline.count("data:image/png;base64,") == 2
    assert report.metadata()["headline"]["asr/kto"] == pytest.approx(0.4)
    summary = json.loads(report.summary_path.read_text())
    assert summary["published_reference"]["note"] == PUBLISHED_NOTE
    assert summary["metrics"]["kto"]["pass_at_k"]["8"] == 0.5


def test_eval_result_round_trip(tmp_path):
    r = EvalResult("sft", "p", "r", _metrics(0.5), [{"problem_id": "a"}], "t.jsonl", "s.jsonl",
                   checks={"eval_pool": []}, config={"n": 8})
    r.save(tmp_path)
    assert EvalResult.load(tmp_path) == r


@pytest.mark.slow
def test_mlflow_logging_to_a_sqlite_store(tmp_path):
    from mlflow.tracking import MlflowClient

    report = build_comparison_report({"base": _metrics(0.0), "sft": _metrics(0.4)}, tmp_path / "rep")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run_id = log_report_to_mlflow(report, uri, artifact_dir=tmp_path / "artifacts")
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    assert run.data.metrics["sft.asr"] == pytest.approx(30 / 75)
    assert run.data.metrics["base.asr"] == 0.0
    names = sorted(a.path for a in client.list_artifacts(run_id))
    assert names == ["asr_per_stage.png", "eval_report.json", "eval_report.md", "pass_at_k.png"]
