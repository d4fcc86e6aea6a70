"""Training stages on the tiny profile with test-sized settings: masks, checkpoints, MLflow, checks, chain."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from oro_assets.training import checkpoints as ck
from oro_assets.training.checks import (
    check_loss,
    check_manifest_disjoint,
    check_reload_tool_call,
    check_weights_changed,
)
from oro_assets.training.profiles import with_overrides
from oro_assets.training.stages import (
    build_sft_trainer_for_inspection,
    run_dr_grpo,
    run_kto,
    run_rejection_sft,
    run_sft,
    run_teacher_sft,
)
from oro_assets.training.tracking import REGISTERED_MODEL, Tracking

REPO = Path(__file__).resolve().parents[2]


def test_assistant_only_mask(small_profile, base_ckpt, teacher_traj, tmp_path):
    trainer = build_sft_trainer_for_inspection(small_profile, teacher_traj[:1], base_ckpt, tmp_path)
    tok = trainer.processing_class
    ex = trainer.train_dataset[0]
    ids = ex["input_ids"]
    mask = [int(label != -100) for label in ex["labels"]]  # TRL folds assistant_masks into labels
    assert len(ids) == len(mask) and 0 < sum(mask) < len(mask)
    assert all(label in (-100, i) for label, i in zip(ex["labels"], ids, strict=True))
    trained = tok.decode([i for i, m in zip(ids, mask, strict=True) if m])
    ignored = tok.decode([i for i, m in zip(ids, mask, strict=True) if not m])
    msgs = teacher_traj[0]["messages"]
    query = msgs[1]["content"].lower()
    first_args = json.loads(msgs[2]["tool_calls"][0]["function"]["arguments"])
    # system, user and tool turns are masked out ...
    assert query[:30] in ignored and query[:30] not in trained
    assert "<|im_start|>system" in ignored and "<tool_response>" in ignored and "<tool_response>" not in trained
    # ... assistant turns (thinking, calls, end of turn) are trained
    assert '"name": "find_product"' in trained and first_args["q"].lower() in trained
    assert trained.count("<tool_call>") == sum(len(m["tool_calls"] or []) for m in msgs if m["role"] == "assistant")
    assert trained.count("<|im_end|>") == sum(1 for m in msgs if m["role"] == "assistant")
    assert "<think>" in trained


def test_sft_checkpoint_layout_mlflow_and_reuse(small_profile, base_ckpt, teacher_traj, tmp_path):
    tracking = Tracking(f"sqlite:///{tmp_path / 'mlflow.db'}", str(tmp_path / "artifacts"))
    rows = teacher_traj[:6]
    logs: list[str] = []
    res = run_sft(small_profile, rows, base_ckpt, tmp_path / "ckpts", tracking, log=logs.append)
    path = res.path
    assert path == tmp_path / "ckpts" / "sft" / res.version
    for name in ("config.json", "metrics.json", "manifest.jsonl", "manifest_problems.json", "mlflow_run.json",
                 "model/config.json", "model/tokenizer.json"):
        assert (path / name).exists(), name
    assert ck.read_manifest(path) == [r["id"] for r in rows]
    assert set(ck.read_manifest_problems(path)) == {r["problem_id"] for r in rows}
    metrics = json.loads((path / "metrics.json").read_text())
    assert [h["step"] for h in metrics["history"]] == [1, 2, 3, 4]
    assert metrics["tokens"] > 0 and metrics["wall_time_s"] > 0 and metrics["final_loss"] == metrics["history"][-1]["loss"]
    assert any(line.startswith("step=1 loss=") for line in logs)
    assert json.loads((path / "config.json").read_text())["stage_config"]["train"]["max_steps"] == 4

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking.uri)
    run = client.get_run(res.mlflow_run["run_id"])
    assert run.data.tags["stage"] == "sft" and run.data.params["stage"] == "sft"
    assert len(client.get_metric_history(run.info.run_id, "loss")) == 4
    versions = client.search_model_versions(f"name='{REGISTERED_MODEL}'")
    assert [v.tags["stage"] for v in versions] == ["sft"]
    arts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"manifest.jsonl", "config.json"} <= arts

    again = run_sft(small_profile, rows, base_ckpt, tmp_path / "ckpts", tracking)
    assert again.reused and again.version == res.version
    other = run_sft(with_overrides(small_profile, "sft", learning_rate=1e-3), rows, base_ckpt, tmp_path / "ckpts")
    assert other.version != res.version and not other.reused


def test_checks_on_a_memorised_checkpoint(small_profile, base_ckpt, tmp_path):
    from oro_assets.training.checks import arena_probe_messages

    msgs = arena_probe_messages() + [{"role": "assistant", "content": "", "reasoning_content": "Search.", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "find_product",
                                                      "arguments": '{"q": "red cotton shirt", "price": "100-300"}'}}]}]
    rows = [{"id": f"m{i}", "messages": msgs, "tools": "[]", "problem_id": "probe_problem"} for i in range(8)]
    p = with_overrides(small_profile, "sft", max_steps=40, learning_rate=1e-2, per_device_train_batch_size=4)
    res = run_sft(p, rows, base_ckpt, tmp_path)
    loss = check_loss(res.path)
    assert loss.passed, loss.description
    call = check_reload_tool_call(res.path)
    assert call.passed, call.metadata
    assert call.metadata["tool_calls"] == ["find_product"]
    assert check_weights_changed(res.path).passed and res.metrics["weights_changed"] is True
    assert check_manifest_disjoint(res.path, ["other"]).passed
    bad = check_manifest_disjoint(res.path, ["probe_problem"])
    assert not bad.passed and bad.metadata["overlap_problems"] == ["probe_problem"]
    nothing = check_manifest_disjoint(res.path, [])  # no eval pool to check against: a blocking check must fail
    assert not nothing.passed and "no eval problem ids" in nothing.description
    # the untrained base model cannot produce a call
    assert not check_reload_tool_call(base_ckpt, max_new_tokens=16).passed


def test_a_stage_that_leaves_its_weights_as_they_were_fails_the_weights_check(small_profile, base_ckpt, tmp_path):
    from oro_assets import jsonio
    from oro_assets.training.checks import arena_probe_messages, check_weights_changed

    rows = [{"id": f"z{i}", "messages": arena_probe_messages() + [{"role": "assistant", "content": "Done."}],
             "tools": "[]", "problem_id": "probe_problem"} for i in range(4)]
    frozen = run_sft(with_overrides(small_profile, "sft", max_steps=3, learning_rate=0.0), rows, base_ckpt, tmp_path)
    assert frozen.metrics["weights_changed"] is False
    outcome = check_weights_changed(frozen.path)
    assert not outcome.passed and "no-op" in outcome.description
    metrics = jsonio.loads_lenient((frozen.path / "metrics.json").read_text())
    metrics.pop("weights_changed")
    (frozen.path / "metrics.json").write_text(jsonio.dumps(metrics))
    unrecorded = check_weights_changed(frozen.path)  # nothing to check: the check fails
    assert not unrecorded.passed and "does not record" in unrecorded.description


@pytest.mark.slow
def test_stage_chain(small_profile, base_ckpt, teacher_traj, world, env, product_problems, tmp_path):
    out = tmp_path / "ckpts"
    sft = run_sft(small_profile, teacher_traj[:6], base_ckpt, out)
    rej = run_rejection_sft(small_profile, teacher_traj[:6], product_problems[:3], env, sft.path, out)
    assert rej.metrics["rollouts"] == 3 * 2 and rej.n_examples >= 1
    from oro_assets.arena.problems import problem_ground_truth_ids
    from oro_assets.training.corpus import synthetic_product_problems

    excluded = {i for p in product_problems for i in problem_ground_truth_ids(p)}
    product_only = with_overrides(small_profile, "teacher_sft", categories=("Product",), copy_drills=3, word_swaps=1)
    shop = [p for p in world.problems if p["category"] == "Shop"][:2]
    tea = run_teacher_sft(product_only, shop + product_problems, env, rej.path, out,
                          exclude_product_ids=sorted(excluded))
    assert tea.metrics["teacher_successes"] >= 1
    manifest_problems = set(ck.read_manifest_problems(tea.path))
    assert not manifest_problems & {p["problem_id"] for p in shop}, "the curriculum keeps Product problems only"
    manifest_ids = ck.read_manifest(tea.path)
    assert sum(1 for i in manifest_ids if str(i).startswith("drill_")) == 3, "mixed copy drills are trained on"
    swapped = [i for i in manifest_ids if "~swap" in str(i)]
    assert len(swapped) == tea.metrics["word_swap_rows"] == tea.metrics["teacher_successes"], \
        "each teacher row that searched the request's words has its word-swap variant in the manifest"
    synthetic = {p for p in manifest_problems if p.startswith("syn_")}
    assert manifest_problems - synthetic <= {p["problem_id"] for p in product_problems} and len(synthetic) >= 1
    # synthetic problems never target an excluded (eval) ground truth
    syn = synthetic_product_problems(world.catalogue, 4, 0, excluded)
    assert not {p["reward"]["product_id"] for p in syn} & excluded
    kto_rows = [dict(r, label=True) for r in teacher_traj[:3]]
    broken = []
    for r in teacher_traj[3:6]:
        msgs = [dict(m) for m in r["messages"]]
        for m in msgs:
            if m["role"] == "assistant" and m["tool_calls"] and m["tool_calls"][0]["function"]["name"] == "recommend_product":
                m["tool_calls"] = [{"id": "x", "type": "function",
                                    "function": {"name": "recommend_product", "arguments": '{"product_ids": "0"}'}}]
        broken.append(dict(r, id=r["id"] + "_bad", messages=msgs, label=False))
    kto = run_kto(small_profile, kto_rows + broken, tea.path, out, train_problems=product_problems, env=env,
                  catalogue=world.catalogue)
    assert kto.metrics["desirable"] > 0 and kto.metrics["undesirable"] > 0
    assert kto.metrics["on_policy_rollouts"] == 2 * 2, "the parent rolled out k = 2 on 2 train problems"
    # the tiny profile's Dr. GRPO: whole episodes of train problems (reward_level episode)
    assert small_profile.dr_grpo.reward_level == "episode"
    grpo = run_dr_grpo(small_profile, None, kto.path, out, train_problems=product_problems[:3], env=env,
                       catalogue=world.catalogue)
    gm = grpo.metrics  # 1 step x 4 episodes in groups of 2 (conftest's small profile)
    assert gm["groups"] == 2 and len(gm["reward_by_step"]) == 1 and gm["episodes"] == 4
    assert gm["groups_with_reward_variance_share"] == gm["groups_with_reward_variance"] / 2
    # a group without reward variance has zero advantage: the weights move exactly when some group varied
    assert grpo.learned_nothing == (gm["groups_with_reward_variance"] == 0)
    assert gm["weights_changed"] == (gm["groups_with_reward_variance"] > 0)
    # lineage: the GRPO checkpoint's ancestry reaches back to SFT
    examples, problems = ck.lineage_manifest(grpo.path)
    assert set(ck.read_manifest(sft.path)) <= set(examples)
    for res in (sft, rej, tea, kto, grpo):
        assert ck.read_meta(res.path)["stage"] == res.stage


def test_pipes_entry_without_pipes_rejects_bad_input(tmp_path, base_ckpt):
    params = {"stage": "sft", "profile": "tiny", "parent": str(base_ckpt), "out_root": str(tmp_path / "ck"),
              "sft_rows": str(tmp_path / "missing.jsonl")}
    bad = subprocess.run([sys.executable, "-m", "oro_assets.training.pipes_entry", "--params", json.dumps(params)],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert bad.returncode != 0 and "does not exist" in bad.stderr
    assert not (tmp_path / "ck").exists() or not any((tmp_path / "ck").rglob("metrics.json"))


@pytest.mark.slow
def test_pipes_entry_under_dagster_pipes(tmp_path, teacher_traj, base_ckpt):
    import dagster as dg

    data = tmp_path / "sft.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in teacher_traj[:4]) + "\n")
    extras = {"stage": "sft", "profile": "tiny", "parent": str(base_ckpt), "out_root": str(tmp_path / "ck"),
              "sft_rows": str(data), "overrides": {"max_steps": 2, "per_device_train_batch_size": 2,
                                                   "max_length": 512, "word_swaps": 0}}

    def _body(context, pipes):
        return pipes.run(context=context, command=[sys.executable, "-m", "oro_assets.training.pipes_entry"],
                         extras=extras, cwd=str(REPO)).get_materialize_result()

    # annotations must be real objects (this module uses postponed annotations)
    _body.__annotations__ = {"context": dg.AssetExecutionContext, "pipes": dg.PipesSubprocessClient}
    sft_checkpoint = dg.asset(name="sft_checkpoint")(_body)

    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([sft_checkpoint], resources={"pipes": dg.PipesSubprocessClient()}, instance=instance)
    assert result.success
    mats = result.asset_materializations_for_node("sft_checkpoint")
    md = mats[0].metadata
    assert md["stage"].value == "sft" and md["n_examples"].value == 4
    assert Path(md["path"].value).is_dir()
    summary = json.loads((Path(md["path"].value) / "metrics.json").read_text())
    assert [h["step"] for h in summary["history"]] == [1, 2]
    messages = [rec.user_message for rec in instance.all_logs(result.run_id)]
    assert any("step=2 loss=" in m for m in messages)  # progress streamed through pipes.log


def test_teacher_sft_upsamples_shop_episodes_beside_the_one_product_drills(small_profile, base_ckpt, world, env,
                                                                          tmp_path):
    """Each Shop episode the teacher solves is trained shop_upsample times, Voucher voucher_upsample times, Product
    once; a copy count below 1 is refused when the config is built, naming the field."""
    profile = with_overrides(small_profile, "teacher_sft", shop_upsample=4, voucher_upsample=2, categories=None,
                             synthetic_problems=0, option_drills=0, copy_drills=0, word_swaps=0, max_problems=None)
    problems = [
        *[p for p in world.problems if p["category"] == "Shop"][:3],
        *[p for p in world.problems if p["category"] == "Voucher"][:2],
        *[p for p in world.problems if p["category"] == "Product"][:2]]
    res = run_teacher_sft(profile, problems, env, base_ckpt, tmp_path, catalogue=world.catalogue)
    solved = res.metrics["teacher_rows_by_category"]
    assert solved.get("Shop", 0) >= 1, "the scripted teacher solves some Shop problems"
    trained = res.metrics["rows_by_category"]
    assert trained.get("Shop") == 4 * solved["Shop"]
    assert trained.get("Voucher", 0) == 2 * solved.get("Voucher", 0)
    assert trained.get("Product", 0) == solved.get("Product", 0)
    with pytest.raises(ValueError, match="teacher_sft.shop_upsample"):
        with_overrides(small_profile, "teacher_sft", shop_upsample=0)


def test_rejection_sft_rolls_out_on_its_categories_and_mixes_in_the_rows_sft_trains_on(
        small_profile, base_ckpt, world, env, teacher_traj, tmp_path):
    """Rejection re-SFT rolls out on its categories only (here Product), and mixes in corpus rows of SFT's own shapes
    (a Shop row in the corpus is never mixed in), so re-SFT does not undo what SFT learnt on its rows."""
    import dataclasses
    import json

    from oro_assets.training.profiles import get_profile, with_overrides
    from oro_assets.training.stages import run_rejection_sft

    tiny = get_profile("tiny").rejection_sft  # the paper's sampling, over every category (issue 30)
    assert (tiny.k, tiny.temperature, tiny.top_p, tiny.categories) == (8, 0.9, 0.95, None)
    profile = with_overrides(dataclasses.replace(small_profile, sft=dataclasses.replace(
        small_profile.sft, row_shapes=("Product",), word_swaps=2)), "rejection_sft", max_problems=None,
        categories=("Product",))
    shop = [p for p in world.problems if p["category"] == "Shop"][:2]
    products = [p for p in world.problems if p["category"] == "Product"][:2]
    shop_row = {"id": "shop_row", "problem_id": shop[0]["problem_id"], "tools": "[]", "messages": [
        {"role": "user", "content": shop[0]["query"]},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "recommend_product", "arguments": json.dumps({"product_ids": "1,2"})}}]}]}
    res = run_rejection_sft(profile, [shop_row, *teacher_traj[:3]], shop + products, env, base_ckpt, tmp_path,
                            catalogue=world.catalogue)
    assert res.metrics["problems"] == 2 and res.metrics["rollouts"] == 2 * profile.rejection_sft.k
    kept_counts = {k: v for k, v in res.metrics.items() if k.startswith("rollouts_kept_")}
    assert set(kept_counts) <= {"rollouts_kept_Product"}, "only Product problems were rolled out"
    assert sum(kept_counts.values()) == res.metrics["rollouts_kept"]
    from oro_assets.training.checkpoints import read_manifest

    trained = set(read_manifest(res.path))
    assert "shop_row" not in trained and trained & {r["id"] for r in teacher_traj[:3]}
    # SFT's word-swap variants of those rows come with them (without them re-SFT undid SFT's brand reading)
    variants = {i for i in trained if "~swap" in i}
    assert variants and {i.split("~swap")[0] for i in variants} <= {r["id"] for r in teacher_traj[:3]}


def test_rejection_sft_keeps_only_the_successes_of_problems_at_or_under_max_solve_rate(
        small_profile, base_ckpt, world, env, teacher_traj, tmp_path):
    """A problem every rollout solves is left out at max_solve_rate 0.5; one solved by half its rollouts is kept."""
    from oro_assets.training.checkpoints import read_manifest
    from oro_assets.training.profiles import with_overrides
    from oro_assets.training.stages import run_rejection_sft

    profile = with_overrides(small_profile, "rejection_sft", max_problems=None, k=2, max_solve_rate=0.5)
    easy, hard = [p for p in world.problems if p["category"] == "Product"][:2]
    calls: dict[str, int] = {}

    def scorer(problem: dict, episode) -> bool:  # easy: every rollout; hard: its first of two
        pid = str(problem["problem_id"])
        calls[pid] = calls.get(pid, 0) + 1
        return pid == str(easy["problem_id"]) or calls[pid] == 1

    res = run_rejection_sft(profile, teacher_traj[:3], [easy, hard], env, base_ckpt, tmp_path, scorer=scorer,
                            catalogue=world.catalogue)
    assert res.metrics["rollouts_succeeded"] == 3 and res.metrics["problems_solved"] == 2
    assert res.metrics["problems_above_max_solve_rate"] == 1 and res.metrics["rollouts_kept"] == 1
    rollout_rows = [i for i in read_manifest(res.path) if i.startswith("rejection_")]
    assert rollout_rows and all(f"_{hard['problem_id']}_" in i for i in rollout_rows)
    with pytest.raises(ValueError, match="rejection_sft.max_solve_rate"):
        with_overrides(small_profile, "rejection_sft", max_solve_rate=0.0)


def test_the_scaffold_arm_trains_the_sft_recipe_without_a_curated_row(small_profile, base_ckpt, teacher_traj, world,
                                                                       tmp_path):
    from oro_assets.training.data import DatasetError

    profile = with_overrides(small_profile, "sft", copy_drills=8, mixed_drills=6, max_steps=2)
    rows = teacher_traj[:6]
    out = tmp_path / "ckpts"
    sft = run_sft(profile, rows, base_ckpt, out, catalogue=world.catalogue)
    scaffold = run_sft(profile, rows, base_ckpt, out, catalogue=world.catalogue, curated=False, stage="scaffold")
    assert scaffold.path.parent == out / "scaffold" and sft.path.parent == out / "sft"
    trained = ck.read_manifest(scaffold.path)
    assert len(trained) == 6 and not set(trained) & {r["id"] for r in rows}, "the arm trains the drills only"
    assert set(ck.read_manifest(sft.path)) >= {r["id"] for r in rows}
    assert ck.read_manifest_problems(scaffold.path) == []
    # one warm-up for both: the arm starts where the sft stage's second phase starts
    assert len(list((out / "sft_warmup").iterdir())) == 1
    no_drills = with_overrides(profile, "sft", mixed_drills=0)
    with pytest.raises(DatasetError, match="mixed_drills=0"):
        run_sft(no_drills, rows, base_ckpt, out, catalogue=world.catalogue, curated=False, stage="scaffold")


def test_weights_changed_under_lora_reads_the_adapters_alone(lora_linear):
    import torch

    from oro_assets.training.stages.common import weights_changed

    model = lora_linear
    assert not weights_changed({}, model, adapters_only=True)  # B starts at zero: nothing trained yet
    with torch.no_grad():
        model.base_model.model.proj.weight.add_(1.0)  # the frozen base moving is not what LoRA training does
    assert not weights_changed({}, model, adapters_only=True)
    with torch.no_grad():
        next(p for n, p in model.named_parameters() if "lora_B" in n).add_(0.1)
    assert weights_changed({}, model, adapters_only=True)


def _warmup_chains(root: Path) -> list[list[str]]:
    """The stage names from each warm-up checkpoint under ``root/sft_warmup`` that no other one continues, back to
    the base."""
    metas = {str(d): json.loads((d / ck.META_FILE).read_text()) for d in (root / "sft_warmup").iterdir()}
    parents = {m["parent_path"] for m in metas.values()}
    chains = []
    for leaf in sorted(set(metas) - parents):
        chain, path = [], Path(leaf)
        while (meta := json.loads((path / ck.META_FILE).read_text()))["stage"] != "base":
            chain.append(meta["stage"])
            path = Path(meta["parent_path"])
        chains.append(chain)
    return chains


def test_a_warm_up_above_its_target_loss_trains_extra_epochs_then_restarts_then_fails(small_profile, base_ckpt,
                                                                                     teacher_traj, world, tmp_path):
    from oro_assets.training.stages.sft import WarmupStalledError

    rows = teacher_traj[:4]
    # a target no warm-up reaches: every extra epoch allowed runs, each on the checkpoint before it, and the stage
    # fails instead of training an sft on a warm-up whose copy did not form (world 202, session 36)
    unreachable = with_overrides(small_profile, "sft", copy_drills=8, mixed_drills=0, max_steps=1,
                                 copy_drill_target_loss=1e-9, copy_drill_extra_epochs=2, copy_drill_loss_window=2,
                                 copy_drill_restarts=0)
    with pytest.raises(WarmupStalledError, match=r"in 1 warm-up, each with up to 2 extra epochs .*copy_drill_restarts"):
        run_sft(unreachable, rows, base_ckpt, tmp_path / "a", catalogue=world.catalogue)
    assert _warmup_chains(tmp_path / "a") == [["sft_warmup"] * 3], "every warm-up checkpoint is kept"
    assert not (tmp_path / "a" / "sft").exists()
    # with a restart: a second warm-up from the parent on other drills, its own extra epochs, then the failure
    restarted = with_overrides(unreachable, "sft", copy_drill_restarts=1)
    logs: list[str] = []
    with pytest.raises(WarmupStalledError, match=r"in 2 warm-ups, each") as failure:
        run_sft(restarted, rows, base_ckpt, tmp_path / "b", catalogue=world.catalogue, log=logs.append)
    assert _warmup_chains(tmp_path / "b") == [["sft_warmup"] * 3, ["sft_warmup"] * 3]
    assert any("restart 1 of at most 1" in line for line in logs)
    assert len(str(failure.value).split("losses: ")[1].split(")")[0].split(", ")) == 2
    # a target every warm-up reaches: the copy_drill_epochs alone, one warm-up checkpoint, no restart
    reached = with_overrides(restarted, "sft", copy_drill_target_loss=1e9)
    sft = run_sft(reached, rows, base_ckpt, tmp_path / "c", catalogue=world.catalogue)
    assert sft.metrics["warmup_extra_epochs"] == 0 and sft.metrics["warmup_restarts"] == 0
    assert _warmup_chains(tmp_path / "c") == [["sft_warmup"]]


def test_a_restarted_warm_up_draws_other_drills_and_another_data_order(small_profile, world):
    from oro_assets.training.stages.sft import warmup_plan

    profile = with_overrides(small_profile, "sft", copy_drills=6)
    first_cfg, first, _ = warmup_plan(profile, world.catalogue, seed=0)
    again_cfg, again, _ = warmup_plan(profile, world.catalogue, seed=0, restart=0)
    restart_cfg, restarted, _ = warmup_plan(profile, world.catalogue, seed=0, restart=1)
    assert again == first and again_cfg == first_cfg, "restart 0 is the first warm-up"
    assert restart_cfg.train.seed != first_cfg.train.seed
    assert {json.dumps(e, sort_keys=True) for e in restarted}.isdisjoint(json.dumps(e, sort_keys=True) for e in first)


def test_tail_loss_is_the_mean_of_the_last_logged_steps():
    from oro_assets.training.stages.sft import tail_loss

    history = [{"step": 1, "loss": 4.0}, {"step": 2, "loss": 1.0}, {"step": 3, "loss": 0.5}, {"step": 3}]
    assert tail_loss({"history": history}, 2) == 0.75
    assert tail_loss({"history": history}, 10) == pytest.approx(5.5 / 3)
    assert tail_loss({"history": []}, 2) is None


def test_a_warm_up_target_loss_without_an_extra_epoch_is_refused():
    from oro_assets.training.stages.sft_config import SFTStageConfig

    with pytest.raises(ValueError, match="copy_drill_extra_epochs"):
        SFTStageConfig(copy_drill_target_loss=0.4)
    with pytest.raises(ValueError, match="copy_drill_target_loss"):
        SFTStageConfig(copy_drill_target_loss=0.0, copy_drill_extra_epochs=1)
    with pytest.raises(ValueError, match="copy_drill_restarts"):
        SFTStageConfig(copy_drill_restarts=-1)


def test_copy_share_counts_first_searches_that_hold_every_named_word(world):
    from oro_assets.training.checks import copy_probes, copy_share

    probes = copy_probes(world.catalogue, 8)
    assert len(probes) == 8 and all(f" {words} " in request for request, words in probes)
    assert copy_probes(world.catalogue, 8) == probes, "the probes are the same every time"
    by_request = dict(probes)
    assert copy_share(lambda r: by_request[r], probes) == (1.0, [])
    # word order and extra words do not matter; a missing word, or no search at all, is a miss
    assert copy_share(lambda r: "cheap " + " ".join(reversed(by_request[r].split())), probes)[0] == 1.0
    share, misses = copy_share(lambda r: " ".join(by_request[r].split()[1:]), probes)
    assert share == 0.0 and len(misses) == 8 and misses[0]["words"] == probes[0][1]
    half = {r for r, _ in probes[:4]}
    assert copy_share(lambda r: by_request[r] if r in half else None, probes)[0] == 0.5
    assert copy_share(lambda r: "x", [])[0] == 0.0


def test_the_copy_check_fails_a_model_that_learned_no_copy_and_a_world_without_a_catalogue(base_ckpt, world):
    from oro_assets.training.checks import check_copies_request

    outcome = check_copies_request(base_ckpt, world.catalogue, n=8)
    assert not outcome.passed and outcome.metadata["probes"] == 8 and outcome.metadata["copied"] < 4
    missing = check_copies_request(base_ckpt, None)
    assert not missing.passed and "nothing to check" in missing.description


def test_the_rollout_checks_share_one_load_of_the_checkpoint(base_ckpt, world, monkeypatch):
    """The asset checks load a trained stage once for both checks that roll it out (a 4B load each under
    qwen3-4b), and a loaded checkpoint gives the outcomes its directory gives."""
    from oro_assets.training import checkpoints as ck
    from oro_assets.training.checks import check_copies_request

    by_path = (check_reload_tool_call(base_ckpt), check_copies_request(base_ckpt, world.catalogue, n=4))
    loads = []
    real = ck.load_model_and_tokenizer
    monkeypatch.setattr(ck, "load_model_and_tokenizer", lambda *a, **k: loads.append(a) or real(*a, **k))
    loaded = ck.load_checkpoint(base_ckpt)
    shared = (check_reload_tool_call(loaded), check_copies_request(loaded, world.catalogue, n=4))
    assert len(loads) == 1
    assert [(o.name, o.passed, o.metadata) for o in shared] == [(o.name, o.passed, o.metadata) for o in by_path]
