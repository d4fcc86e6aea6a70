"""The test pool is locked: only a final-report run reads it; screens, ad-hoc evaluations and benchmarks read dev."""

import argparse
import json

import pytest

from oro_assets.evaluation import cli
from oro_assets.evaluation.heldout import (
    FINAL_REPORT_TAG,
    LockedPoolError,
    load_eval_problems,
    require_reader,
)
from oro_assets.ops.runner import EVAL_ASSETS, final_report_run_config, smoke_run_config


def _rows(tmp_path):
    rows = [{"problem_id": f"d{i}", "pool": "dev", "category": "Product"} for i in range(3)]
    rows += [{"problem_id": f"t{i}", "pool": "test", "category": "Product"} for i in range(2)]
    path = tmp_path / "eval_problems.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_only_the_final_report_reads_the_test_pool(tmp_path):
    path = _rows(tmp_path)
    assert [r["problem_id"] for r in load_eval_problems(path, "dev")] == ["d0", "d1", "d2"]
    with pytest.raises(LockedPoolError, match="train_tiny.*test pool is locked"):
        load_eval_problems(path, "test", reader="train_tiny")
    assert [r["problem_id"] for r in load_eval_problems(path, "test", final_report=True)] == ["t0", "t1"]
    with pytest.raises(ValueError, match="unknown evaluation pool 'train'"):
        require_reader("train", final_report=True, reader="x")


def test_a_final_report_run_evaluates_every_stage_on_test_and_keeps_the_smoke_settings():
    config = final_report_run_config(smoke_run_config())
    assert EVAL_ASSETS and all(config["ops"][name]["config"]["pool"] == "test" for name in EVAL_ASSETS)
    assert all(config["ops"][name]["config"]["max_problems"] == 4 for name in EVAL_ASSETS)
    assert "pool" not in json.dumps(smoke_run_config()), "the smoke config itself is left on dev"
    assert final_report_run_config(None)["ops"][EVAL_ASSETS[0]]["config"] == {
        "pool": "test", "holdout_greedy_categories": ["Product", "Shop", "Voucher"]}
    # a smoke run keeps its own (no greedy run beyond the sample)
    assert all(config["ops"][name]["config"]["holdout_greedy_categories"] == [] for name in EVAL_ASSETS)


def test_the_final_report_runs_greedy_on_every_held_out_problem_of_every_category():
    """The stratified sample holds 25 Shop problems a world: the report's greedy run covers all of them."""
    import dagster as dg

    from oro_assets.definitions import defs

    final_job = defs().resolve_job_def("final_report_job")
    config = final_report_run_config(None, with_arms=True)
    dg.validate_run_config(final_job, config)
    assert {tuple(config["ops"][name]["config"]["holdout_greedy_categories"]) for name in EVAL_ASSETS} == {
        ("Product", "Shop", "Voucher")}
    assert FINAL_REPORT_TAG == "oro/final_report"


def _run(argv):
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["eval", *argv])
    return args.func(args)


def test_an_ad_hoc_evaluation_reads_dev_and_refuses_the_test_pool(world, tmp_path, data_dir, capsys):
    rows = [{**p, "pool": pool} for p, pool in zip(world.problems[:3], ("dev", "test", "test"), strict=True)]
    path = tmp_path / "eval_problems.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    world.catalogue.to_jsonl(tmp_path / "catalogue.jsonl")
    code = _run(["--scripted", "teacher", "--problems", str(path), "--pool", "test", "--out", str(tmp_path / "o")])
    assert code == 2
    assert "test pool is locked" in capsys.readouterr().err
    assert _run(["--scripted", "teacher", "--problems", str(path), "--n", "1", "--out", str(tmp_path / "o")]) == 0
    result = json.loads((tmp_path / "o" / "eval_result.json").read_text())
    assert [r["problem_id"] for r in result["rows"]] == [world.problems[0]["problem_id"]]
    assert result["config"]["pool"] == "dev", "the result records the pool it read, as the assets' evaluations do"
