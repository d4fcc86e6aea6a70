"""HF-style dataset rows, export with a content hash, and production-strict success."""

from __future__ import annotations

import curation_fixtures as F

from oro_assets import jsonio
from oro_assets.curation.clusters import Registry
from oro_assets.curation.datasets import (
    content_hash,
    eval_problem_rows,
    export_dataset,
    kto_rows,
    recorded_success,
    rl_prompt_rows,
    sft_rows,
    strict_success_fn,
    window_partitions,
)
from oro_assets.traces.schema import MESSAGE_KEYS


def _curated(seed: int, pool: str, success: bool | None, line_no: int) -> dict:
    env = F.good(seed)
    if success is None:
        del env["score"]
    else:
        env["score"]["success"] = success
    return {**F.normalized(env, line_no=line_no), "pool": pool, "cluster_id": f"lc_{seed}"}


def _rows():
    return [
        _curated(1, "train", True, 1),
        _curated(2, "train", False, 2),
        _curated(3, "train", None, 3),
        _curated(4, "eval", True, 4),
    ]


def test_sft_and_kto_rows():
    rows = _rows()
    sft = sft_rows(rows)
    assert [r["id"] for r in sft] == [rows[0]["trace_id"]]
    r = sft[0]
    assert set(r) == {"id", "messages", "tools", "source"}
    assert r["source"] == f"{F.PARTITION}:part-00000.jsonl:1"
    assert isinstance(r["tools"], str) and jsonio.loads(r["tools"])
    assert all(set(m) == set(MESSAGE_KEYS) for m in r["messages"])
    for m in r["messages"]:
        for call in m["tool_calls"] or []:
            assert isinstance(call["function"]["arguments"], str)
    kto = kto_rows(rows)
    assert sorted((k["id"], k["label"]) for k in kto) == sorted(
        [(rows[0]["trace_id"], True), (rows[1]["trace_id"], False)]
    )


def test_strict_success_uses_the_arena_scorer():
    row = _curated(1, "train", False, 1)  # recorded failure, but the recommendation is the ground truth
    recommended = next(
        jsonio.loads(c["function"]["arguments"])["product_ids"]
        for m in jsonio.loads(row["messages"])
        for c in m.get("tool_calls") or []
        if c["function"]["name"] == "recommend_product"
    )
    product = {
        "product_id": recommended,
        "title": "acme thing",
        "price": 10.0,
        "shop_id": "s1",
        "service": [],
    }
    problems = {
        row["problem_id"]: {
            "problem_id": row["problem_id"],
            "query": row["query"],
            "reward": {"product_id": recommended, "title": ["acme thing"]},
        }
    }
    success = strict_success_fn(problems, {recommended: product})
    assert recorded_success(row) is False and success(row) is True
    problems[row["problem_id"]]["reward"] = {
        "product_id": "other",
        "title": ["zzz qqq"],
        "price": [{"less than": [None, 5]}],
    }
    assert success(row) is False
    assert strict_success_fn({}, {})(row) is False  # unknown problem: the recorded outcome


def test_rl_prompts_from_teacher_episodes():
    episode = F.normalized(F.openai_row(18))
    key = episode["problem_id"]
    problem = {"problem_id": key, "query": "q", "reward": {"product_id": "1", "title": ["t"]}}
    rows = rl_prompt_rows([episode], {key: problem}, train_keys={key})
    assistants = [m for m in jsonio.loads(episode["messages"]) if m["role"] == "assistant"]
    assert len(rows) == len(assistants)
    first = rows[0]
    assert [m["role"] for m in first["prompt"]] == ["system", "user"]
    assert first["teacher_next"]["tool_calls"][0]["name"] == "find_product"
    assert jsonio.loads(first["reward_spec"]) == {"problem_id": key, "category": "Product",
                                                  "reward": {"product_id": "1", "title": ["t"]},
                                                  "ground_truth_ids": ["1"]}
    assert [r["step"] for r in rows] == list(range(1, len(rows) + 1))
    assert rl_prompt_rows([episode], {key: problem}, train_keys=set()) == []


def test_eval_problems_from_the_registry():
    reg = Registry()
    problems = [
        {
            "problem_id": f"e{i}",
            "query": f"unique gadget number {i} with {i} lights",
            "reward": {"product_id": str(i), "title": ["t"]},
        }
        for i in range(60)
    ]
    reg.assign(problems)
    rows = eval_problem_rows(reg, {p["problem_id"]: p for p in problems})
    eval_ids = sorted(k for k, m in reg.members.items() if m["pool"] == "eval")
    assert [r["problem_id"] for r in rows] == eval_ids and rows
    assert all(r["cluster_id"] == reg.members[r["problem_id"]]["cluster_id"] for r in rows)
    assert {r["pool"] for r in rows} == {"dev", "test"}  # 60 one-problem clusters: both sides get some


def test_export_and_load_with_datasets(tmp_path):
    rows = sft_rows(_rows()) + kto_rows(_rows())[:0]
    info = export_dataset(rows, tmp_path, "sft_dataset")
    assert info["rows"] == 1 and info["sha256"] == content_hash(rows)
    assert info["sha256"] != content_hash([dict(rows[0], id="other")])
    lines = (tmp_path / "sft_dataset.jsonl").read_text().splitlines()
    assert jsonio.loads(lines[0])["id"] == rows[0]["id"]
    from datasets import Dataset

    ds = Dataset.from_parquet(str(tmp_path / "sft_dataset.parquet"))
    assert ds.num_rows == 1
    assert ds[0]["messages"][1]["content"] == rows[0]["messages"][1]["content"]
    assert ds[0]["tools"] == rows[0]["tools"]
    episode = F.normalized(F.openai_row(18))
    key = episode["problem_id"]
    rl = rl_prompt_rows([episode], {key: {"problem_id": key, "reward": {"product_id": "1"}}}, {key})
    info = export_dataset(rl, tmp_path, "rl_prompts")
    ds = Dataset.from_parquet(info["parquet"])
    assert ds.num_rows == len(rl) and isinstance(ds[0]["teacher_next"], str)


def test_eval_problems_of_every_category_export_whole(tmp_path):
    from datasets import Dataset

    shop = {"problem_id": "s1", "query": "two items one shop", "category": "Shop",
            "reward": [{"product_id": "1", "title": ["a"]}, {"product_id": "2", "title": ["b"]}]}
    voucher = {"problem_id": "v1", "query": "items under budget", "category": "Voucher",
               "reward": [{"product_id": "3", "title": ["c"]}],
               "voucher": {"voucher_type": "platform", "threshold": 100, "discount_type": "fixed", "face_value": 10,
                           "budget": 95}}
    product = {"problem_id": "p1", "query": "one item", "category": "Product", "reward": {"product_id": "4"}}
    rows = [shop, product, voucher]  # a list reward first: the schema must not come from row 0 alone
    info = export_dataset(rows, tmp_path, "eval_problems")
    ds = Dataset.from_parquet(info["parquet"])
    assert ds.num_rows == 3 and set(ds.column_names) >= {"reward", "voucher", "category"}
    assert [jsonio.loads(r) for r in ds["reward"]] == [shop["reward"], product["reward"], voucher["reward"]]
    assert jsonio.loads(ds[2]["voucher"]) == voucher["voucher"] and ds[0]["voucher"] is None


def test_window_partitions():
    parts = ["2026-01-01", "2026-01-02", "2026-01-05", "2026-01-07"]
    assert window_partitions(parts, "2026-01-05", 3) == ["2026-01-05"]
    assert window_partitions(parts, "2026-01-05", 5) == ["2026-01-01", "2026-01-02", "2026-01-05"]
