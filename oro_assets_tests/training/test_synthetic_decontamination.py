"""Synthetic teacher problems are decontaminated against the eval side by target, keywords and leak cluster.

The arena generator gives every problem item a unique invented brand and writes near-miss
distractors with the item's brand and noun; a synthetic problem over a distractor would train the
eval item's own search query. The catalogue's ``brand`` field (the generator's truth, not read by
the code under test) says which products belong to an eval item.
"""

from __future__ import annotations

import pytest

from oro_assets.arena.problems import problem_ground_truth_ids


def _eval_side(world):
    by_id = {p["product_id"]: p for p in world.catalogue.products}
    gt = sorted({i for p in world.problems for i in problem_ground_truth_ids(p)})
    brands = {by_id[i]["brand"] for i in gt if by_id.get(i, {}).get("brand")}
    return by_id, gt, brands


def test_no_synthetic_target_shares_an_eval_items_brand_and_the_drops_are_counted(world):
    from oro_assets.training.corpus import synthetic_product_problems

    by_id, gt, brands = _eval_side(world)
    report: dict = {}
    syn = synthetic_product_problems(world.catalogue, 60, 0, gt, report=report)
    assert len(syn) == 60
    targets = [p["reward"]["product_id"] for p in syn]
    assert not set(targets) & set(gt), "an eval ground truth is never a synthetic target"
    leaked = [p["query"] for p in syn if by_id[p["reward"]["product_id"]].get("brand") in brands]
    assert leaked == [], f"synthetic problems over eval items' brand twins: {leaked[:3]}"
    assert report["dropped"] > 0 and report["drawn"] == report["kept"] + report["dropped"] and report["kept"] == 60
    assert report["dropped"] == sum(report["dropped_by"].values())
    assert report["dropped_by"]["query_keywords"] > 0  # the distractors: brand + noun of an eval item


def _catalogue(titles):
    return [{"product_id": str(1000 + i), "title": t, "price": 100.0 + 10 * i} for i, t in enumerate(titles)]


def test_brand_and_noun_of_an_eval_target_drop_its_twin_but_a_shared_common_noun_does_not():
    from oro_assets.training.corpus import synthetic_problem_set

    # twelve brands of seat covers: "seat" and "cover" are common words (in > 8 titles); "zatax" is rare
    background = [f"{b} Seat Cover Basic" for b in ("Alpo", "Bemu", "Cira", "Dovo", "Esku", "Fani", "Gelo", "Hivu",
                                                       "Iwan", "Jopi", "Kelu", "Lomu")]
    catalogue = _catalogue(["Zatax Leather Seat Cover Premium", "Zatax Leather Seat Cover", *background])
    eval_gt, twin = "1000", "1001"
    syn, report = synthetic_problem_set(catalogue, 80, 3, [eval_gt])
    targets = {p["reward"]["product_id"] for p in syn}
    assert eval_gt not in targets and twin not in targets
    assert targets == {p["product_id"] for p in catalogue[2:]}, "other brands' seat covers stay"
    assert report["dropped_by"]["target_product"] > 0 and report["dropped_by"]["query_keywords"] > 0
    # without any eval side nothing is dropped and the twin is a fine target
    clean, clean_report = synthetic_problem_set(catalogue, 80, 3, [])
    assert twin in {p["reward"]["product_id"] for p in clean} and clean_report["dropped"] == 0


def test_a_query_the_leak_clustering_links_to_an_eval_query_is_dropped():
    from oro_assets.training.corpus import synthetic_problem_set

    # every title word is common (in > 8 titles): no keyword coincidence, only the clustering's test can link
    titles = [f"{b} {n} {a}" for b in ("Acme", "Bolt", "Core") for n in ("Kettle", "Lamp", "Mug")
              for a in ("Red", "Blue", "Green", "Black")]
    catalogue = _catalogue(titles)
    first, _ = synthetic_problem_set(catalogue, 1, 0, [])
    query = first[0]["query"]
    reworded = "Please, " + query.upper()  # another wording of the same task
    eval_problem = {"problem_id": "e1", "query": reworded, "category": "Product",
                    "reward": {"product_id": "somewhere-else", "title": ["x"]}}
    syn, report = synthetic_problem_set(catalogue, 1, 0, [], exclude_problems=[eval_problem])
    assert syn[0]["query"] != query
    assert report["dropped_by"]["leak_cluster"] == 1 and report["dropped_examples"][0]["query"] == query


def test_synthetic_ids_are_regenerated_from_the_catalogue_alone(world):
    from oro_assets.training.corpus import resolve_synthetic_problem, synthetic_product_problems

    _, gt, _ = _eval_side(world)
    syn = synthetic_product_problems(world.catalogue, 10, 5, gt)
    # resolution needs no exclusion set: the id names seed, draw and target
    for p in syn:
        assert resolve_synthetic_problem(world.catalogue, p["problem_id"]) == p
    with pytest.raises(ValueError, match="older generator"):
        resolve_synthetic_problem(world.catalogue, "syn_0_3")
    seed, i, pid = syn[0]["problem_id"].split("_")[1:]
    other = next(p["product_id"] for p in world.catalogue.products if p["product_id"] != pid)
    with pytest.raises(ValueError, match="different catalogue"):
        resolve_synthetic_problem(world.catalogue, f"syn_{seed}_{i}_{other}")


def test_synthetic_problems_can_ask_for_the_targets_own_options_which_the_teacher_must_view(world, env):
    """Real Product problems mostly ask for a variant option or attribute that only a viewed product shows; a
    synthetic set that never does teaches recommending from the list alone. With ``option_share`` a share of the
    draws asks for the target's own options (so the target satisfies them, by the arena's scorer), its id says so
    and regenerates, and the scripted teacher solves it by viewing."""
    from oro_assets.arena.policies.agentic import TeacherPolicy
    from oro_assets.arena.scoring import field_checks
    from oro_assets.arena.tools import TOOL_SCHEMAS
    from oro_assets.training.corpus import resolve_synthetic_problem, synthetic_product_problems
    from oro_assets.training.stages import default_scorer, teacher_rows

    _, gt, _ = _eval_side(world)
    plain = synthetic_product_problems(world.catalogue, 40, 2, gt)
    mixed = synthetic_product_problems(world.catalogue, 40, 2, gt, option_share=0.7)
    asking = [p for p in mixed if p["problem_id"].endswith("_o")]
    assert 16 <= len(asking) <= 40 and not any(p["problem_id"].endswith("_o") for p in plain)
    by_id = {p["product_id"]: p for p in world.catalogue.products}
    for p in asking:
        reward = p["reward"]
        asked = [(k, v) for o in reward.get("sku_options") or [] for k, v in o.items()]
        asked += [(k, vs[0]) for a in reward.get("attributes") or [] for k, vs in a.items()]
        assert asked and all(str(v) in p["query"] for _, v in asked), p["query"]
        scores, checked = field_checks(by_id[reward["product_id"]], reward)
        assert {"sku", "attributes"} & set(checked) and all(scores[f] == 1.0 for f in checked), (p["query"], scores)
        assert resolve_synthetic_problem(world.catalogue, p["problem_id"]) == p
    # the plain part of a draw does not depend on the share: same target and price range
    plain_by_draw = {p["problem_id"]: p for p in plain}
    same = [p for p in asking if p["problem_id"][:-2] in plain_by_draw]
    assert same and all(plain_by_draw[p["problem_id"][:-2]]["reward"]["price"] == p["reward"]["price"] for p in same)
    rows, n = teacher_rows(TeacherPolicy({p["problem_id"]: p for p in asking}), asking, env,
                           default_scorer(world.catalogue), TOOL_SCHEMAS)
    viewed = [r for r in rows if any(c["function"]["name"] == "view_product_information"
                                     for m in r["messages"] for c in m.get("tool_calls") or [])]
    assert len(rows) >= 0.8 * n and len(viewed) >= 0.8 * len(rows), (len(rows), len(viewed), n)


def test_a_word_in_no_title_does_not_make_two_queries_coincide():
    from oro_assets.training.corpus import keywords_coincide

    df = {"lali": 1, "car": 40}
    assert keywords_coincide(frozenset({"lali", "car"}), frozenset({"lali", "car", "red"}), df, 3)
    # "24cm" and "size" are in no title: sharing them names no product
    assert not keywords_coincide(frozenset({"zibu", "24cm", "size"}), frozenset({"vono", "24cm", "size"}), df, 3)
