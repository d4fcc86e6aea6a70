"""Per-example lineage on a kept and a rejected record, from a real warehouse layout."""

from __future__ import annotations

import argparse
import io
from contextlib import redirect_stdout

import curation_fixtures as F
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from oro_assets import jsonio
from oro_assets.curation import cli
from oro_assets.curation.clusters import Registry
from oro_assets.curation.datasets import sft_rows
from oro_assets.curation.pipeline import curate_partition
from oro_assets.ops.lineage import RecordNotFound, explain, format_explanation


def _write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    wh, ck = root / "warehouse", root / "checkpoints"
    p = F.PARTITION
    sibling = F.good(40)
    sibling_query = "  " + sibling["query"].upper() + " "  # the same problem asked differently
    raws = [F.good(1), F.ungrounded(11), F.subtask(3), F.good(41, query=sibling_query)]
    normalized = [
        F.normalized(r, line_no=i + 1, source="s3://bucket/2026-01-01/part-00000.jsonl.gz")
        for i, r in enumerate(raws)
    ]
    registry = Registry()
    registry.assign([{"query": sibling["query"]}])  # a sibling problem already known
    out = curate_partition(normalized, [], registry, partition=p)
    _write(wh / "normalized_traces" / f"{p}.parquet", normalized)
    _write(wh / "structural_labels" / f"{p}.parquet", out.structural_labels)
    _write(wh / "subtask_traces" / f"{p}.parquet", out.subtask_traces)
    _write(wh / "gated_traces" / f"{p}.parquet", out.gated_traces)
    _write(wh / "curated_traces" / f"{p}.parquet", out.curated_traces)
    _write(wh / "trace_ledger" / f"{p}.parquet", out.trace_ledger)
    pq.write_table(registry.to_table(), wh / "leak_clusters.parquet")
    for r in out.curated_traces:
        r["pool"] = "train"  # whatever its cluster drew, put it in SFT for the story
    _write(
        wh / "sft_dataset.parquet",
        [{**r, "messages": jsonio.dumps(r["messages"])} for r in sft_rows(out.curated_traces)],
    )
    kept_id = normalized[0]["trace_id"]
    run = ck / "sft" / "v0001"
    run.mkdir(parents=True)
    (run / "manifest.jsonl").write_text(kept_id + "\n")
    (run / "mlflow_run.json").write_text(
        jsonio.dumps({"run_id": "abc123", "experiment_id": "1", "uri": "sqlite:///x"})
    )
    return {"wh": wh, "ck": ck, "kept": kept_id, "rejected": normalized[1]["trace_id"], "out": out}


def test_lineage_of_a_kept_record(warehouse):
    story = explain(warehouse["kept"], warehouse["wh"], warehouse["ck"])
    assert story["raw"]["source_file"] == "s3://bucket/2026-01-01/part-00000.jsonl.gz"
    assert story["raw"]["line_no"] == 1 and story["raw"]["partition"] == F.PARTITION
    assert story["raw"]["format"] == "oro_envelope"
    assert [f["fate"] for f in story["fate"]] == ["kept"]
    assert story["structural"]["label"] == "agentic"
    assert story["structural"]["evidence"]["carried_steps"] >= 4
    assert story["gates"]["passed"] and story["gates"]["reasoning_score"] == 0.7
    assert story["dedup"]["decision"] == "kept"
    assert story["cluster"]["pool"] in ("train", "eval", "never_touch")
    assert story["datasets"] == [{"dataset": "sft_dataset", "rows": 1}]
    assert story["checkpoints"][0]["mlflow_run"]["run_id"] == "abc123"
    text = format_explanation(story)
    assert "part-00000.jsonl.gz:1" in text and "abc123" in text


def test_lineage_of_a_rejected_record(warehouse):
    story = explain(warehouse["rejected"], warehouse["wh"], warehouse["ck"])
    assert story["fate"][0]["reason"] == "ungrounded_recommendation"
    assert story["gates"] == {
        "passed": False,
        "reason": "ungrounded_recommendation",
        "detail": story["fate"][0]["detail"],
    }
    assert "9999999999" in story["gates"]["detail"]
    assert story["datasets"] == [] and story["checkpoints"] == []
    assert story["raw"]["line_no"] == 2


def test_lineage_shows_cluster_siblings(warehouse):
    sibling = next(r for r in warehouse["out"].curated_traces if r["line_no"] == 4)
    story = explain(sibling["trace_id"], warehouse["wh"], warehouse["ck"])
    assert story["cluster"]["siblings"], story["cluster"]


def _cli(argv):
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    args = parser.parse_args(argv)
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = args.func(args)
    return code, buf.getvalue()


def test_lineage_cli(warehouse):
    code, text = _cli(
        [
            "lineage",
            warehouse["rejected"],
            "--warehouse",
            str(warehouse["wh"]),
            "--checkpoints",
            str(warehouse["ck"]),
        ]
    )
    assert code == 0 and "ungrounded_recommendation" in text and "part-00000.jsonl.gz:2" in text
    code, text = _cli(
        [
            "lineage",
            warehouse["kept"],
            "--json",
            "--warehouse",
            str(warehouse["wh"]),
            "--checkpoints",
            str(warehouse["ck"]),
        ]
    )
    assert code == 0 and jsonio.loads(text)["trace_id"] == warehouse["kept"]
    code, _ = _cli(
        [
            "lineage",
            "tr_doesnotexist",
            "--warehouse",
            str(warehouse["wh"]),
            "--checkpoints",
            str(warehouse["ck"]),
        ]
    )
    assert code == 1
    with pytest.raises(RecordNotFound):
        explain("tr_nope", warehouse["wh"])


@pytest.fixture()
def richer(warehouse, tmp_path):
    """The module's warehouse plus rl_prompts, eval_problems, split_traces, and the kept line
    repeated by the next day's dump; no leak_clusters table yet."""
    import shutil

    wh = tmp_path / "warehouse"
    shutil.copytree(warehouse["wh"], wh)
    (wh / "leak_clusters.parquet").unlink()
    kept = next(r for r in warehouse["out"].curated_traces if r["trace_id"] == warehouse["kept"])
    _write(wh / "split_traces" / f"{F.PARTITION}.parquet",
           [{"trace_id": kept["trace_id"], "problem_key": kept["problem_id"], "cluster_id": "lc_test", "pool": "train"}])
    _write(wh / "rl_prompts.parquet", [{"id": f"{kept['trace_id']}:1"}, {"id": f"{kept['trace_id']}:2"},
                                      {"id": "teacher:p-teacher:1"}])
    _write(wh / "eval_problems.parquet", [{"id": "x", "problem_id": kept["problem_id"]}])
    ledger = pq.read_table(wh / "trace_ledger" / f"{F.PARTITION}.parquet").to_pylist()
    again = [dict(r, partition="2026-01-02", line_no=7) for r in ledger if r["trace_id"] == kept["trace_id"]]
    again[0].update(fate="rejected", stage="dedup", reason="near_duplicate", detail="seen on 2026-01-01")
    _write(wh / "trace_ledger" / "2026-01-02.parquet", again)
    return wh, kept


def test_lineage_of_rl_prompts_and_teacher_ids_and_made_up_ones(richer, warehouse):
    wh, kept = richer
    story = explain(f"{kept['trace_id']}:2", wh)
    assert story["trace_id"] == kept["trace_id"] and {"dataset": "rl_prompts", "rows": 1} in story["datasets"]
    teacher = explain("teacher:p-teacher:1", wh)
    assert teacher["teacher"]["problem_key"] == "p-teacher" and teacher["datasets"] == [{"dataset": "rl_prompts",
                                                                                         "rows": 1}]
    assert "teacher episode" in format_explanation(teacher)
    with pytest.raises(RecordNotFound, match="no rl_prompts example"):
        explain(f"{kept['trace_id']}:99", wh)  # the trace exists, that example does not
    with pytest.raises(RecordNotFound):
        explain("teacher:nobody:1", wh)


def test_lineage_names_eval_problems_split_cluster_and_every_day_a_line_came(richer):
    wh, kept = richer
    story = explain(kept["trace_id"], wh)
    assert story["cluster"]["cluster_id"] == "lc_test" and story["cluster"]["pool"] == "train"  # from split_traces
    assert {"dataset": "eval_problems", "rows": 1, "as": "its problem"} in story["datasets"]
    assert {"dataset": "rl_prompts", "rows": 2} in story["datasets"]
    assert [(f["partition"], f["fate"]) for f in story["fate"]] == [(F.PARTITION, "kept"), ("2026-01-02", "rejected")]
    assert story["raw"]["partition"] == F.PARTITION  # the stages are those of the kept occurrence
    assert "[2026-01-02 " in format_explanation(story) and ":7]" in format_explanation(story)


def test_a_line_repeated_on_a_later_day_is_one_training_example():
    from oro_assets.curation.datasets import kto_rows

    out = curate_partition([F.normalized(F.good(1), line_no=1)], [], Registry(), partition=F.PARTITION)
    rows = [dict(r, pool="train") for r in out.curated_traces]
    later = [dict(r, partition="2026-01-02", line_no=9) for r in rows]
    assert len(sft_rows(rows + later)) == len(sft_rows(rows)) == 1
    assert len(kto_rows(rows + later)) == 1
    assert sft_rows(rows + later)[0]["source"] == sft_rows(rows)[0]["source"]  # the first day's copy


def test_lineage_follows_checkpoints_built_on_one_that_trained_on_the_record(warehouse, tmp_path):
    import shutil

    ck = tmp_path / "checkpoints"
    shutil.copytree(warehouse["ck"], ck)
    child = ck / "kto" / "v0002"
    child.mkdir(parents=True)
    (child / "manifest.jsonl").write_text("some-other-example\n")
    zen4 = "AMD EPYC, family 25 model 17, avx512f"
    (child / "oro_checkpoint.json").write_text(jsonio.dumps({"stage": "kto", "parent_path": str(ck / "sft" / "v0001"),
                                                            "trained_on": {"key": zen4, "model": 17}}))
    unrelated = ck / "kto" / "v0003"
    unrelated.mkdir(parents=True)
    (unrelated / "manifest.jsonl").write_text("some-other-example\n")
    story = explain(warehouse["kept"], warehouse["wh"], ck)
    assert [(c["checkpoint"].split("checkpoints/")[1], c["via"]) for c in story["checkpoints"]] == [
        ("kto/v0002", str(ck / "sft" / "v0001")), ("sft/v0001", "direct")]
    assert "(built on " in format_explanation(story)
    # the machine that trained a checkpoint, where it recorded one (the sft here predates the record)
    assert [c.get("trained_on") for c in story["checkpoints"]] == [zen4, None]
    assert f"trained on {zen4}" in format_explanation(story)


def test_lineage_reaches_a_trace_through_its_word_swap_variant(warehouse, tmp_path):
    """A checkpoint that trained only on a word-swap variant of the record (``<id>~swap<k>``) trained on it."""
    ck = tmp_path / "checkpoints"
    variant_only = ck / "sft" / "v0009"
    variant_only.mkdir(parents=True)
    (variant_only / "manifest.jsonl").write_text(f"{warehouse['kept']}~swap2\nsome-other-example\n")
    (variant_only / "oro_checkpoint.json").write_text(jsonio.dumps({"stage": "sft", "parent_path": None}))
    other = ck / "sft" / "v0010"
    other.mkdir(parents=True)
    (other / "manifest.jsonl").write_text(f"{warehouse['kept']}x~swap0\n")
    (other / "oro_checkpoint.json").write_text(jsonio.dumps({"stage": "sft", "parent_path": None}))
    story = explain(warehouse["kept"], warehouse["wh"], ck)
    assert [(c["checkpoint"].split("checkpoints/")[1], c["via"]) for c in story["checkpoints"]] == [("sft/v0009", "direct")]
    # asking about the variant's id explains the row it was made from
    assert explain(f"{warehouse['kept']}~swap2", warehouse["wh"], ck)["checkpoints"] == story["checkpoints"]
