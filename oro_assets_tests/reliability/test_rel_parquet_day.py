"""Issue 31: a day folder as Hugging Face stores a dataset (``train-00000-of-00001.parquet``), with ShareGPT
rows and files that are no part, materialised by the real ``curation_job``: every record and every refused
file is in the ledger, and the run's metadata names the refusals."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import materialize

from oro_assets.traces.samples import openai_row

DAY = "2026-01-06"


@pytest.mark.slow
def test_a_parquet_and_sharegpt_day_materialises_with_every_file_accounted_for(tmp_path, fresh_root):
    day = tmp_path / "firehose" / DAY
    day.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([openai_row(s) for s in (1, 2, 3)]), day / "train-00000-of-00001.parquet")
    chat = [{"conversations": [{"from": "human", "value": "red shoes"},
                               {"from": "gpt", "value": '<tool_call>\n{"name": "find_product", "arguments": '
                                                        '{"q": "red shoes"}}\n</tool_call>'},
                               {"from": "tool", "value": "[]"}, {"from": "gpt", "value": "None found."}]},
            {"conversations": [{"from": "human", "value": "q"}, {"from": "narrator", "value": "x"}]}]
    (day / "chat.jsonl").write_text("".join(json.dumps(r) + "\n" for r in chat))
    (day / "README.md").write_text("# a dataset card, not a part\n")
    (day / "_SUCCESS").write_text("")

    proc = materialize(fresh_root, tmp_path / "firehose", "curation_job", DAY)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    ledger = pq.read_table(fresh_root / "warehouse" / "trace_ledger" / f"{DAY}.parquet").to_pylist()
    got = sorted((r["source_file"].rsplit("/", 1)[1], r["line_no"], r["format"], r["reason"]) for r in ledger)
    assert [g[:3] for g in got] == [("README.md", 1, None), ("chat.jsonl", 1, "sharegpt"), ("chat.jsonl", 2, "sharegpt"),
                                    ("train-00000-of-00001.parquet", 1, "openai_messages"),
                                    ("train-00000-of-00001.parquet", 2, "openai_messages"),
                                    ("train-00000-of-00001.parquet", 3, "openai_messages")]
    reasons = {g[0:2]: g[3] for g in got}
    assert reasons[("README.md", 1)] == "unsupported_file"
    assert reasons[("chat.jsonl", 2)] == "schema_violation"
    assert all(reasons[("train-00000-of-00001.parquet", n)] is None for n in (1, 2, 3))  # kept

    import dagster as dg

    instance = dg.DagsterInstance.from_config(str(fresh_root / "dagster_home"))
    try:
        record = instance.fetch_materializations(dg.AssetKey("raw_traces"), limit=1).records[0]
        meta = record.asset_materialization.metadata
    finally:
        instance.dispose()
    assert meta["raw_records"].value == 6
    assert meta["quarantined_by_reason"].value == {"schema_violation": 1, "unsupported_file": 1}
