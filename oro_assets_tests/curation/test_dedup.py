"""Exact / near duplicates keep the highest-ranked copy; the ranking score is hand-checked."""

from __future__ import annotations

import curation_fixtures as F
import pytest

from oro_assets import jsonio
from oro_assets.curation.dedup import dedup_and_rank, rank_features, rank_score
from oro_assets.reasons import ReasonCode


def _call(i: int, name: str, args: dict) -> dict:
    return {
        "id": f"call_{i}_0",
        "type": "function",
        "function": {"name": name, "arguments": jsonio.dumps(args)},
    }


def _assistant(i: int, name: str, args: dict, think: str) -> list[dict]:
    return [
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": think,
            "tool_calls": [_call(i, name, args)],
        },
        {"role": "tool", "tool_call_id": f"call_{i}_0", "name": name, "content": "[]"},
    ]


def test_rank_score_hand_computed():
    think = "x" * 400
    messages = [{"role": "user", "content": "q"}]
    messages += _assistant(1, "find_product", {"q": "red shirt"}, think)
    messages += _assistant(2, "find_product", {"q": "red cotton shirt"}, think)  # a reformulation
    messages += _assistant(3, "view_product_information", {"product_ids": "111"}, think)
    messages += _assistant(4, "recommend_product", {"product_ids": "111"}, think)  # verified
    row = {"messages": jsonio.dumps(messages)}
    f = rank_features(row)
    assert f == {
        "mean_think_chars": 400.0,
        "n_tool_calls": 4,
        "reformulations": 1,
        "verification": True,
        "step_shape_regularity": 0.5,
    }
    # 0.25*1 + 0.2*(4/8) + 0.15*(1/2) + 0.25*1 + 0.15*(1-0.5)
    assert rank_score(row) == pytest.approx(0.75)
    # recommending an unviewed product loses the verification term
    messages[-2]["tool_calls"][0]["function"]["arguments"] = jsonio.dumps({"product_ids": "222"})
    assert rank_score({"messages": jsonio.dumps(messages)}) == pytest.approx(0.5)


def test_exact_duplicate_keeps_one_and_names_it():
    env = F.good(1)
    a = F.normalized(env, line_no=1)
    b = F.normalized(F.exact_copy(env), line_no=2)
    assert a["trace_id"] != b["trace_id"]
    res = dedup_and_rank([b, a])
    assert len(res.kept) == 1 and len(res.rejected) == 1
    kept_id = min(a["trace_id"], b["trace_id"])  # equal rank: the smaller trace id wins
    assert res.kept[0]["trace_id"] == kept_id
    assert res.rejected[0]["reason"] == ReasonCode.NEAR_DUPLICATE
    assert res.rejected[0]["detail"] == f"exact duplicate of {kept_id}"
    assert res.stats["exact_duplicates"] == 1


def test_near_duplicate_same_problem_only():
    env = F.good(1)
    a = F.normalized(env, line_no=1)
    near = F.normalized(F.near_copy(env), line_no=2)
    other = F.good(2)  # a different trace of a different problem
    c = F.normalized(other, line_no=3)
    res = dedup_and_rank([a, near, c])
    kept_ids = {r["trace_id"] for r in res.kept}
    assert len(res.kept) == 2 and c["trace_id"] in kept_ids
    assert len(kept_ids & {a["trace_id"], near["trace_id"]}) == 1
    assert len(res.rejected) == 1 and res.rejected[0]["trace_id"] in {a["trace_id"], near["trace_id"]}
    assert res.rejected[0]["detail"].startswith("near duplicate of ")
    # the same near copy under another problem id is not compared with it
    moved = F.near_copy(env)
    moved["problem_id"] = "another-problem"
    for step in moved["dialogue"]:
        step["extra_info"]["problem_id"] = "another-problem"
    res2 = dedup_and_rank([a, F.normalized(moved, line_no=4)])
    assert len(res2.kept) == 2 and res2.rejected == []


def _plain_and_richer_copy():
    """A good envelope, its normalised row, and a near copy whose thinking ranks higher."""
    env = F.good(1)
    a = F.normalized(env, line_no=1)
    richer = F.near_copy(env)
    richer["dialogue"][0]["completion"]["message"]["think"] += (
        " Also compare sizes and shops before choosing."
    )
    return env, a, F.normalized(richer, line_no=2)


def test_highest_ranked_copy_survives():
    _, a, b = _plain_and_richer_copy()
    ra, rb = rank_score(a), rank_score(b)
    assert rb > ra
    res = dedup_and_rank([a, b], near_threshold=0.5)
    assert [r["trace_id"] for r in res.kept] == [b["trace_id"]]
    assert a["trace_id"] in [r["trace_id"] for r in res.rejected]


def test_index_dedupes_across_batches_earlier_copy_wins():
    from oro_assets.curation.dedup import DedupIndex

    env, a, b = _plain_and_richer_copy()
    copy_a = F.normalized(F.exact_copy(env), line_no=3)
    index = DedupIndex(track_new=True)
    first = dedup_and_rank([a], index=index)
    second = dedup_and_rank([b, copy_a], index=index, near_threshold=0.5)
    assert [r["trace_id"] for r in first.kept] == [a["trace_id"]]
    assert second.kept == []  # b outranks a, but a was kept in an earlier batch
    details = sorted(r["detail"] for r in second.rejected)
    assert details[0] == f"exact duplicate of {a['trace_id']}"
    assert details[1].startswith(f"near duplicate of {a['trace_id']}")
    drained = index.drain_new()
    assert [t for _, _, t, _ in drained] == [a["trace_id"]] and index.drain_new() == []
    group, h, tid, sig = drained[0]
    assert index.exact_of(h) == tid and index.near_of(group, sig, 0.99)[0] == tid
    assert index.stats()["traces"] == 1


def _reference_signature(text: str) -> list[int]:
    """The documented MinHash with Python integers: odd crc32 word hashes, 3-shingles, 64
    multiply-add permutations modulo 2^64, top 32 bits of each minimum."""
    import zlib

    from oro_assets.curation import dedup

    mask = (1 << 64) - 1
    words = text.split()[: dedup.MAX_WORDS]
    hv = [zlib.crc32(w.encode()) | 1 for w in words]
    if len(hv) >= 3:
        hv = [(a * 0x9E3779B1 + b * 0x85EBCA77 + c) & mask for a, b, c in zip(hv, hv[1:], hv[2:], strict=False)]
    return [min((int(a) * h + int(b)) & mask for h in hv) >> 32 for a, b in zip(dedup._A, dedup._B, strict=True)]


@pytest.mark.parametrize("text", [
    "one", "one two", "a b c", "find_product {\"q\": \"red shoes\"} [{\"product_id\": \"123\"}] ok",
    " ".join(f"w{i % 37}" for i in range(500)), "ünïcode wörds ünïcode wörds\u00a0split",
])
def test_minhash_signature_matches_the_reference(text):
    from oro_assets.curation.dedup import minhash_signature

    assert minhash_signature(text).tolist() == _reference_signature(text)
