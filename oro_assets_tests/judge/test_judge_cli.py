import argparse
import json

import judge_fixtures as fx

from oro_assets.judge import cli


def _run(argv, monkeypatch, tmp_path):
    monkeypatch.setenv("ORO_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("ORO_JUDGE", raising=False)
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_prints_one_line_per_trace(tmp_path, monkeypatch, capsys):
    traces = tmp_path / "traces.jsonl"
    rows = [fx.restate()[0], fx.compare(as_strings=False)[0]]
    traces.write_text("\n".join(json.dumps(r) for r in rows) + "\n\nnot json\n")
    code = _run(["judge", "--traces", str(traces)], monkeypatch, tmp_path)
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 1  # one unreadable line, reported, the others judged
    assert [(o.get("score"), o.get("gate")) for o in out[:2]] == [(0.3, 2), (0.9, 5)]
    assert out[0]["explanation"].startswith("Gate 1 passed") and out[0]["judge_id"] == "rule"
    assert out[2]["line_no"] == 4 and "error" in out[2]


def test_cli_accepts_raw_oro_envelopes_and_caches(tmp_path, monkeypatch, capsys):
    envelope = {
        "problem_id": "p1", "status": "success", "query": "grey racing tee",
        "dialogue": [{
            "completion": {"reasoning_content": "", "content": "",
                           "message": {"think": "Search first.",
                                       "tool_call": [{"name": "find_product", "parameters": {"q": "grey racing tee"},
                                                      "tool_call_id": "abcdefgh", "result": fx.PRODUCTS}],
                                       "response": ""}},
            "extra_info": {"step": 1, "query": "grey racing tee", "timestamp": 1767225600000, "problem_id": "p1",
                           "proxy_calls": []}}],
    }
    traces = tmp_path / "raw.jsonl"
    traces.write_text(json.dumps(envelope) + "\n")
    cache = tmp_path / "state" / "judge_cache.sqlite"
    assert _run(["judge", "--traces", str(traces), "--cache", str(cache)], monkeypatch, tmp_path) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["score"] == 0.1 and first["cached"] is False  # no proxy inference evidence
    assert _run(["judge", "--traces", str(traces), "--cache", str(cache)], monkeypatch, tmp_path) == 0
    assert json.loads(capsys.readouterr().out)["cached"] is True
