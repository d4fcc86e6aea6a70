"""A Parquet day and a ShareGPT / NeMo day curate end to end through the production steps
(``curation.pipeline.STEPS`` via ``curate_files``), with the fates the same records get as OpenAI JSONL;
a day of bad files gets a reason per record and per refused file, and conservation holds."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from chat_layouts import as_nemo, as_sharegpt

from oro_assets.curation.clusters import Registry
from oro_assets.curation.ledger import check_conservation
from oro_assets.curation.pipeline import curate_files, step_named
from oro_assets.judge.rule import RuleJudge
from oro_assets.traces.reader import iter_partition_files
from oro_assets.traces.samples import openai_row

DAY = "2026-01-02"


def no_tools(row: dict) -> dict:
    msgs = [{**m, "tool_calls": []} for m in row["messages"] if m["role"] != "tool"]
    return {**row, "messages": msgs}


def unpaired(row: dict) -> dict:
    first_tool = next(i for i, m in enumerate(row["messages"]) if m["role"] == "tool")
    return {**row, "messages": row["messages"][:first_tool] + row["messages"][first_tool + 1:]}


def ungrounded(row: dict) -> dict:
    msgs = []
    for m in row["messages"]:
        calls = [{**c, "function": {"name": c["function"]["name"], "arguments": '{"product_ids":"1234567"}'}}
                 if c["function"]["name"] == "recommend_product" else c for c in m.get("tool_calls") or []]
        msgs.append({**m, "tool_calls": calls} if m["role"] == "assistant" else m)
    return {**row, "messages": msgs}


#: good rows, and rows each defect of which a curation stage rejects
RECORDS = [openai_row(s) for s in range(1, 10)] + [no_tools(openai_row(10)), unpaired(openai_row(11)),
                                                   ungrounded(openai_row(12))]


def write_jsonl(path: Path, rows: list) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_parquet(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


def curate(root: Path) -> tuple[list[dict], dict, object]:
    store, reports = curate_files(iter_partition_files(str(root), DAY), DAY, judge=RuleJudge(), registry=Registry())
    return store.rows("trace_ledger", DAY), reports, store


def fates(ledger: list[dict]) -> list[tuple]:
    return [(r["fate"], r["stage"], r["reason"], r["pool"]) for r in ledger]


@pytest.fixture(scope="module")
def openai_day(tmp_path_factory):
    root = tmp_path_factory.mktemp("openai")
    write_jsonl(root / DAY / "part-00000.jsonl", RECORDS)
    ledger = curate(root)[0]
    assert {r["reason"] for r in ledger} >= {None, "no_tool_calls", "unpaired_tool_call", "ungrounded_recommendation"}
    return ledger


def test_a_parquet_day_of_three_openai_rows_has_three_ledger_rows_with_their_provenance(tmp_path):
    rows = [openai_row(s) for s in (1, 2, 3)]
    path = tmp_path / DAY / "train-00000-of-00001.parquet"
    write_parquet(path, rows)
    jsonl = tmp_path / "jsonl"
    write_jsonl(jsonl / DAY / "part-00000.jsonl", rows)
    ledger, reports, _ = curate(tmp_path)
    assert reports["ingest"].stats[DAY]["raw_records"] == 3
    assert [(r["source_file"], r["line_no"], r["format"]) for r in ledger] == [
        (str(path), n, "openai_messages") for n in (1, 2, 3)]
    as_read = pq.read_table(path).to_pylist()  # the rows as Parquet holds them (absent struct fields are null)
    assert [r["raw_sha256"] for r in ledger] == [
        hashlib.sha256(json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()
        for r in as_read]
    assert check_conservation(3, ledger) == []
    assert fates(ledger) == fates(curate(jsonl)[0])
    assert any(r["fate"] == "kept" for r in ledger)


def test_a_sharegpt_and_nemo_day_curates_with_the_fates_of_the_openai_rows(tmp_path, openai_day):
    # NeMo rows on the odd lines: each layout meets good and defective rows
    write_jsonl(tmp_path / DAY / "part-00000.jsonl", [as_sharegpt(r) for r in RECORDS[0::2]])
    write_parquet(tmp_path / DAY / "train-00000-of-00001.parquet", [as_nemo(r) for r in RECORDS[1::2]])
    ledger, reports, store = curate(tmp_path)
    n = len(RECORDS)
    assert len(ledger) == n and check_conservation(n, ledger) == []
    assert {r["format"] for r in ledger} == {"sharegpt"}
    assert reports["ingest"].stats[DAY]["by_format"] == {"sharegpt": n}
    # the ledger is in file order: the JSONL part's rows (even records), then the Parquet part's (odd)
    assert fates(ledger) == fates(openai_day[0::2] + openai_day[1::2])
    labels = {r["label"] for r in store.rows("structural_labels", DAY)}
    assert labels == {"agentic"}


def test_a_day_of_bad_files_gets_a_reason_per_record_and_per_refused_file(tmp_path):
    day = tmp_path / DAY
    write_parquet(day / "a-good.parquet", [openai_row(1), openai_row(2)])
    write_parquet(day / "b-other-schema.parquet", [{"text": f"row {i}", "label": i} for i in range(3)])
    write_parquet(day / "c-messages-as-text.parquet", [{"messages": json.dumps(openai_row(i)["messages"])}
                                                       for i in (3, 4)])
    unknown_role = as_sharegpt(openai_row(5))
    unknown_role["conversations"][1]["from"] = "narrator"
    write_jsonl(day / "d-chat.jsonl", [unknown_role, as_sharegpt(openai_row(6))])
    (day / "e-broken.parquet").write_bytes(b"PAR1 but not really")
    (day / "f-notes.txt").write_text("read me\n")
    (day / "_SUCCESS").write_text("")
    ledger, reports, store = curate(tmp_path)

    raw = reports["ingest"].stats[DAY]["raw_records"]
    assert raw == 2 + 3 + 2 + 2 + 1 + 1
    assert check_conservation(raw, ledger) == []
    by_file: dict[str, list] = {}
    for r in ledger:
        by_file.setdefault(Path(r["source_file"]).name, []).append(r["reason"])
    assert by_file["b-other-schema.parquet"] == ["unknown_format"] * 3
    assert by_file["c-messages-as-text.parquet"] == ["schema_violation"] * 2
    assert by_file["d-chat.jsonl"][0] == "schema_violation"
    assert by_file["e-broken.parquet"] == ["corrupt_file"]
    assert by_file["f-notes.txt"] == ["unsupported_file"]
    assert "_SUCCESS" not in by_file
    assert by_file["a-good.parquet"] == [None, None] and by_file["d-chat.jsonl"][1] is None
    narrator = next(r for r in ledger if Path(r["source_file"]).name == "d-chat.jsonl")
    assert "'narrator'" in narrator["detail"] and narrator["format"] == "sharegpt"
    # the run's metadata names every refusal
    meta = step_named("ingest").metadata(store, reports["ingest"], "raw_traces")
    assert meta["raw_records"] == raw
    assert meta["quarantined_by_reason"] == {"corrupt_file": 1, "schema_violation": 3, "unknown_format": 3,
                                             "unsupported_file": 1}
