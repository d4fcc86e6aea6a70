"""Both of ORO's recorders on one day: the later one (whole bodies, requests' messages, no pipe limit;
reference §2b) read beside a6b1cf3's, each record's era said, and odd records (eras mixed in one
dialogue, a 5 MB record) given a fate without a crash."""

from __future__ import annotations

import copy
import glob
import gzip
import hashlib
from pathlib import Path

import pytest

from oro_assets import jsonio
from oro_assets.arena import recorder
from oro_assets.curation.ledger import check_conservation
from oro_assets.curation.pipeline import curate_partition
from oro_assets.judge.rule import RuleJudge
from oro_assets.traces.ingest import IngestStats, ingest_batches
from oro_assets.traces.normalize import normalize_record
from oro_assets.traces.samples import oro_run
from oro_assets.traces.schema import Provenance

DAY = "2026-01-01"


def _normalize(obj):
    line = jsonio.dumps(obj).encode()
    return normalize_record(obj, provenance=Provenance("part.jsonl", 1, DAY, hashlib.sha256(line).hexdigest()))


def _calls(record):
    return [c for step in record["dialogue"] for c in step["extra_info"].get("proxy_calls", [])]


def _first_step(row):
    return jsonio.loads(row["steps"])[0]


# ------------------------------------------------------------------------------ the later recorder


def test_later_recorder_keeps_every_body_whole_with_ids_and_the_request_messages():
    products = [{"product_id": str(10**9 + i), "title": "x" * 300} for i in range(10)]
    search = recorder.ProxyEvent("GET", "/search/find_product", 5, 1.0, 200, params={"q": "a+b", "page": 1},
                                 body=products)
    old = recorder.log_entry(search)
    new = recorder.log_entry(search, recorder.ERA_LATER)
    assert "response" not in old and old["response_truncated"] is True
    assert new["response"] == products and "response_truncated" not in new and "response_length" not in new
    assert new["result_product_ids"] == [str(10**9 + i) for i in range(10)]
    small = recorder.log_entry(recorder.ProxyEvent("GET", "/search/find_product", 5, 1.0, 200, params={"q": "a"},
                                                   body=products[:1]), recorder.ERA_LATER)
    assert small["result_product_ids"] == [str(10**9)]  # every find_product list, not only dropped ones

    sent = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    answer = {"choices": [{"message": {"content": "t" * 5000}}]}
    inference = recorder.ProxyEvent("POST", recorder.INFERENCE_PATH, 9, 10.0, 200,
                                    json_data=recorder.inference_request("m"), body=answer, request_messages=sent)
    assert "messages" not in recorder.log_entry(inference)["json_data"]
    later = recorder.log_entry(inference, recorder.ERA_LATER)
    assert later["json_data"]["messages"] == sent and later["json_data"]["model"] == "m"
    assert later["response"] == answer
    with pytest.raises(ValueError, match="unknown recorder era"):
        recorder.log_entry(inference, "1999")


def test_a_dialogue_too_big_for_the_pipe_arrives_whole_only_in_the_later_era():
    step = recorder.dialogue_step("x" * 70_000, [], "done", "q", 1, 1000)
    args = dict(problem_id="p", query="q", status="success", events=[], execution_time=1.0,
                inference_failure_count=0, inference_total=1, error=None, written_ms=2000)
    old = recorder.format_envelope(dialogue=[copy.deepcopy(step)], **args)
    new = recorder.format_envelope(dialogue=[copy.deepcopy(step)], era=recorder.ERA_LATER, **args)
    assert old["status"] == "TIMED_OUT" and old["dialogue"] is None
    assert new["status"] == "SUCCESS" and new["dialogue"][0]["completion"]["message"]["think"] == "x" * 70_000


def test_the_era_of_each_record_is_read_from_its_proxy_calls():
    old, new = oro_run(21, shape="text_array"), oro_run(21, shape="text_array", era=recorder.ERA_LATER)
    inference = [[c for c in _calls(r) if "/inference/" in c["path"]] for r in (old, new)]
    assert inference[0] and not any("messages" in c["json_data"] for c in inference[0])
    assert inference[1] and all(c["json_data"]["messages"][1]["role"] == "user" for c in inference[1])
    assert _first_step(_normalize(old))["recorder_era"] == "a6b1cf3"
    assert _first_step(_normalize(new))["recorder_era"] == "later"
    scripted = oro_run(22, inference=False)  # searches only: a6b1cf3 keeps a short list without ids
    assert _first_step(_normalize(scripted))["recorder_era"] == "a6b1cf3"
    bare = copy.deepcopy(new)
    for step in bare["dialogue"]:
        step["extra_info"].pop("proxy_calls", None)
    first = _first_step(_normalize(bare))
    assert first["recorder_era"] is None and first["oro_richness"] is None


def _mixed(seed: int = 23) -> dict:
    """A later-era record whose first whole answer was cut the a6b1cf3 way (dropped body)."""
    record = oro_run(seed, shape="qwen3_object", era=recorder.ERA_LATER)
    call = next(c for c in _calls(record) if "/inference/" in c["path"] and "response" in c)
    call["response_length"] = len(recorder.oro_json(call.pop("response")))
    call["response_truncated"] = True
    return record


def test_a_record_mixing_eras_is_read_with_a_note_and_labelled():
    from oro_assets.curation.structural import label_structural

    row = _normalize(_mixed())
    first = _first_step(row)
    assert first["recorder_era"] == "mixed"
    assert "dropped_bodies 1" in first["recorder_note"] and "requests_with_messages" in first["recorder_note"]
    label, evidence = label_structural(row)
    assert label == "agentic"
    assert evidence["recorder_era"] == "mixed" and "recorder:" in evidence["reason"]


def _write(path, records) -> None:
    with gzip.open(path, "wb") as fh:
        for r in records:
            fh.write(jsonio.dumps(r).encode() + b"\n")


def test_both_eras_and_odd_records_on_one_day_curate_with_conservation(tmp_path):
    from oro_assets.curation.clusters import Registry

    day = tmp_path / DAY
    day.mkdir()
    huge = oro_run(31, shape="text_array", era=recorder.ERA_LATER)  # a reasoning model's 5 MB dialogue
    answer = next(c for c in _calls(huge) if "/inference/" in c["path"] and "response" in c)
    answer["response"]["choices"][0]["message"]["content"] = "<think>" + "weigh the candidates " * 250_000 + "</think>"
    records = [oro_run(s, era=era) for s in range(40, 46) for era in recorder.ERAS]
    records += [_mixed(47), huge]
    _write(day / "part-00000.jsonl.gz", records)
    assert len(jsonio.dumps(huge)) > 5_000_000
    stats = IngestStats(partition=DAY)
    normalized, quarantine = [], []
    for norm, quar in ingest_batches(sorted(glob.glob(str(day / "*.jsonl.gz"))), DAY, stats=stats):
        normalized += norm.to_pylist()
        quarantine += quar.to_pylist()
    assert stats.raw_records == len(records) and quarantine == []
    eras = [_first_step(r)["recorder_era"] for r in normalized]
    assert eras.count("a6b1cf3") == 6 and eras.count("later") == 7 and eras.count("mixed") == 1
    big = next(jsonio.loads(r["steps"]) for r in normalized if r["line_no"] == len(records))
    assert all(len(e["content"]) <= 2000 for s in big for e in s["inference"])  # evidence stays small
    assert [e["content_chars"] for s in big for e in s["inference"] if "content_chars" in e] == [5_250_015]
    out = curate_partition(normalized, quarantine, Registry(), judge=RuleJudge(), partition=DAY)
    assert len(out.trace_ledger) == len(records)
    assert check_conservation(len(records), out.trace_ledger, out.curated_traces) == []
    by_line = {r["trace_id"]: r for r in out.structural_labels}
    assert {r["recorder_era"] for r in by_line.values()} == {"a6b1cf3", "later", "mixed"}
    # the same agent run gets the same label and fate whichever recorder wrote it (one of the two
    # copies of a kept run is then the other's near duplicate)
    line = {r["trace_id"]: r["line_no"] for r in normalized}
    labels = {line[r["trace_id"]]: r["label"] for r in out.structural_labels}
    fates = {row["line_no"]: row["reason"] for row in out.trace_ledger}
    for k in range(6):
        assert labels[2 * k + 1] == labels[2 * k + 2]
        pair = {fates[2 * k + 1], fates[2 * k + 2]}
        assert len(pair) == 1 or pair == {None, "near_duplicate"}, pair
    assert any(len({fates[2 * k + 1], fates[2 * k + 2]}) == 2 for k in range(6))  # some runs were kept


def test_the_simulator_writes_both_eras_on_one_day_and_the_reader_names_them(tmp_path):
    from oro_assets.arena.firehose import simulate_day
    from oro_assets.traces.ingest import iter_normalized
    from oro_assets.traces.reader import Quarantined, iter_partition_files

    summary = simulate_day(DAY, 80, tmp_path, seed=15, workers=1,
                           recorder_shares={recorder.ERA_A6B1CF3: 0.5, recorder.ERA_LATER: 0.5})
    assert set(summary.extra["recorder_eras"]) == {"a6b1cf3", "later"}
    truth = {t["line_key"]: t for t in map(jsonio.loads, (tmp_path / "_truth" / f"{DAY}.jsonl").read_bytes().splitlines())}
    read = 0
    for item in iter_normalized(iter_partition_files(str(tmp_path), DAY), DAY):
        if isinstance(item, Quarantined):
            continue
        row, parsed = item
        t = truth[f"part-00000.jsonl.gz:{row['line_no']}"]
        era = parsed["steps"][0].get("recorder_era")
        if t["format"] in ("oro_envelope", "dialogue_only"):
            assert era == t["recorder_era"], row["line_no"]
            read += 1
        else:
            assert era is None
    assert read >= 60
    with pytest.raises(ValueError, match="unknown recorder era"):
        simulate_day(DAY, 1, tmp_path / "x", seed=15, recorder_shares={"v0": 1.0})


def test_an_a6b1cf3_only_day_is_written_as_before_eras_existed(tmp_path):
    from oro_assets.arena.firehose import simulate_day

    simulate_day(DAY, 30, tmp_path / "a", seed=15, workers=1)
    simulate_day(DAY, 30, tmp_path / "b", seed=15, workers=1, recorder_shares={recorder.ERA_A6B1CF3: 1.0})
    a = (tmp_path / "a" / DAY / "part-00000.jsonl.gz").read_bytes()
    assert a == (tmp_path / "b" / DAY / "part-00000.jsonl.gz").read_bytes()
    lines = gzip.decompress(a).splitlines()
    assert not any(b'"messages"' in line for line in lines)  # a6b1cf3 removes the requests' messages


def test_the_embedded_firehose_takes_the_later_share_from_the_setting(tmp_path, monkeypatch):
    from oro_assets.defs.resources import firehose_from_settings
    from oro_assets.settings import SettingsError, load_settings

    monkeypatch.setenv("ORO_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("ORO_FIREHOSE_DIR", raising=False)
    monkeypatch.setenv("ORO_SIM_TRACES_PER_DAY", "12")
    monkeypatch.setenv("ORO_SIM_LATER_RECORDER_SHARE", "1")
    firehose = firehose_from_settings(load_settings())
    assert firehose.later_recorder_share == 1.0
    files = firehose.partition_files(DAY)
    lines = [line for f in files for line in gzip.decompress(Path(f).read_bytes()).splitlines()]
    truth = [jsonio.loads(t) for t in (tmp_path / "firehose" / "_truth" / f"{DAY}.jsonl").read_bytes().splitlines()]
    assert len(lines) == 12 and {t["recorder_era"] for t in truth} == {"later"}
    assert any(b'"messages"' in line for line in lines)
    monkeypatch.setenv("ORO_SIM_LATER_RECORDER_SHARE", "2")
    with pytest.raises(SettingsError, match="ORO_SIM_LATER_RECORDER_SHARE"):
        load_settings()
