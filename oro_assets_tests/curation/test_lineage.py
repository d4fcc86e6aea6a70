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
from oro_assets.curation.lineage import RecordNotFound, explain, format_explanation
from oro_assets.curation.pipeline import curate_partition


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
