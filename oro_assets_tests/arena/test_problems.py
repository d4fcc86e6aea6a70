"""Importers on the real ORO suites and ShoppingBench test file; the real suites become playable."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import pytest

from oro_assets.arena.env import InProcessEnv
from oro_assets.arena.generator import build_catalogue_for_problems, build_world
from oro_assets.arena.oracle import solve
from oro_assets.arena.problems import (
    EMBEDDED_DATA_DIR,
    ProblemFormatError,
    embedded_problem_files,
    load_problems,
    problem_ground_truth_ids,
    reward_items,
    write_problems_jsonl,
)
from oro_assets.arena.scoring import score_trace

SUITES = EMBEDDED_DATA_DIR / "oro_suites"
SB = EMBEDDED_DATA_DIR / "shoppingbench"


def test_licenses_ship_beside_the_data():
    assert "MIT" in (SUITES / "LICENSE").read_text()
    assert "Apache" in (SB / "LICENSE").read_text()


@pytest.mark.parametrize("version", ["v1", "v2", "v3"])
def test_oro_suites(version):
    probs = load_problems(SUITES / f"problem_suite_{version}.json")
    assert len(probs) == 30
    assert Counter(p["category"] for p in probs) == {"Product": 10, "Shop": 10, "Voucher": 10}
    assert {p["source"] for p in probs} == {f"oro_suite_{version}"}
    assert all("reward_title_embeddings" not in p for p in probs)
    for p in probs:
        assert p["difficulty"] in ("easy", "medium", "hard")
        if p["category"] == "Product":
            assert isinstance(p["reward"], dict) and len(reward_items(p)) == 1
        else:
            assert isinstance(p["reward"], list) and 1 <= len(reward_items(p)) <= 4
        assert ("voucher" in p) == (p["category"] == "Voucher")
        assert all(gid.isdigit() for gid in problem_ground_truth_ids(p))


def test_problem_id_is_hash_of_query_and_reward():
    raw = json.loads((SUITES / "problem_suite_v1.json").read_text())[0]
    canonical = json.dumps({"query": raw["query"], "reward": raw["reward"]}, sort_keys=True,
                           separators=(",", ":"), ensure_ascii=False)
    expected = "p_" + hashlib.sha256(canonical.encode()).hexdigest()[:16]
    assert load_problems(SUITES / "problem_suite_v1.json")[0]["problem_id"] == expected


def test_shoppingbench_file():
    lines = [ln for ln in (SB / "shoppingbench_product_test.jsonl").read_text().splitlines() if ln.strip()]
    probs = load_problems(SB)
    assert len(lines) == 250
    unique = {json.dumps(json.loads(ln), sort_keys=True) for ln in lines}
    assert len(probs) == len(unique)  # exact duplicate rows collapse to one problem id
    assert all(p["category"] == "Product" and p["difficulty"] == "unknown" for p in probs)
    assert {p["source"] for p in probs} == {"shoppingbench_test"}


def test_keep_embeddings_and_bad_input(tmp_path):
    v2 = load_problems(SUITES / "problem_suite_v2.json", keep_embeddings=True)
    assert any("reward_title_embeddings" in p for p in v2)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "x", "reward": {"product_id": "1", "title": ["t"]}}\n{oops\n')
    with pytest.raises(ProblemFormatError, match="bad.jsonl:2"):
        load_problems(bad)
    with pytest.raises(ProblemFormatError, match="reward"):
        (tmp_path / "noreward.jsonl").write_text('{"query": "x"}\n')
        load_problems(tmp_path / "noreward.jsonl")
    with pytest.raises(ProblemFormatError):
        load_problems(tmp_path / "missing.json")


def test_simulator_problems_roundtrip(tmp_path):
    world = build_world(2, n_problems=30, n_products=500)
    write_problems_jsonl(world.problems, tmp_path / "problems.jsonl")
    assert load_problems(tmp_path) == world.problems


def test_real_problems_are_playable():
    problems = load_problems(embedded_problem_files())
    catalogue = build_catalogue_for_problems(problems, seed=4, n_background=1500)
    env = InProcessEnv(catalogue)
    solved = Counter()
    for p in problems:
        assert all(g in catalogue for g in problem_ground_truth_ids(p))
        solved[p["source"].startswith("oro_suite"), score_trace(p, solve(p, env), catalogue).success] += 1
    oro_rate = solved[True, True] / (solved[True, True] + solved[True, False])
    sb_rate = solved[False, True] / (solved[False, True] + solved[False, False])
    assert oro_rate >= 0.95, solved
    assert sb_rate >= 0.95, solved


def test_importer_wrappers():
    from oro_assets.arena.importers import embedded_oro_suites, embedded_shoppingbench

    suites = embedded_oro_suites()
    assert sorted(suites) == ["v1", "v2", "v3"] and all(len(v) == 30 for v in suites.values())
    # the three suites are disjoint
    ids = [p["problem_id"] for v in suites.values() for p in v]
    assert len(set(ids)) == 90
    assert len(embedded_shoppingbench()) == len(load_problems(SB))
