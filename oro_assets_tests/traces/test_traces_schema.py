"""Canonical schema: validation, edge conversions, and the round trip raw → normalised → ORO steps."""

from __future__ import annotations

import hashlib

import orjson
import pyarrow as pa
import pytest

from oro_assets.traces import samples
from oro_assets.traces.normalize import normalize_record
from oro_assets.traces.schema import (
    MESSAGE_KEYS,
    NORMALIZED_SCHEMA,
    Provenance,
    arguments_dict,
    parse_json_columns,
    to_hf_messages,
    to_oro_steps,
    validate_row,
)


def row_of(obj, line_no=1):
    raw = orjson.dumps(obj)
    return normalize_record(orjson.loads(raw), provenance=Provenance(
        "part-00000.jsonl", line_no, "2026-01-01", hashlib.sha256(raw).hexdigest()))


def test_schema_columns_match_the_contract():
    assert NORMALIZED_SCHEMA.names == [
        "trace_id", "partition", "source_file", "line_no", "raw_sha256", "format", "problem_id", "query", "status",
        "error", "meta", "messages", "tools", "steps", "n_steps", "n_tool_calls"]
    row = row_of(samples.oro_envelope(3))
    table = pa.Table.from_pylist([row], schema=NORMALIZED_SCHEMA)  # rows fit the Arrow schema as-is
    assert table.num_rows == 1


@pytest.mark.parametrize(("mutate", "needle"), [
    (lambda r: r.update(line_no="7"), "line_no"),
    (lambda r: r.update(partition="2026/01/01"), "partition"),
    (lambda r: r.update(format="csv"), "format"),
    (lambda r: r.update(trace_id="tr_000"), "trace_id"),
    (lambda r: r.update(messages="[{\"role\": \"robot\", \"content\": \"\"}]"), "role"),
    (lambda r: r.update(messages="not json"), "JSON"),
    (lambda r: r.update(n_tool_calls=r["n_tool_calls"] + 1), "n_tool_calls"),
    (lambda r: r.update(n_steps=0), "n_steps"),
    (lambda r: r.update(tools="[{\"type\": \"function\"}]"), "tools"),
    (lambda r: r.pop("meta"), "meta"),
])
def test_validate_row_finds_problems(mutate, needle):
    row = row_of(samples.oro_envelope(1))
    assert validate_row(row) == []
    mutate(row)
    problems = validate_row(row)
    assert any(needle in p for p in problems), problems


def test_validate_row_flags_dict_arguments_and_duplicate_ids():
    row = row_of(samples.oro_envelope(2))
    msgs = orjson.loads(row["messages"])
    calls = [m for m in msgs if m["role"] == "assistant" and m.get("tool_calls")]
    calls[0]["tool_calls"][0]["function"]["arguments"] = {"q": "x"}
    calls[1]["tool_calls"][0]["id"] = calls[2]["tool_calls"][0]["id"]
    row["messages"] = orjson.dumps(msgs).decode()
    problems = validate_row(row)
    assert any("arguments: str" in p for p in problems) and any("duplicate tool call id" in p for p in problems)


def test_arguments_dict_edge():
    assert arguments_dict('{"q": "red", "page": 2}') == {"q": "red", "page": 2}
    assert arguments_dict({"q": "x"}) == {"q": "x"}
    for bad in ("{q: red", "[1, 2]", "3", None):
        with pytest.raises(ValueError):
            arguments_dict(bad)


def test_hf_messages_fixed_keys_and_string_arguments():
    row = row_of(samples.oro_envelope(5))
    hf = to_hf_messages(row["messages"])
    assert all(tuple(m) == MESSAGE_KEYS for m in hf)
    assert hf[0] == {"role": "user", "content": row["query"], "reasoning_content": None, "tool_calls": None,
                     "tool_call_id": None, "name": None}
    tcs = [tc for m in hf if m["tool_calls"] for tc in m["tool_calls"]]
    assert tcs and all(isinstance(tc["function"]["arguments"], str) for tc in tcs)
    assert to_hf_messages(orjson.loads(row["messages"])) == hf


def test_parse_json_columns_accepts_parsed_values():
    row = row_of(samples.oro_envelope(6))
    once = parse_json_columns(row)
    assert isinstance(once["messages"], list) and isinstance(once["meta"], dict)
    assert parse_json_columns(once) == once


# ------------------------------------------------------------------ round trip

def _raw_think(step: dict) -> str:
    comp = step.get("completion") or {}
    msg = comp.get("message") or {}
    if msg.get("think"):
        return msg["think"]
    if comp.get("reasoning_content"):
        return comp["reasoning_content"]
    content = comp.get("content") or ""
    if "<think>" in content:
        return content.split("<think>", 1)[1].split("</think>", 1)[0].strip()
    return ""


def _ids(result) -> list[str]:
    if isinstance(result, list):
        return [r["product_id"] for r in result if isinstance(r, dict) and "product_id" in r]
    return []


def assert_round_trip(dialogue: list[dict], row: dict) -> None:
    rendered = to_oro_steps(row)
    evidence = orjson.loads(row["steps"])
    # ORO's auto-recommend step is code, not model: evidence only, never a message (traces/normalize.py)
    code_made = [ev.get("code_made", False) for ev in evidence]
    assert sum(code_made) <= 1 and (not any(code_made) or code_made[-1])
    assert (((dialogue[-1].get("completion") or {}).get("message") or {}).get("think")
            == "Auto-recommending best available candidates.") >= any(code_made)
    dialogue = [raw for raw, made in zip(dialogue, code_made, strict=True) if not made]
    evidence = [ev for ev in evidence if not ev.get("code_made")]
    assert len(rendered) == len(dialogue)
    for raw, back, ev in zip(dialogue, rendered, evidence, strict=True):
        msg = (raw.get("completion") or {}).get("message") or {}
        assert back["completion"]["message"]["think"] == _raw_think(raw)
        assert back["completion"]["message"]["response"] == (msg.get("response") or "")
        ts = (raw.get("extra_info") or {}).get("timestamp")
        assert back["extra_info"]["timestamp"] == (ts if isinstance(ts, int) else None)
        obs = {o["tool_call_id"]: o["results"] for o in msg.get("obs") or []}
        raw_calls = msg.get("tool_call") or []
        assert len(back["completion"]["message"]["tool_call"]) == len(raw_calls)
        for rc, bc, ec in zip(raw_calls, back["completion"]["message"]["tool_call"], evidence_calls(ev), strict=True):
            params = rc["parameters"]
            params = orjson.loads(params) if isinstance(params, str) else params
            assert (bc["name"], bc["parameters"]) == (rc["name"], params)
            has = "result" in rc or rc.get("tool_call_id") in obs
            assert ("result" in bc) == has
            if has:
                result = rc["result"] if "result" in rc else obs[rc["tool_call_id"]]
                assert bc["result"] == result
                assert ec["result_product_ids"] == list(dict.fromkeys(_ids(result)))


def evidence_calls(ev: dict) -> list[dict]:
    return ev["tool_calls"]


@pytest.mark.parametrize("seed", range(6))
def test_round_trip_samples(seed):
    dialogue = samples.oro_dialogue(seed, unpaired=seed % 2 == 0)
    row = row_of({"problem_id": "p", "status": "success", "dialogue": dialogue})
    assert_round_trip(dialogue, row)
    rollout = samples.shoppingbench_rollout(seed)
    assert_round_trip(rollout, row_of(rollout))


def test_round_trip_simulated_firehose(tmp_path):
    from oro_assets.arena import firehose
    from oro_assets.arena.generator import build_world

    world = build_world(7, n_problems=40, n_products=1500)
    firehose.simulate_day("2026-01-04", 80, tmp_path, seed=7, world=world, workers=1, problems_per_day=20,
                          format_shares={"oro_envelope": 0.5, "dialogue_only": 0.25, "shoppingbench_rollout": 0.25})
    import gzip

    checked = 0
    for part in sorted((tmp_path / "2026-01-04").glob("*.jsonl.gz")):
        for n, raw in enumerate(gzip.decompress(part.read_bytes()).splitlines(), start=1):
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue  # the simulator's truncated lines
            dialogue = obj["dialogue"] if isinstance(obj, dict) else obj
            if not dialogue or not all(isinstance((s.get("completion") or {}).get("message", {}), dict) for s in dialogue):
                continue  # malformed steps are schema violations, covered elsewhere
            row = row_of(obj, n)
            assert validate_row(row) == []
            assert_round_trip(dialogue, row)
            if isinstance(obj, dict):
                # a bare sandbox line has no export metadata: the query comes from the steps
                assert row["query"] == obj.get("query", dialogue[0]["extra_info"]["query"])
                assert row["problem_id"] == obj["problem_id"]
            checked += 1
    assert checked >= 60
