import json
from pathlib import Path

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
    assert report.markdown.index("## Results") < report.markdown.index("## All metrics")
    table = [line for line in report.markdown.split("## All metrics")[1].splitlines() if line.startswith("| ")]
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
    assert names == ["asr_per_stage.png", "eval_report.json", "eval_report.md", "eval_results.md", "pass_at_k.png"]


def _stage(asr, ci, product, shop, voucher, p1, p8, n=75):
    """Metrics as an evaluation writes them (numbers given here, not computed by the code under test)."""
    def cat(a, c, k):
        return {"asr": a, "asr_ci": c, "n_problems": k, "solved": round(a * k), "gt_rate": 0.0, "mean_rule": 0.0}
    return {"asr": asr, "asr_ci": ci, "n_problems": n, "solved": round(asr * n), "asr_basis": "greedy",
            "pass_at_1": p1, "pass_at_8": p8, "pass_at_k": {"1": p1, "8": p8},
            "by_category": {"Product": cat(*product, 25), "Shop": cat(*shop, 25), "Voucher": cat(*voucher, 25)},
            "by_difficulty": {}, "process": {}, "outcome_counts": {"no_tool_call": 600, "recommended": 75}}


_KTO = _stage(0.13333333333333333, [0.07406272508766178, 0.22807411371470004],
              (0.4, [0.23397982574637785, 0.5926074689426452]), (0.0, [0.0, 0.13319090229044035]),
              (0.0, [0.0, 0.13319090229044035]), 0.10499999999999998, 0.22666666666666666)
_BASE = _stage(0.0, [0.0, 0.048726524802590484], (0.0, [0.0, 0.1331909]), (0.0, [0.0, 0.1331909]),
               (0.0, [0.0, 0.1331909]), 0.0, 0.0)


def test_results_table_is_markdown_with_rounded_rates_and_intervals():
    from oro_assets.evaluation.report import results_table

    table = results_table(["base", "kto"], {"base": _BASE, "kto": _KTO})
    lines = table.strip().splitlines()
    assert lines[0] == "| stage | all (n=75) | Product (n=25) | Shop (n=25) | Voucher (n=25) | pass@1 | pass@8 |"
    assert lines[2] == "| base | 0.0% (0.0–4.9) | 0.0% (0.0–13.3) | 0.0% (0.0–13.3) | 0.0% (0.0–13.3) | 0.0% | 0.0% |"
    assert lines[3] == ("| kto | 13.3% (7.4–22.8) | 40.0% (23.4–59.3) | 0.0% (0.0–13.3) | 0.0% (0.0–13.3) "
                        "| 10.5% | 22.7% |")
    # stages evaluated on different problem counts carry the count in the cell
    small = dict(_KTO, n_problems=4)
    mixed = results_table(["base", "kto"], {"base": _BASE, "kto": small}).splitlines()
    assert mixed[0].startswith("| stage | all | Product (n=25) |") and "13.3% (7.4–22.8) n=4" in mixed[3]


def test_report_names_runs_without_a_tool_call(tmp_path):
    report = build_comparison_report({"base": _BASE}, tmp_path / "rep")
    outcomes = report.markdown.split("## Run outcomes")[1].splitlines()
    assert "| stage | recommended | no_tool_call |" in outcomes and "| base | 75 | 600 |" in outcomes


def test_eval_report_asset_shows_the_table_and_plots_and_logs_them_to_mlflow(data_dir, tmp_path):
    import dagster as dg
    from mlflow.tracking import MlflowClient

    from oro_assets.defs.evaluation.assets import eval_report
    from oro_assets.defs.resources import TrackingResource, WarehouseResource

    warehouse = WarehouseResource(data_dir=str(tmp_path / "data"))
    for stage, m in (("base", _BASE), ("kto", _KTO)):
        EvalResult(stage, "p", f"r_{stage}", m, [], None, None).save(warehouse.reports_dir / "eval" / stage)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = dg.materialize([eval_report], resources={
        "warehouse": warehouse,
        "tracking": TrackingResource(tracking_uri=uri, artifact_root=str(tmp_path / "artifacts"))})
    assert result.success
    meta = result.asset_materializations_for_node("eval_report")[0].metadata
    assert isinstance(meta["results"], dg.MarkdownMetadataValue)
    assert "| kto | 13.3% (7.4–22.8) | 40.0% (23.4–59.3) |" in meta["results"].md_str
    assert "0.13333" not in meta["results"].md_str and "headline" not in meta
    for name in ("plot_asr", "plot_pass_at_k"):
        assert isinstance(meta[name], dg.PathMetadataValue) and meta[name].path.endswith(".png")
    assert meta["report"].md_str.count("data:image/png;base64,") == 2  # the plots render in the UI
    run_id = meta["mlflow_run_id"].text
    client = MlflowClient(tracking_uri=uri)
    names = {a.path for a in client.list_artifacts(run_id)}
    assert {"eval_results.md", "asr_per_stage.png", "pass_at_k.png"} <= names
    logged = Path(client.download_artifacts(run_id, "eval_results.md", str(tmp_path / "dl"))).read_text()
    assert meta["results"].md_str in logged
    assert client.get_run(run_id).data.metrics["base.runs_no_tool_call"] == 600


def test_results_table_shows_the_greedy_run_on_every_holdout_problem():
    from oro_assets.evaluation.report import results_table

    def holdout(solved, ci):
        return {"Product": {"n_problems": 182, "solved": solved, "asr": solved / 182, "asr_ci": ci,
                            "gt_rate": 0.0, "mean_rule": 0.0}}

    base = dict(_BASE, holdout_greedy=holdout(0, [0.0, 0.0207]))
    kto = dict(_KTO, holdout_greedy=holdout(51, [0.2187, 0.3487]))
    lines = results_table(["base", "kto"], {"base": base, "kto": kto}).strip().splitlines()
    assert lines[0] == ("| stage | all (n=75) | Product (n=25) | Shop (n=25) | Voucher (n=25) "
                        "| Product, every hold-out problem, greedy (n=182) | pass@1 | pass@8 |")
    assert lines[2].endswith("| 0.0% (0.0–13.3) | 0.0% (0.0–2.1) | 0.0% | 0.0% |")
    assert lines[3].endswith("| 0.0% (0.0–13.3) | 28.0% (21.9–34.9) | 10.5% | 22.7% |")


def test_report_shows_where_multi_item_answers_stop(tmp_path):
    shop = {"runs": 8, "right_count": 0.125, "met_by_position": [0.25, 0.0, 0.0], "all_met": 0.0, "condition": 0.0}
    voucher = {"runs": 4, "right_count": 0.5, "met_by_position": [0.5, 0.25], "all_met": 0.25, "condition": 0.75}
    with_items = dict(_metrics(0.1), items_by_category={"Shop": shop, "Voucher": voucher, "Product": voucher})
    report = build_comparison_report({"base": _metrics(0.0), "sft": with_items}, tmp_path / "rep")
    table = [ln for ln in report.markdown.split("## Multi-item problems")[1].splitlines() if ln.startswith("| ")]
    assert table[0] == ("| stage | category | runs | right count % | item 1 % | item 2 % | item 3 % | all items % | "
                        "shop / budget % |")
    assert table[1:] == ["| sft | Shop | 8 | 12.5 | 25.0 | 0.0 | 0.0 | 0.0 | 0.0 |",
                         "| sft | Voucher | 4 | 50.0 | 50.0 | 25.0 | - | 25.0 | 75.0 |"]
    # results from before the breakdown existed: no section
    assert "Multi-item" not in build_comparison_report({"base": _metrics(0.0)}, tmp_path / "r2").markdown


def test_the_report_says_which_machine_measured_each_stage(tmp_path):
    zen3, zen4 = "AMD EPYC, family 25 model 1, avx2", "AMD EPYC, family 25 model 17, avx512f"
    same = {s: EvalResult(s, "p", s, _metrics(0.2), [], None, None, config={"machine": zen3}) for s in ("base", "sft")}
    report = build_comparison_report(same, tmp_path / "one")
    assert f"Measured on one machine: {zen3}." in report.markdown and "## Machines" not in report.markdown
    assert json.loads(report.summary_path.read_text())["machines"] == {"base": zen3, "sft": zen3}
    mixed = {**same, "kto": {"metrics": _metrics(0.3), "config": {"machine": zen4}}}
    report = build_comparison_report(mixed, tmp_path / "two")
    assert "## Machines" in report.markdown
    assert f"| sft | {zen3} |" in report.markdown and f"| kto | {zen4} |" in report.markdown
    unrecorded = build_comparison_report({"base": _metrics(0.0)}, tmp_path / "none")
    assert "Measured on" not in unrecorded.markdown and "## Machines" not in unrecorded.markdown
