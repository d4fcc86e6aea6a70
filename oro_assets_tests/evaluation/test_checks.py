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
