"""The simulated firehose: layout, determinism, truth labels, formats and shares."""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json

import pytest

from oro_assets.arena import sim_cli
from oro_assets.arena.firehose import simulate_day
from oro_assets.arena.generator import build_world
from oro_assets.arena.population import DEFAULT_SHARES

DATE = "2026-01-07"


@pytest.fixture(scope="module")
def world():
    return build_world(5, 120, 3000)


@pytest.fixture(scope="module")
def day(tmp_path_factory, world):
    out = tmp_path_factory.mktemp("fh")
    summary = simulate_day(DATE, 2400, out, seed=5, world=world, part_size=1000, workers=2)
    return out, summary


def _lines(path):
    return gzip.open(path, "rb").read().split(b"\n")[:-1]


def _truth(out, date=DATE):
    return [json.loads(x) for x in (out / "_truth" / f"{date}.jsonl").read_text().splitlines()]


def test_layout_and_truth_line_keys(day):
    out, summary = day
    assert summary.parts == ["part-00000.jsonl.gz", "part-00001.jsonl.gz", "part-00002.jsonl.gz"]
    for name in summary.parts:
        raw = (out / DATE / name).read_bytes()
        assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\x00\x00\x00\x00"  # gzip, mtime 0
    assert (out / "problems.jsonl").exists() and (out / "catalogue.jsonl").exists()
    truth = _truth(out)
    assert len(truth) == 2400
    parts = {n: _lines(out / DATE / n) for n in summary.parts}
    assert [len(v) for v in parts.values()] == [1000, 1000, 400]
    for row in truth[::37]:
        name, line_no = row["line_key"].split(":")
        line = parts[name][int(line_no) - 1]
        assert hashlib.sha256(line).hexdigest() == row["raw_sha256"]
        assert row["structural"] in ("agentic", "subtask", "no_inference")
        assert row["designed_gate"] in (0.1, 0.3, 0.5, 0.7, 0.9)
    problems = {json.loads(x)["problem_id"] for x in (out / "problems.jsonl").read_text().splitlines()}
    vg = {json.loads(x)["problem_id"]: json.loads(x)["variant_group"]
          for x in (out / "_truth" / "problems.jsonl").read_text().splitlines()}
    assert set(vg) == problems
    assert all(row["problem_id"] in problems and row["variant_group"] == vg[row["problem_id"]] for row in truth)


def test_same_seed_and_date_is_byte_identical_and_worker_independent(tmp_path, world, day):
    out, summary = day
    again = tmp_path / "again"
    simulate_day(DATE, 2400, again, seed=5, world=world, part_size=1000, workers=1)
    for name in summary.parts:
        assert (again / DATE / name).read_bytes() == (out / DATE / name).read_bytes()
    assert (again / "_truth" / f"{DATE}.jsonl").read_bytes() == (out / "_truth" / f"{DATE}.jsonl").read_bytes()
    other = tmp_path / "other"
    simulate_day(DATE, 300, other, seed=6, world=world, part_size=1000, workers=1)
    assert _lines(other / DATE / "part-00000.jsonl.gz")[:300] != _lines(out / DATE / "part-00000.jsonl.gz")[:300]


def test_days_share_one_pool_and_problems_repeat(tmp_path, world, day):
    out, _ = day
    simulate_day("2026-01-08", 800, out, seed=5, world=world, part_size=1000, workers=1, problems_per_day=60)
    a = {r["problem_id"] for r in _truth(out)}
    b = {r["problem_id"] for r in _truth(out, "2026-01-08")}
    assert a & b  # the same pool: problems come back on another day
    assert len(b) <= 60 < len(a)
    # the world files are rewritten identically (built from the seed, not the date)
    pool = {json.loads(x)["problem_id"] for x in (out / "problems.jsonl").read_text().splitlines()}
    assert b <= pool and a <= pool


def test_formats_and_records(day):
    out, summary = day
    truth = {r["line_key"]: r for r in _truth(out)}
    seen = {"oro_envelope": 0, "dialogue_only": 0, "shoppingbench_rollout": 0}
    bad_json = 0
    truncated = 0
    with_meta = 0
    for name in summary.parts:
        for n, line in enumerate(_lines(out / DATE / name), start=1):
            row = truth[f"{name}:{n}"]
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                bad_json += 1
                assert row["policy_kind"] == "broken_truncated_line"
                continue
            seen[row["format"]] += 1
            if row["format"] == "oro_envelope":
                # _format_single_result's keys, in its order; export metadata only on some lines
                assert list(rec)[:6] == ["problem_id", "status", "execution_time", "inference_failure_count",
                                         "inference_total", "error"] and list(rec)[-1] == "dialogue"
                assert rec["status"] in ("SUCCESS", "FAILED", "TIMED_OUT")
                assert rec["problem_id"] == row["problem_id"]
                if "eval_run_id" in rec:
                    with_meta += 1
                    for key in ("agent_version_id", "miner_hotkey", "race_id", "suite_version", "category",
                                "query", "recorded_at", "score"):
                        assert key in rec
                    assert rec["score"]["success"] == row["success"]
                if rec["status"] != "SUCCESS":
                    assert rec["dialogue"] is None and rec["error"]["type"]
                    assert row["success"] is False
                else:
                    assert rec["error"] is None
                steps = rec["dialogue"] or []
            elif row["format"] == "dialogue_only":
                assert isinstance(rec, list)
                steps = rec
            else:
                assert isinstance(rec, list)
                steps = rec
                assert row["structural"] == "agentic"  # ShoppingBench's loop is a model rollout
                for s in steps:
                    assert s["prompt"][1] == {"role": "user", "content": s["extra_info"]["query"]}
                    assert "proxy_calls" not in s["extra_info"]
                    if isinstance(s.get("completion"), dict) and isinstance(s["completion"].get("message"), dict):
                        msg = s["completion"]["message"]
                        assert "obs" in msg and all("result" not in c for c in msg["tool_call"])
            for k, s in enumerate(steps):
                assert ("execution_time" in s["extra_info"]) == (k == 0)
                calls = s["extra_info"].get("proxy_calls")
                assert calls is None or calls  # a step without calls has no key at all
                for p in calls or []:
                    assert p["kind"] == "summary"  # attempt entries never reach the envelope
                    if p["method"] == "GET":
                        assert "q" not in p["params"] or " " not in p["params"]["q"]  # quote_plus-encoded
                        assert "json_data" not in p
                    else:
                        assert p["json_data"]["temperature"] == 0.0 and "messages" not in p["json_data"]
                    if p.get("response_truncated"):
                        truncated += 1  # the body is dropped whole, only its length stays
                        assert "response" not in p and p["response_length"] > 2000
                    elif "response" in p:
                        assert len(json.dumps(p["response"])) <= 2000
    total = sum(seen.values()) + bad_json
    assert total == 2400 and bad_json > 0 and truncated > 0
    assert 0.8 < seen["oro_envelope"] / total < 0.9
    assert 0.6 < with_meta / seen["oro_envelope"] < 0.8
    assert seen["dialogue_only"] > 150 and seen["shoppingbench_rollout"] > 60
    assert sum(1 for line in truth.values() if line.get("duplicate_of")) >= 1


def test_population_shares_within_tolerance(day):
    out, _ = day
    truth = _truth(out)
    n = len(truth)
    groups = {"subtask": 0.40, "agentic_": 0.30, "teacher": 0.05, "shortcut": 0.05, "regex": 0.08, "broken_": 0.12}
    for prefix, share in groups.items():
        got = sum(r["policy_kind"].startswith(prefix) for r in truth) / n
        sd = (share * (1 - share) / n) ** 0.5
        assert abs(got - share) < 4 * sd, (prefix, got)
    assert {r["policy_kind"] for r in truth} == set(DEFAULT_SHARES)
    structural = {r["policy_kind"]: r["structural"] for r in truth}
    assert structural["regex"] == "no_inference" and structural["subtask_label"] == "subtask"
    assert structural["teacher"] == "agentic"
    teacher = [r["success"] for r in truth if r["policy_kind"] == "teacher"]
    regex = [r["success"] for r in truth if r["policy_kind"] == "regex"]
    assert sum(teacher) / len(teacher) > 0.85 > sum(regex) / len(regex)
    assert all(r["grounded"] is False for r in truth if r["policy_kind"] == "shortcut" and not r.get("duplicate_of"))


def test_bad_arguments_are_rejected(tmp_path, world):
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        simulate_day("2026-13-01", 10, tmp_path, seed=1, world=world)
    with pytest.raises(ValueError, match="unknown format"):
        simulate_day(DATE, 10, tmp_path, seed=1, world=world, format_shares={"csv": 1.0})
    with pytest.raises(ValueError, match="unknown policy kind"):
        simulate_day(DATE, 10, tmp_path, seed=1, world=world, policy_shares={"wizard": 1.0})


def test_cli_simulate(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    sim_cli.register(parser.add_subparsers())
    args = parser.parse_args(["simulate", "--date", DATE, "--traces", "40", "--out", str(tmp_path), "--seed", "3"])
    assert args.func(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["traces"] == 40 and summary["parts"] == ["part-00000.jsonl.gz"]
    assert len(_lines(tmp_path / DATE / "part-00000.jsonl.gz")) == 40
    with pytest.raises(SystemExit):
        parser.parse_args(["simulate", "--date", "yesterday", "--traces", "4", "--out", str(tmp_path)])


def test_openai_messages_format_on_request(tmp_path, world):
    simulate_day(DATE, 30, tmp_path, seed=2, world=world, format_shares={"openai_messages": 1.0}, workers=1)
    truth = _truth(tmp_path)
    for line, row in zip(_lines(tmp_path / DATE / "part-00000.jsonl.gz"), truth, strict=True):
        if row["policy_kind"] == "broken_truncated_line":
            continue
        rec = json.loads(line)
        assert [m["role"] for m in rec["messages"][:2]] == ["system", "user"]
        assert rec["problem_id"] == row["problem_id"] and rec["tools"]
        for m in rec["messages"]:
            for call in m.get("tool_calls") or []:
                assert isinstance(call["function"]["arguments"], str)


def test_concurrent_atomic_writes_of_one_file_never_fail_and_leave_one_complete_file(tmp_path):
    """arena_world and ingest may write catalogue.jsonl at once: each writes its own temporary file
    (never a shared ``.tmp``), so neither fails and the file is always one writer's whole output."""
    import os
    import threading

    from oro_assets.arena.firehose import _write_atomic

    path = tmp_path / "catalogue.jsonl"
    contents = {w: [f'{{"writer": {w}, "line": {i}, "pad": "{"x" * 200}"}}'.encode() for i in range(2000)]
                for w in (1, 2)}
    expected = {b"".join(line + b"\n" for line in lines) for lines in contents.values()}
    for _ in range(20):
        barrier = threading.Barrier(2)
        errors: list[BaseException] = []

        def write(w: int, barrier: threading.Barrier = barrier, errors: list = errors) -> None:
            try:
                barrier.wait()
                _write_atomic(path, contents[w])
            except BaseException as exc:  # collected and asserted below
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(w,)) for w in (1, 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert path.read_bytes() in expected
        assert sorted(os.listdir(tmp_path)) == ["catalogue.jsonl"]  # no temporary file left behind
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)
