"""``oro-assets export``: the curated days of a range as a Hugging Face dataset folder that ``datasets`` loads
(by ``data_files`` and by its card) and SFT trains on; rows, splits, card and provenance checked against
the warehouse's ledger and the raw firehose."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from oro_assets.cli import main
from oro_assets.curation.clusters import Registry
from oro_assets.curation.pipeline import STEPS
from oro_assets.curation.step import RunParams, run_steps
from oro_assets.curation.store import WarehouseStore
from oro_assets.judge.rule import RuleJudge
from oro_assets.reasons import ReasonCode
from oro_assets.storage import Warehouse
from oro_assets.traces.reader import iter_partition_files
from oro_assets.traces.samples import openai_row

D1, D2, D3 = "2026-01-02", "2026-01-03", "2026-01-04"
SPLITS = ("train", "eval")


def _jsonl(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))


@pytest.fixture(scope="module")
def curated(tmp_path_factory):
    """Three curated days in a warehouse, each step run over it as its asset runs it: a Parquet day, a
    JSONL day (with a broken line and a line of no known format), and a JSONL day repeating two of the
    second day's lines (same trace ids, kept on both days) and one of its own (a duplicate record)."""
    root = tmp_path_factory.mktemp("export")
    firehose = root / "firehose"
    (firehose / D1).mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([openai_row(s) for s in range(1, 11)]),
                   firehose / D1 / "train-00000-of-00001.parquet")
    d2 = [json.dumps(openai_row(s)) for s in range(11, 21)]
    _jsonl(firehose / D2 / "part-00000.jsonl", [*d2, '{"messages": [', json.dumps({"text": "not a chat"})])
    d3 = [json.dumps(openai_row(s)) for s in range(21, 27)]
    _jsonl(firehose / D3 / "part-00000.jsonl", d2[:2] + d3 + d3[:1])
    wh = Warehouse(root / "data")
    days = [D1, D2, D3]
    registry = Registry()
    params = RunParams(judge=RuleJudge(), registry=registry,
                       files={d: iter_partition_files(str(firehose), d) for d in days})
    store = WarehouseStore(wh)
    for step in STEPS:
        run_steps([step], store, days, params)
    ledger = pa.concat_tables([pq.read_table(wh.path("trace_ledger", d)) for d in days]).to_pylist()
    # the registry's own rule (Registry.pool_of): train, dev, test or never_touch, the same for a whole cluster
    side = {m["cluster_id"]: registry.pool_of(k) for k, m in registry.members.items() if registry.pool_of(k)}
    cluster = {r["trace_id"]: r["cluster_id"] for d in days
               for r in pq.read_table(wh.path("split_traces", d), columns=["trace_id", "cluster_id"]).to_pylist()}
    ledger = [r | {"side": side[cluster[r["trace_id"]]]} if r["fate"] == "kept" else r for r in ledger]
    return {"root": root, "firehose": firehose, "wh": wh, "ledger": ledger, "side": side}


def _split_of(curated: dict, row: dict) -> str | None:
    """The corpus split of a kept ledger row: train pool -> train, held-out dev side -> eval, else withheld."""
    return {"train": "train", "dev": "eval"}.get(row["side"])


@pytest.fixture(scope="module")
def exported(curated):
    from oro_assets.curation.export import export_corpus

    out = curated["root"] / "corpus"
    return export_corpus(curated["wh"], D1, D3, out, license="cc-by-4.0"), out


def _card(out: Path) -> tuple[dict, str]:
    import yaml

    text = (out / "README.md").read_text()
    assert text.startswith("---\n")
    front, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(front), body


def test_the_corpus_loads_with_datasets_and_holds_the_kept_train_and_eval_traces(curated, exported):
    import datasets

    result, out = exported
    ds = datasets.load_dataset("parquet", data_files={s: str(out / "data" / f"{s}-00000-of-00001.parquet")
                                                      for s in SPLITS})
    kept = [r for r in curated["ledger"] if r["fate"] == "kept"]
    sides = [r["side"] for r in kept]
    assert [s in ("dev", "test") for s in sides] == [r["pool"] == "eval" for r in kept]
    assert "dev" in sides and "test" in sides, "the fixture must keep traces of both held-out sides"
    for split in SPLITS:
        want = {r["trace_id"] for r in kept if _split_of(curated, r) == split}
        assert want, f"the fixture must keep {split} traces"
        got = ds[split]["id"]
        assert len(got) == len(set(got)) == len(want) and set(got) == want
        assert result.rows[split] == len(want)
    assert not set(ds["train"]["cluster_id"]) & set(ds["eval"]["cluster_id"])
    # the locked test side is never exported: eval holds dev clusters only
    assert {curated["side"][c] for c in ds["eval"]["cluster_id"]} == {"dev"}
    assert {curated["side"][c] for c in ds["train"]["cluster_id"]} == {"train"}
    # the two lines day 3 repeats are one trace each, exported once
    assert result.repeated == 2
    assert result.withheld == {"test": sides.count("test"), "never_touch": sides.count("never_touch")}
    assert result.withheld["test"] > 0
    row = ds["train"][0]
    assert [m["role"] for m in row["messages"]][:3] == ["system", "user", "assistant"]
    call = next(c for m in row["messages"] for c in m["tool_calls"] or [])
    assert isinstance(json.loads(call["function"]["arguments"]), dict)
    assert json.loads(row["tools"])[0]["function"]["name"] == "find_product"
    # the card's configs name the same splits: loading the folder gives the same rows and features
    by_card = datasets.load_dataset(str(out))
    for split in SPLITS:
        assert by_card[split]["id"] == ds[split]["id"] and by_card[split].features == ds[split].features


def test_every_row_points_at_its_raw_record(curated, exported):
    result, _ = exported
    firehose = curated["firehose"]
    checked = {"openai_messages": 0}
    for split in SPLITS:
        for row in pq.read_table(result.files[split]).to_pylist():
            path = firehose / row["source_file"]
            assert row["source_file"].startswith(row["partition"] + "/") and path.exists()
            if path.suffix == ".parquet":
                raw = pq.read_table(path).slice(row["line_no"] - 1, 1).to_pylist()[0]
                body = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
            else:
                body = path.read_bytes().split(b"\n")[row["line_no"] - 1]
            assert hashlib.sha256(body).hexdigest() == row["raw_sha256"]
            assert row["id"] == "tr_" + row["raw_sha256"][:24]
            checked[row["format"]] += 1
    assert checked["openai_messages"] == sum(result.rows.values())


def test_the_card_has_features_splits_license_funnel_and_reason_codes(curated, exported):
    import datasets

    result, out = exported
    meta, body = _card(out)
    assert meta["license"] == "cc-by-4.0"
    assert meta["configs"][0]["data_files"] == [{"split": s, "path": f"data/{s}-00000-of-00001.parquet"}
                                                for s in SPLITS]
    assert {s["name"]: s["num_examples"] for s in meta["dataset_info"]["splits"]} == result.rows
    loaded = datasets.load_dataset("parquet", data_files=str(result.files["train"]))["train"]
    assert [f["name"] for f in meta["dataset_info"]["features"]] == list(loaded.features)
    assert meta["dataset_info"]["features"] == datasets.Features(loaded.features)._to_yaml_list()
    for heading in ("## Splits: by leak cluster", "## Funnel", "## Reason codes", "## Columns", "## License"):
        assert heading in body
    ledger = curated["ledger"]
    reasons = {r["reason"] for r in ledger if r["reason"]}
    assert reasons, "the fixture's days must reject some records"
    for code in ReasonCode:  # one table row per code, with its count over the range
        n = sum(r["reason"] == code.value for r in ledger)
        assert f"| `{code.value}` | {n} |" in body
    assert f"{len(ledger)} raw records over the range" in body
    n_kept = sum(r["fate"] == "kept" for r in ledger)
    n_withheld = sum(r["side"] in ("test", "never_touch") for r in ledger if r["fate"] == "kept")
    assert n_withheld == result.withheld["test"] + result.withheld["never_touch"]
    assert f"| export: withheld pools (test, never_touch) | {n_kept} | {n_withheld} | {n_kept - n_withheld} |" in body
    assert f"locked `test` side, which only\na final report reads ({result.withheld['test']} traces)" in body
    for column in ("partition", "source_file", "line_no", "raw_sha256"):
        assert f"| `{column}` |" in body


def test_one_sft_step_trains_on_the_exported_corpus(exported, small_profile, base_ckpt, tmp_path):
    import datasets

    from oro_assets.training.profiles import with_overrides
    from oro_assets.training.stages.sft import run_sft

    result, _ = exported
    rows = datasets.load_dataset("parquet", data_files=str(result.files["train"]))["train"].to_list()
    profile = with_overrides(small_profile, "sft", max_steps=1, per_device_train_batch_size=2)
    res = run_sft(profile, rows, base_ckpt, tmp_path, log=lambda m: None)
    assert res.metrics["rows_in"] == len(rows) and res.n_examples > 0
    history = json.loads((res.path / "metrics.json").read_text())["history"]
    assert [h["step"] for h in history] == [1] and math.isfinite(history[0]["loss"]) and history[0]["loss"] > 0
    assert (res.path / "model" / "config.json").exists()


def test_the_export_command(curated, data_dir, capsys, tmp_path):
    out = tmp_path / "cli-corpus"
    data = str(curated["wh"].data_dir)
    assert main(["export", "--start", D2, "--end", D2, "--out", str(out), "--warehouse", data]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["partitions"] == [D2] and printed["repeated"] == 0
    assert pq.read_table(out / "data" / "train-00000-of-00001.parquet").column("partition").unique().to_pylist() \
        in ([D2], [])
    assert _card(out)[0]["license"] == "unknown"
    bad = ((["--start", D3, "--end", D1], "before"),
           (["--start", "2026-02-01", "--end", "2026-02-02"], "no curated day"),
           (["--start", "1/2/2026", "--end", D1], "YYYY-MM-DD"))
    for argv, words in bad:
        assert main(["export", *argv, "--out", str(out), "--warehouse", data]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err


def test_the_curated_corpus_asset_exports_the_window_on_demand(curated, exported, tmp_path):
    import shutil

    import dagster as dg

    from oro_assets.defs.curation.corpus import curated_corpus
    from oro_assets.defs.resources import WarehouseResource

    data = tmp_path / "data"
    shutil.copytree(curated["wh"].data_dir, data)
    Warehouse(data).path("trace_ledger", D3).unlink()  # a day whose curation did not finish is skipped
    result = dg.materialize([curated_corpus], resources={"warehouse": WarehouseResource(data_dir=str(data))},
                            run_config={"ops": {"curated_corpus": {"config": {"license": "cc-by-4.0"}}}})
    assert result.success
    meta = result.asset_materializations_for_node("curated_corpus")[0].metadata
    assert meta["partitions"].value == [D1, D2] and meta["skipped_days"].value == [D3]
    rows = {s: pq.read_table(data / "corpus" / "data" / f"{s}-00000-of-00001.parquet").num_rows for s in SPLITS}
    assert meta["rows"].value == rows and sum(rows.values()) > 0
    kept = [r for r in curated["ledger"] if r["fate"] == "kept" and r["partition"] in (D1, D2)]
    assert rows == {s: len({r["trace_id"] for r in kept if _split_of(curated, r) == s}) for s in SPLITS}
    assert _card(data / "corpus")[0]["license"] == "cc-by-4.0"


def test_the_corpus_is_not_part_of_the_main_job(data_dir):
    from oro_assets.definitions import defs

    repo = defs().get_repository_def()
    assert "curated_corpus" in {k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()}
    main = {k.to_user_string() for k in repo.get_job("main_job").asset_layer.selected_asset_keys}
    assert "sft_dataset" in main and "curated_corpus" not in main
