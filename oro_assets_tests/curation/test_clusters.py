"""Leak clusters: order-invariant matching, real ShoppingBench + ORO suites, the simulator's truth,
a persistent registry that never moves a cluster, and leak conflicts."""

from __future__ import annotations

import argparse
import hashlib
import io
import random
import re
from collections import defaultdict
from contextlib import redirect_stdout

import pytest

from oro_assets import jsonio
from oro_assets.arena.problems import (
    embedded_problem_files,
    load_problem_file,
    load_problems,
    problem_ground_truth_ids,
)
from oro_assets.curation import cli
from oro_assets.curation.clusters import (
    CONFLICT,
    ClusterConfig,
    Registry,
    cluster_problems,
    heldout_side,
    leak_violations,
    near_duplicate_leaks,
    pool_for,
    problem_key,
    query_tokens,
    registry_path,
    text_signature,
    update_registry,
)
from oro_assets.curation.variants import variant_problems

SB = [p for p in embedded_problem_files() if "shoppingbench" in p.name][0]


@pytest.fixture(scope="module")
def real_problems() -> list[dict]:
    # file by file: load_problems would collapse the suite's verbatim copies of ShoppingBench rows
    return [p for f in embedded_problem_files() for p in load_problem_file(f)]


def test_query_tokens_are_order_and_format_invariant():
    a = "Looking for a grey unisex racing t-shirt in extra small, priced from 324 to 623 pesos."
    b = "  SHOW ME a racing T-Shirt, unisex,  grey , in extra small; priced from 324 to 623 PHP "
    assert query_tokens(a) == query_tokens(b)
    assert query_tokens("shirts above 30 pesos") == query_tokens("shirt over 30 PHP") == ["30", "gt", "shirt"]
    assert query_tokens("shirt above 30") != query_tokens("shirt below 30")


def test_real_problems_sharing_a_ground_truth_id_share_a_cluster(real_problems):
    labels = cluster_problems(real_problems)
    clusters_of_pid: dict[str, set[int]] = defaultdict(set)
    for p, lab in zip(real_problems, labels, strict=True):
        for pid in problem_ground_truth_ids(p):
            clusters_of_pid[pid].add(lab)
    assert all(len(c) == 1 for c in clusters_of_pid.values())
    # ORO suite v1 re-uses ShoppingBench test problems, and voucher problems re-use products of
    # product problems: both kinds of sharing exist in the real data and must meet in one cluster
    sources: dict[str, set[str]] = defaultdict(set)
    for p in real_problems:
        for pid in problem_ground_truth_ids(p):
            sources[pid].add(p["source"])
    assert sum(len(s) > 1 for s in sources.values()) >= 30
    assert len(set(labels)) < len(real_problems) - 30
    # and distinct real problems are never merged by query text alone: every multi-member
    # cluster is connected through shared ground-truth ids
    members: dict[int, list[dict]] = defaultdict(list)
    for p, lab in zip(real_problems, labels, strict=True):
        members[lab].append(p)
    for group in members.values():
        if len(group) > 1:
            ids = [set(problem_ground_truth_ids(p)) for p in group]
            assert any(ids[0] & other for other in ids[1:]) or all(
                a & b for a in ids for b in ids if a is not b
            )


def _variant(query: str, rng: random.Random) -> str:
    clauses = [c.strip() for c in re.split(r",| and ", query.rstrip(".?!")) if c.strip()]
    rng.shuffle(clauses)
    text = " , ".join(clauses)
    return ("  " + text.upper() + " ") if rng.random() < 0.5 else text.replace(" ", "   ")


def test_reordered_real_queries_cluster_by_text_alone():
    rows = [jsonio.loads(line) for line in SB.read_text().splitlines()]
    rng = random.Random(7)
    problems, truth = [], []
    for n, row in enumerate(rows):
        problems.append({"query": row["query"]})
        truth.append(n)
        problems.append({"query": _variant(row["query"], rng)})
        truth.append(n)
    labels = cluster_problems(problems)
    by_truth: dict[int, set[int]] = defaultdict(set)
    by_label: dict[int, set[int]] = defaultdict(set)
    for t, lab in zip(truth, labels, strict=True):
        by_truth[t].add(lab)
        by_label[lab].add(t)
    recall = sum(len(v) == 1 for v in by_truth.values()) / len(by_truth)
    false = sum(len(v) > 1 for v in by_label.values())
    assert recall == 1.0
    assert false == 0


def _truth_rows(world) -> list[dict]:
    return [
        {"problem_id": p["problem_id"], "query": p["query"], "group": world.variant_groups[p["problem_id"]]}
        for p in world.problems
    ]


def _recall_false(rows: list[dict], labels: list) -> tuple[float, float]:
    pairs = hit = 0
    by_group: dict[str, list] = defaultdict(list)
    groups_in: dict = defaultdict(set)
    for r, lab in zip(rows, labels, strict=True):
        by_group[r["group"]].append(lab)
        groups_in[lab].add(r["group"])
    for labs in by_group.values():
        for i in range(len(labs)):
            for j in range(i + 1, len(labs)):
                pairs += 1
                hit += labs[i] == labs[j]
    false = sum(1 for r, lab in zip(rows, labels, strict=True) if len(groups_in[lab]) > 1)
    return hit / pairs, false / len(rows)


def test_simulator_truth_variant_groups():
    from oro_assets.arena import generator
    world = generator.build_world(11, n_problems=2000, n_products=2000)
    rows = _truth_rows(world)
    assert len({r["group"] for r in rows}) < len(rows)  # there are variant groups to find
    # query text alone (unknown problems) ...
    recall, false = _recall_false(rows, cluster_problems([{"query": r["query"]} for r in rows]))
    assert recall >= 0.99 and false <= 0.01
    # ... and with rewards (variants share the ground truth): every group complete
    recall, _ = _recall_false(rows, cluster_problems(world.problems))
    assert recall == 1.0


def test_variant_generator_recall_and_false_merges():
    rows = variant_problems(5000, 5, seed=3)
    recall, false = _recall_false(
        [{"group": r["variant_group"]} for r in rows], cluster_problems([{"query": r["query"]} for r in rows])
    )
    assert recall >= 0.99 and false <= 0.01


def _problem(pid: str, query: str, gt: list[str]) -> dict:
    reward = (
        {"product_id": gt[0], "title": ["x"]}
        if len(gt) == 1
        else [{"product_id": g, "title": ["x"]} for g in gt]
    )
    return {"problem_id": pid, "query": query, "reward": reward}


def test_registry_is_stable_across_days_and_reruns(tmp_path):
    day1 = [
        _problem(
            f"d1-{i}", f"blue widget model {i} with {i * 7} gears priced under {100 + i} pesos", [f"9{i:05d}"]
        )
        for i in range(40)
    ]
    day2 = [
        _problem(
            f"d2-{i}", f"Show me a widget, blue, model {i}, {i * 7} gears, below {100 + i} PHP", [f"8{i:05d}"]
        )
        for i in range(40)
    ]
    day2 += [
        _problem(f"d2-new-{i}", f"red gadget series {i} with {i} buttons over {50 + i} pesos", [f"7{i:05d}"])
        for i in range(10)
    ]
    reg1, stats1 = update_registry(day1, tmp_path, first_seen="2026-01-01")
    assert stats1["new"] == 40 and stats1["new_clusters"] == 40
    before = {k: (m["cluster_id"], m["pool"]) for k, m in reg1.members.items()}
    reg2, stats2 = update_registry(day2, tmp_path, first_seen="2026-01-02")
    assert stats2["new"] == 50 and stats2["joined"] == 40 and stats2["new_clusters"] == 10
    for k, v in before.items():  # day 1 never moves
        assert (reg2.members[k]["cluster_id"], reg2.members[k]["pool"]) == v
    for i in range(40):  # the paraphrases joined their day-1 clusters
        assert reg2.members[f"d2-{i}"]["cluster_id"] == reg2.members[f"d1-{i}"]["cluster_id"]
    snapshot = registry_path(tmp_path).read_bytes()
    reg3, stats3 = update_registry(day1 + day2, tmp_path, first_seen="2026-01-03")  # rerun: nothing moves
    assert stats3["new"] == 0
    assert registry_path(tmp_path).read_bytes() == snapshot
    assert not list(registry_path(tmp_path).parent.glob(".*tmp"))  # atomic write leaves no temp file
    # out of order: day 2 first, then day 1 - still one cluster per variant pair, day-2 pools kept
    other = tmp_path / "backfill"
    r2, _ = update_registry(day2, other, first_seen="2026-01-02")
    first = {k: (m["cluster_id"], m["pool"]) for k, m in r2.members.items()}
    r1, _ = update_registry(day1, other, first_seen="2026-01-01")
    for k, v in first.items():
        assert (r1.members[k]["cluster_id"], r1.members[k]["pool"]) == v
    for i in range(40):
        assert r1.members[f"d1-{i}"]["cluster_id"] == r1.members[f"d2-{i}"]["cluster_id"]
    assert leak_violations(r1) == []


def test_pool_assignment_is_a_stable_hash_with_the_configured_fractions():
    ids = [f"lc_{i:06d}" for i in range(4000)]
    pools = [pool_for(c) for c in ids]
    assert pools == [pool_for(c) for c in ids]
    share = {p: pools.count(p) / len(pools) for p in ("train", "eval", "never_touch")}
    # the defaults: 45 / 50 / 5 (50% held out, 60% of it on test: >= 150 test Product problems per embedded world)
    assert (
        abs(share["train"] - 0.45) < 0.03
        and abs(share["eval"] - 0.50) < 0.03
        and abs(share["never_touch"] - 0.05) < 0.02
    )
    skewed = ClusterConfig(train=0.5, eval=0.5, never_touch=0.0)
    assert {pool_for(c, skewed) for c in ids} == {"train", "eval"}
    with pytest.raises(ValueError):
        ClusterConfig(train=0.9, eval=0.2, never_touch=0.0)


def _keys_in_pools() -> tuple[str, str]:
    """Two problem ids whose fresh clusters land in train and eval (found by hashing, not assumed)."""
    from oro_assets.curation.clusters import cluster_id_for

    train = next(f"pa-{i}" for i in range(1000) if pool_for(cluster_id_for(f"pa-{i}")) == "train")
    evl = next(f"pb-{i}" for i in range(1000) if pool_for(cluster_id_for(f"pb-{i}")) == "eval")
    return train, evl


def test_bridging_problem_is_a_leak_conflict(tmp_path):
    ka, kb = _keys_in_pools()
    reg, _ = update_registry(
        [
            _problem(ka, "acme steel kettle under 900 pesos", ["111"]),
            _problem(kb, "zenith bamboo lamp over 50 pesos", ["222"]),
        ],
        tmp_path,
    )
    assert reg.members[ka]["pool"] == "train" and reg.members[kb]["pool"] == "eval"
    bridge = _problem("pc-1", "kettle and lamp bundle from one shop", ["111", "222"])
    reg, stats = update_registry([bridge], tmp_path)
    m = reg.members["pc-1"]
    assert m["status"] == CONFLICT and m["pool"] is None and m["cluster_id"] is None
    assert sorted(jsonio.loads(m["conflict_clusters"])) == sorted(
        [reg.members[ka]["cluster_id"], reg.members[kb]["cluster_id"]]
    )
    assert stats["conflicts"][0]["pools"] == ["eval", "train"]
    # a paraphrase of the conflicted problem inherits the conflict
    reg, stats = update_registry(
        [{"problem_id": "pc-2", "query": "Bundle: lamp and kettle, from one shop"}], tmp_path
    )
    assert reg.members["pc-2"]["status"] == CONFLICT
    assert leak_violations(reg) == [] and near_duplicate_leaks(reg) == []


def test_leak_violation_detector_can_fail():
    reg = Registry()
    reg.assign([_problem("a", "one", ["1"])])
    tampered = dict(
        reg.members["a"], problem_key="b", pool="eval" if reg.members["a"]["pool"] != "eval" else "train"
    )
    reg.members["b"] = tampered
    kinds = {v["kind"] for v in leak_violations(reg)}
    assert "cluster" in kinds


def _run_cli(argv: list[str]) -> tuple[int, list[dict]]:
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    args = parser.parse_args(argv)
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = args.func(args)
    return code, [jsonio.loads(line) for line in buf.getvalue().splitlines()]


def test_clusters_cli_reads_benchmark_files_and_never_writes_the_registry(tmp_path):
    code, lines = _run_cli(["clusters", "--problems", str(SB)])
    assert code == 0 and len(lines) == 250
    assert all(set(line) >= {"query", "problem_id", "cluster_id", "pool"} for line in lines)
    # against a registry: problems already registered report their recorded cluster and pool
    problems = load_problems(SB)
    reg, _ = update_registry(problems[:100], tmp_path)
    before = registry_path(tmp_path).read_bytes()
    code, lines = _run_cli(["clusters", "--problems", str(SB), "--registry", str(tmp_path)])
    assert code == 0
    by_id = {line["problem_id"]: line for line in lines}
    for p in problems[:100]:
        m = reg.members[problem_key(p)]
        assert (by_id[p["problem_id"]]["cluster_id"], by_id[p["problem_id"]]["pool"]) == (
            m["cluster_id"],
            m["pool"],
        )
    assert registry_path(tmp_path).read_bytes() == before
    code, _ = _run_cli(["clusters", "--problems", str(tmp_path / "missing.jsonl")])
    assert code == 2


def test_queries_without_content_tokens_do_not_merge():
    reg = Registry()
    reg.assign([{"query": "Show me some products please"}, {"query": "Can you help me find something?"}])
    assert len({m["cluster_id"] for m in reg.members.values()}) == 2


# ---------------------------------------------------------------- order-independent text clusters

_NOUNS = ["kettle", "soundbar", "lamp", "backpack", "blender", "tripod"]
_COLOURS = ["blue", "green", "black", "white"]


def _text_tasks() -> list[tuple[str, str, str, int]]:
    """60 tasks, each with its own invented brand word (three consonant-vowel syllables)."""
    rng = random.Random(7)
    brands: list[str] = []
    while len(brands) < 60:
        word = "".join(rng.choice("bdfkmnprstvz") + rng.choice("aeiou") for _ in range(3))
        if word not in brands:
            brands.append(word)
    return [(b, rng.choice(_NOUNS), rng.choice(_COLOURS), rng.randint(100, 9999)) for b in brands]


def _text_variant(task: tuple[str, str, str, int], kind: str, rng: random.Random) -> dict:
    brand, noun, colour, price = task
    query = {
        "a": f"Looking for a {brand} {noun} in color family {colour} priced under {price} pesos.",
        "b": f"Show me a {brand} {noun} in {colour} color, cheaper than {price} PHP",
        "c": f"LOOKING FOR A {brand.upper()} {noun.upper()}   IN COLOR FAMILY {colour.upper()} UNDER {price} PHP!",
    }[kind]
    # ids unrelated to the text, like the firehose's uuids: the smallest key says nothing of the task
    return {"problem_id": f"{rng.getrandbits(64):016x}", "query": query}


def _text_days() -> tuple[list[dict], list[dict], list[dict]]:
    tasks, rng = _text_tasks(), random.Random(11)
    day1 = [_text_variant(t, "a", rng) for t in tasks[:40]]
    day2 = [_text_variant(t, "b", rng) for t in tasks[20:]]
    day3 = [_text_variant(t, "c", rng) for t in tasks]
    return day1, day2, day3


def _backfill(days: list[list[dict]], state) -> dict[str, tuple[str, str, str]]:
    for n, day in enumerate(days):
        update_registry(day, state, first_seen=f"day-{n}")
    reg = Registry.load(state)
    return {k: (m["cluster_id"], m["pool"], m["status"]) for k, m in reg.members.items()}


def test_text_only_clusters_get_the_same_ids_and_pools_in_any_backfill_order(tmp_path):
    d1, d2, d3 = _text_days()
    in_order = _backfill([d1, d2, d3], tmp_path / "a")
    assert len(in_order) == 40 + 40 + 60
    assert all(status == "assigned" for _, _, status in in_order.values())
    for n, order in enumerate([[d3, d2, d1], [d2, d1, d3], [d2, d3, d1]]):
        assert _backfill(order, tmp_path / f"b{n}") == in_order
    # one cluster per task, and its id and pool come from the task's text, not from a member key
    keys_by_task: dict[tuple, set[str]] = defaultdict(set)
    for day, tasks in ((d1, _text_tasks()[:40]), (d2, _text_tasks()[20:]), (d3, _text_tasks())):
        for p, task in zip(day, tasks, strict=True):
            keys_by_task[task].add(problem_key(p))
    for (brand, noun, colour, price), keys in keys_by_task.items():
        signature = " ".join(sorted([brand, noun, colour, "lt", str(price)]))
        cid = "lc_" + hashlib.sha256(f"text:{signature}".encode()).hexdigest()[:16]
        assert {in_order[k][:2] for k in keys} == {(cid, pool_for(cid))}
    assert len({p for _, p, _ in in_order.values()}) >= 2  # the check above can tell pools apart


def test_text_signature_drops_scaffolding_and_keeps_identity():
    a = query_tokens("Looking for a fezade mini soundbar in color family blue and priced under 5780 PHP.")
    b = query_tokens("Show me a good quality fezade mini soundbar, blue, that ships free, below 5780 pesos")
    assert text_signature(a) == text_signature(b) == "5780 blue fezade lt mini soundbar"
    assert text_signature(query_tokens("fezade mini soundbar over 5780")) == "5780 fezade gt mini soundbar"
    assert text_signature(query_tokens("Show me something nice please")) == ""


def test_unlinked_clusters_with_one_signature_get_their_own_ids_and_share_the_pool(tmp_path):
    plain = {"problem_id": "p1", "query": "zatax kettle 561"}
    wordy = {
        "problem_id": "p2",
        "query": "zatax kettle 561 color family size volume weight official free shipping",
    }
    reg, stats = update_registry([plain, wordy], tmp_path)
    assert stats["new_clusters"] == 2
    base = "lc_" + hashlib.sha256(b"text:561 kettle zatax").hexdigest()[:16]
    ids = {reg.members[k]["cluster_id"] for k in ("p1", "p2")}
    assert len(ids) == 2 and base in ids
    assert reg.members["p1"]["pool"] == reg.members["p2"]["pool"] == pool_for(base)
    # a third unlinked one on a later day: a fresh id again, the same pool
    later = {
        "problem_id": "p3",
        "query": "zatax kettle 561 variation model compatibility text deal sale flash",
    }
    reg, _ = update_registry([later], tmp_path)
    assert reg.members["p3"]["cluster_id"] not in ids and reg.members["p3"]["pool"] == pool_for(base)


def test_rewarded_clusters_keep_key_ids_and_old_registries_keep_their_clusters(tmp_path):
    reg = Registry()
    reg.assign([_problem("k-1", "acme steel kettle under 900 pesos", ["111"])])
    key_id = "lc_" + hashlib.sha256(b"k-1").hexdigest()[:16]
    assert reg.members["k-1"]["cluster_id"] == key_id and reg.members["k-1"]["pool"] == pool_for(key_id)
    # a text-only cluster as the key-based scheme registered it before text signatures existed
    old_id = "lc_" + hashlib.sha256(b"old-1").hexdigest()[:16]
    old_pool = "eval" if pool_for(old_id) != "eval" else "train"  # differs from what either hash gives
    reg.members["old-1"] = {
        "problem_key": "old-1",
        "problem_id": "old-1",
        "query": "Looking for a zatax seat cover priced under 561 pesos",
        "tokens": jsonio.dumps(query_tokens("Looking for a zatax seat cover priced under 561 pesos")),
        "product_ids": "[]",
        "cluster_id": old_id,
        "pool": old_pool,
        "status": "assigned",
        "conflict_clusters": "[]",
        "first_seen": "2025-01-01",
    }
    reg.save(tmp_path)
    reg, stats = update_registry(
        [{"problem_id": "new-1", "query": "Show me a ZATAX seat cover below 561 PHP"}], tmp_path
    )
    assert stats["joined"] == 1 and stats["new_clusters"] == 0
    assert (reg.members["new-1"]["cluster_id"], reg.members["new-1"]["pool"]) == (old_id, old_pool)
    assert (reg.members["old-1"]["cluster_id"], reg.members["old-1"]["pool"]) == (old_id, old_pool)


def test_the_leak_guard_finds_every_near_duplicate_that_lsh_can_miss():
    import random

    from oro_assets.curation.clusters import (
        ClusterConfig,
        _near,
        exact_similar_pairs,
        query_tokens,
        similar_pairs,
    )

    rng = random.Random(0)

    def word() -> str:
        return "".join(rng.choice("bcdfghjklmnprstvz") + rng.choice("aeiou") for _ in range(3))

    # common words in > 50 queries are left out of the LSH sketches, so pairs that share them but
    # differ in one rare word have sketch Jaccard 0.6 for a true Jaccard of 0.78
    common = ["waterproof", "wireless", "portable", "speaker"]
    queries = [" ".join(common + [word() for _ in range(4)]) for _ in range(300)]
    pairs = []
    for _ in range(200):
        shared = [word() for _ in range(3)]
        pairs.append((len(queries), len(queries) + 1))
        queries += [" ".join(common + shared + [word()]), " ".join(common + shared + [word()])]
    sets = [frozenset(query_tokens(q)) for q in queries]
    cfg = ClusterConfig()
    df: dict[str, int] = {}
    for s in set(sets):
        for tok in s:
            df[tok] = df.get(tok, 0) + 1
    brute = {(i, j) for i in range(len(sets)) for j in range(len(sets)) if i != j and _near(sets[i], sets[j], df, cfg)}
    exact = set(exact_similar_pairs(sets, range(len(sets)), range(len(sets)), cfg))
    assert exact == brute and set(pairs) <= exact
    lsh = {tuple(sorted(p)) for p in similar_pairs(sets, range(len(sets)), cfg)}
    assert len(set(pairs) - lsh) > 0  # the case the guard exists for: LSH missed some of them


# --- the one held-out rule: Registry.problems_in, and the dev / test split of the held-out clusters ---------------


def _variant_problems(n_tasks: int, prefix: str = "t") -> list[dict]:
    """``n_tasks`` tasks, each with two variants sharing a ground-truth id (so each task is one cluster)."""
    out = []
    for i in range(n_tasks):
        for v, phrasing in enumerate(("find a {w} lamp number {i}", "looking for {w} lamp {i} please")):
            out.append({"problem_id": f"{prefix}{i}-{v}", "query": phrasing.format(w=f"zorb{i}x", i=i),
                        "reward": {"product_id": f"{prefix}-gt-{i}", "title": ["lamp"]}})
    return out


def test_problems_in_is_the_one_held_out_rule_with_whole_clusters_on_one_side():
    registry = Registry()
    registry.assign(_variant_problems(150))
    train, dev, test = (set(registry.problems_in(p)) for p in ("train", "dev", "test"))
    never = set(registry.problems_in("never_touch"))
    heldout = set(registry.problems_in("heldout"))
    assert dev and test and train
    assert heldout == dev | test and not dev & test
    assert not heldout & train and not heldout & never and not train & never
    eval_keys = {k for k, m in registry.members.items() if m["pool"] == "eval"}
    assert heldout == eval_keys  # the held-out sides split the eval clusters, nothing else
    # a task's two variants are one leak cluster: always on the same side
    for i in range(150):
        sides = {registry.pool_of(f"t{i}-{v}") for v in (0, 1)}
        assert len(sides) == 1, (i, sides)
    with pytest.raises(ValueError, match="unknown pool 'eval'; accepted: train, dev, test, heldout, never_touch"):
        registry.problems_in("eval")


def test_the_dev_test_side_is_stable_as_the_registry_grows_and_a_conflict_has_no_pool(tmp_path):
    registry = Registry()
    registry.assign(_variant_problems(80))
    registry.save(tmp_path)
    sides = {k: registry.pool_of(k) for k in registry.members}
    grown = Registry.load(tmp_path)
    grown.assign(_variant_problems(80, prefix="later"))  # new tasks
    grown.assign([{"problem_id": "t3-extra", "query": "zorb3x lamp number 3 find a", "reward": None}])  # a variant
    assert {k: grown.pool_of(k) for k in sides} == sides
    assert grown.pool_of("t3-extra") == sides["t3-0"]  # a new variant joins its cluster's side
    grown.members["t5-0"] = {**grown.members["t5-0"], "status": CONFLICT, "pool": None}
    assert grown.pool_of("t5-0") is None and "t5-0" not in grown.problems_in("heldout") + grown.problems_in("train")
    assert grown.pool_of("never-registered") is None


def test_the_test_share_of_the_held_out_clusters():
    ids = [f"lc_{i:06d}" for i in range(4000)]
    sides = [heldout_side(c) for c in ids]
    assert abs(sides.count("test") / len(sides) - 0.60) < 0.03  # the default: 60% of the held-out on test
    assert {heldout_side(c, ClusterConfig(test=0.0)) for c in ids} == {"dev"}
    with pytest.raises(ValueError, match="test share"):
        ClusterConfig(test=1.5)
