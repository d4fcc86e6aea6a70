from oro_assets.evaluation.checks import check_eval_pool, check_no_training_leak, check_pass_at_k_monotone


def _p(pid, gt, cluster=None):
    p = {"problem_id": pid, "query": f"q {pid}", "category": "Product",
         "reward": {"product_id": gt, "title": ["t"]}}
    if cluster:
        p["cluster_id"] = cluster
    return p


def test_clean_split_has_no_violations():
    evals = [_p("e1", "100", "c1"), _p("e2", "200", "c2")]
    train = [_p("t1", "300"), _p("t2", "400")]
    assert check_no_training_leak(evals, train, {"t1": "c3", "t2": "c4"}) == []
    assert check_eval_pool(evals, ["e1", "e2", "x"]) == []


def test_cluster_gt_and_id_leaks_are_each_reported():
    evals = [_p("e1", "100", "c1"), _p("e2", "200"), _p("e3", "300")]
    train = [_p("t1", "999"), _p("t2", "200"), _p("e3", "555")]
    cluster_map = {"t1": "c1", "e2": "c9"}
    v = check_no_training_leak(evals, train, cluster_map)
    reasons = {(x["problem_id"], x["reason"].split(" ")[0]) for x in v}
    assert reasons == {("e1", "cluster"), ("e2", "ground-truth"), ("e3", "problem")}
    assert next(x for x in v if x["problem_id"] == "e1")["train_problem_id"] == "t1"


def test_manifest_ids_resolve_through_the_pool_and_unresolvable_ids_do_not_pass_silently():
    evals = [_p("e1", "100")]
    pool = {"t1": _p("t1", "100")}
    assert check_no_training_leak(evals, ["t1"], {}, pool)[0]["reason"] == "ground-truth id 100 in training manifest"
    unresolved = check_no_training_leak(evals, ["t7"], {})
    assert len(unresolved) == 1 and "could not be resolved" in unresolved[0]["reason"]


def test_eval_pool_and_monotonicity():
    assert [v["problem_id"] for v in check_eval_pool([_p("e1", "1"), _p("zz", "2")], ["e1"])] == ["zz"]
    assert check_pass_at_k_monotone({"1": 0.3, "2": 0.4, "8": 0.5}) == []
    bad = check_pass_at_k_monotone({"1": 0.3, "4": 0.2, "2": 0.4})
    assert [v["k"] for v in bad] == [4]


# ------------------------------------------------------------------ synthetic teacher problems (syn_*)
_TITLES = ["Zatax Leather Seat Cover Premium", "Zatax Leather Seat Cover"] + [
    f"{b} Seat Cover Basic" for b in ("Alpo", "Bemu", "Cira", "Dovo", "Esku", "Fani", "Gelo", "Hivu", "Iwan", "Jopi")]
_CATALOGUE = [{"product_id": str(1000 + i), "title": t, "price": 100.0 + 10 * i} for i, t in enumerate(_TITLES)]


def _synthetic(target):
    """A synthetic problem id of the generator that targets ``target`` (drawn without any exclusion)."""
    from oro_assets.training.corpus import synthetic_problem_set

    drawn, _ = synthetic_problem_set(_CATALOGUE, 60, 0, [])
    return next(p["problem_id"] for p in drawn if p["reward"]["product_id"] == target)


def test_a_synthetic_manifest_problem_is_resolved_and_its_target_checked():
    evals = [_p("e1", "1003")]  # the eval ground truth is a synthetic training target
    syn = _synthetic("1003")
    v = check_no_training_leak(evals, [syn], {}, {}, catalogue=_CATALOGUE)
    assert [(x["problem_id"], x["reason"], x["train_problem_id"]) for x in v] == [
        ("e1", "ground-truth id 1003 in training manifest", syn)]
    # another target, no shared words: clean
    assert check_no_training_leak(evals, [_synthetic("1005")], {}, {}, catalogue=_CATALOGUE) == []


def test_a_synthetic_problem_over_an_eval_items_brand_twin_is_a_leak():
    evals = [{"problem_id": "e1", "query": "Looking for a zatax leather seat cover under 300 pesos.",
              "category": "Product", "reward": {"product_id": "1000", "title": [_TITLES[0]]}}]
    syn = _synthetic("1001")  # "Zatax Leather Seat Cover": not the ground truth, but its brand and noun
    v = check_no_training_leak(evals, [syn], {}, {}, catalogue=_CATALOGUE)
    assert len(v) == 1 and v[0]["problem_id"] == "e1" and v[0]["train_problem_id"] == syn
    assert "keywords" in v[0]["reason"]


def test_unresolvable_synthetic_manifest_ids_fail_with_the_reason():
    evals = [_p("e1", "100")]
    pool = {"t1": _p("t1", "300")}
    old_style = check_no_training_leak(evals, ["t1", "syn_0_3"], {}, pool, catalogue=_CATALOGUE)
    assert len(old_style) == 1 and "could not be resolved" in old_style[0]["reason"]
    assert "older generator" in old_style[0]["reason"] and old_style[0]["train_problem_id"] == "syn_0_3"
    no_catalogue = check_no_training_leak(evals, ["t1", _synthetic("1003")], {}, pool)
    assert len(no_catalogue) == 1 and "no catalogue given" in no_catalogue[0]["reason"]
    moved = _synthetic("1003").rsplit("_", 1)[0] + "_1004"  # same draw, another target: another catalogue
    assert "different catalogue" in check_no_training_leak(evals, [moved], {}, pool, catalogue=_CATALOGUE)[0]["reason"]
