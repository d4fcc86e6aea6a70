"""`score` and `arena serve` subcommands, run for real."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from oro_assets.arena.cli import main
from oro_assets.arena.generator import build_world
from oro_assets.arena.problems import problem_ground_truth_ids, write_problems_jsonl


def _step(n, calls, ts=1712345678901, pid=None, query=None):
    return {"completion": {"reasoning_content": "", "content": "",
                           "message": {"think": "", "tool_call": [{"name": c, "parameters": a, "tool_call_id": "x", "result": ""}
                                                                  for c, a in calls], "response": ""}},
            "extra_info": {"step": n, "query": query, "timestamp": ts, "problem_id": pid, "execution_time": 1.0, "proxy_calls": []}}


def test_score_cli(tmp_path, capsys):
    world = build_world(8, n_problems=12, n_products=600)
    write_problems_jsonl(world.problems, tmp_path / "problems.jsonl")
    world.catalogue.to_jsonl(tmp_path / "catalogue.jsonl")
    p0, p1, p2 = world.problems[0], world.problems[1], world.problems[2]
    gt0 = ",".join(problem_ground_truth_ids(p0))
    envelope = {"problem_id": p0["problem_id"], "status": "success", "error": None, "dialogue": [
        _step(1, [("find_product", {"q": "x"})], ts=None, pid=p0["problem_id"]),
        _step(2, [("recommend_product", {"product_ids": "1"})], pid=p0["problem_id"]),
        _step(3, [("recommend_product", {"product_ids": gt0}), ("terminate", {"status": "success"})], pid=p0["problem_id"]),
    ]}
    wrong = world.catalogue.products[0]["product_id"]
    openai_row = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": p1["query"]},
                               {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1_0", "type": "function",
                                "function": {"name": "recommend_product", "arguments": json.dumps({"product_ids": wrong})}}]}]}
    dialogue_only = [_step(1, [("recommend_product", {"product_ids": ",".join(problem_ground_truth_ids(p2))})], pid=p2["problem_id"])]
    timed_out = {**envelope, "status": "timed_out"}
    lines = [json.dumps(envelope), json.dumps(openai_row), json.dumps(dialogue_only),
             json.dumps({"problem_id": "nope", "dialogue": []}), "{garbage", json.dumps(timed_out)]
    (tmp_path / "traces.jsonl").write_text("\n".join(lines) + "\n")
    rc = main(["score", "--problems", str(tmp_path / "problems.jsonl"), "--catalogue", str(tmp_path / "catalogue.jsonl"),
               "--traces", str(tmp_path / "traces.jsonl")])
    assert rc == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(rows) == 6
    r0 = rows[0]
    assert r0["problem_id"] == p0["problem_id"] and r0["category"] == p0["category"]
    assert r0["gt"] == 1.0 and r0["rule"] == 1.0 and r0["success"] is True
    assert r0["format"] == (0.5 + 1 + 1) / 3  # first step lacks its timestamp
    assert ("shop" in r0) == (p0["category"] == "Shop") and ("budget" in r0) == (p0["category"] == "Voucher")
    assert rows[1]["problem_id"] == p1["problem_id"] and rows[1]["gt"] == 0.0 and rows[1]["success"] is False
    assert "fields" in rows[1]["items"][0] and rows[1]["format"] is None
    assert rows[2]["problem_id"] == p2["problem_id"] and rows[2]["success"] is True
    assert "no matching problem" in rows[3]["error"] and "unreadable" in rows[4]["error"]
    assert rows[5]["rule"] == 1.0 and rows[5]["success"] is False  # timeouts count as failures
    assert main(["score", "--problems", str(tmp_path / "problems.jsonl"), "--catalogue", str(tmp_path / "nope.jsonl"),
                 "--traces", str(tmp_path / "traces.jsonl")]) == 2


def test_arena_serve_subprocess(tmp_path):
    """``arena serve`` answers over HTTP and stops cleanly on SIGTERM, even when started with SIGTERM ignored (as a
    shell's background job can be: a CI run launched that way left its servers running)."""
    world = build_world(8, n_problems=5, n_products=300)
    world.catalogue.to_jsonl(tmp_path / "catalogue.jsonl")
    proc = subprocess.Popen([sys.executable, "-m", "oro_assets.arena.cli", "arena", "serve", "--port", "0",
                             "--catalogue", str(tmp_path / "catalogue.jsonl")], stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN))
    try:
        line = proc.stderr.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+", line).group(0)
        deadline = time.time() + 20
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=5) as resp:
                    assert json.loads(resp.read()) == {"status": "ok", "products": 300}
                break
            except OSError:
                assert time.time() < deadline
                time.sleep(0.1)
    finally:
        proc.terminate()
        try:
            returncode = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            status = Path(f"/proc/{proc.pid}/status").read_text()
            proc.kill()
            raise AssertionError(f"arena serve ignored SIGTERM for 60 s:\n{status}") from None
    assert returncode == 0  # a clean stop (the socket closed), not death by the signal
