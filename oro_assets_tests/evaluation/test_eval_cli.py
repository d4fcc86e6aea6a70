import argparse
import json

import pytest

from oro_assets.arena.problems import write_problems_jsonl
from oro_assets.evaluation import cli
from oro_assets_tests.tiny_lm import tiny_random_qwen3


def _run(argv):
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["eval", *argv])
    return args.func(args)


@pytest.fixture(scope="module")
def files(world, tmp_path_factory):
    root = tmp_path_factory.mktemp("evalcli")
    problems = world.problems[:2]
    write_problems_jsonl(problems, root / "eval_problems.jsonl")
    world.catalogue.to_jsonl(root / "catalogue.jsonl")
    ckpt = root / "checkpoints" / "base" / "v0"
    model, tok = tiny_random_qwen3(seed=3, max_position_embeddings=8192)
    model.save_pretrained(ckpt / "model")
    tok.save_pretrained(ckpt / "model")
    return root, problems, ckpt


def test_eval_checkpoint_writes_trajectories_and_report(files, data_dir, capsys):
    root, problems, ckpt = files
    out = root / "out"
    code = _run(["--checkpoint", str(ckpt), "--problems", str(root / "eval_problems.jsonl"), "--n", "2",
                 "--temperature", "1.0", "--max-new-tokens", "8", "--out", str(out), "--stage", "base"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "base: ASR 0.0%" in printed  # an untrained model solves nothing
    result = json.loads((out / "eval_result.json").read_text())
    assert result["metrics"]["n_samples"] == 2 * 3
    assert len((out / "trajectories.jsonl").read_text().splitlines()) == 6
    assert (out / "report" / "eval_report.md").exists()


def test_eval_refuses_a_leaked_checkpoint(files, data_dir, capsys):
    root, problems, ckpt = files
    manifest = root / "manifest.json"
    manifest.write_text(json.dumps([problems[0]["problem_id"]]))
    code = _run(["--checkpoint", str(ckpt), "--problems", str(root / "eval_problems.jsonl"), "--n", "1",
                 "--manifest-problems", str(manifest), "--out", str(root / "leak")])
    assert code == 3
    assert "problem id in training manifest" in capsys.readouterr().err
    assert not (root / "leak" / "trajectories.jsonl").exists()


def test_eval_bad_input_is_a_clear_error(files, data_dir, capsys, tmp_path):
    root, _, ckpt = files
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "x"}\n')
    assert _run(["--checkpoint", str(ckpt), "--problems", str(bad)]) == 2
    assert "reward" in capsys.readouterr().err
    assert _run(["--endpoint", "http://127.0.0.1:9/v1", "--problems", str(root / "eval_problems.jsonl")]) == 2
    assert "--endpoint needs --model" in capsys.readouterr().err


def test_eval_refuses_counts_that_run_nothing_or_cut_silently(files, data_dir, capsys):
    root, _, ckpt = files
    problems = str(root / "eval_problems.jsonl")
    assert _run(["--checkpoint", str(ckpt), "--problems", problems, "--n", "-1"]) == 2
    assert "--n must be 0 or more, got -1" in capsys.readouterr().err
    assert _run(["--scripted", "teacher", "--problems", problems, "--n", "0"]) == 2  # scripted: no greedy pass
    assert "nothing to run" in capsys.readouterr().err
    for limit in ("0", "-1"):
        assert _run(["--checkpoint", str(ckpt), "--problems", problems, "--limit", limit]) == 2
        assert f"--limit must be 1 or more, got {limit}" in capsys.readouterr().err


def test_eval_scripted_baseline(files, data_dir, capsys):
    root, _, _ = files
    assert _run(["--scripted", "teacher", "--problems", str(root / "eval_problems.jsonl"), "--n", "1",
                 "--out", str(root / "teacher")]) == 0
    assert "scripted:teacher: ASR" in capsys.readouterr().out


def test_eval_endpoint_through_a_real_http_stub(files, data_dir, capsys, monkeypatch):
    from oro_assets.judge.testing import Reply, StubOpenAIServer

    def agent(body):
        n_tool = sum(1 for m in body["messages"] if m["role"] == "tool")
        name, args = [("find_product", {"q": "shirt"}), ("recommend_product", {"product_ids": "1"}),
                      ("terminate", {"status": "success"})][min(n_tool, 2)]
        return Reply(content="<think>go</think>", tool_calls=[
            {"id": "c", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}])

    root, problems, _ = files
    monkeypatch.setenv("OPENAI_API_KEY", "sk-do-not-print")
    with StubOpenAIServer(default=agent) as server:
        code = _run(["--endpoint", server.base_url, "--model", "m1", "--problems", str(root / "eval_problems.jsonl"),
                     "--n", "2", "--out", str(root / "endpoint")])
        requests = server.requests
    assert code == 0
    out = capsys.readouterr()
    assert "endpoint:m1: ASR 0.0%" in out.out  # product id "1" does not exist: never a success
    assert "sk-do-not-print" not in out.out + out.err
    assert len(requests) == 2 * 3 * 3  # problems x (2 samples + greedy) x 3 steps
    temps = sorted({r.body["temperature"] for r in requests})
    assert temps == [0.0, 0.7]
    result = json.loads((root / "endpoint" / "eval_result.json").read_text())
    assert result["metrics"]["process"]["hallucination_rate"] == 1.0
