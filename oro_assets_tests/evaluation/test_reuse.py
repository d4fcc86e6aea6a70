"""An evaluation is reused only when everything that shapes its rollouts is byte-identical."""

import json
import shutil
import threading
import time

import pytest

from oro_assets.evaluation.report import HOLDOUT_GREEDY_DIR, evaluate_checkpoint
from oro_assets.evaluation.reuse import (
    eval_fingerprint,
    evaluate_once,
    fingerprint_lock,
    policy_fingerprint,
)
from oro_assets_tests.tiny_lm import tiny_random_qwen3


def _checkpoint(root, stage, version, seed):
    ckpt = root / stage / version
    model, tok = tiny_random_qwen3(seed=seed, max_position_embeddings=8192)
    model.save_pretrained(ckpt / "model")
    tok.save_pretrained(ckpt / "model")
    (ckpt / "oro_checkpoint.json").write_text(json.dumps({"stage": stage, "version": version, "view": "full"}))
    return ckpt


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("reuse_ckpts")
    kto = _checkpoint(root, "kto", "v1", seed=3)
    same = root / "dr_grpo" / "v2"  # a stage that changed nothing: the parent's model files under its own record
    shutil.copytree(kto / "model", same / "model")
    (same / "oro_checkpoint.json").write_text(json.dumps({"stage": "dr_grpo", "version": "v2", "view": "full"}))
    other = _checkpoint(root, "teacher_sft", "v0", seed=4)
    return kto, same, other


def test_the_policy_fingerprint_follows_the_model_files_and_view_not_the_stage_record(checkpoints, tmp_path):
    kto, same, other = checkpoints
    assert policy_fingerprint(kto) == policy_fingerprint(same)
    assert policy_fingerprint(kto) != policy_fingerprint(other)
    compact = tmp_path / "compact"
    shutil.copytree(kto, compact)
    (compact / "oro_checkpoint.json").write_text(json.dumps({"stage": "kto", "version": "v1", "view": "compact"}))
    assert policy_fingerprint(compact) != policy_fingerprint(kto)  # the view changes what the model is shown
    flipped = tmp_path / "flipped"
    shutil.copytree(kto, flipped)
    weights = flipped / "model" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # one bit of one weight
    weights.write_bytes(bytes(data))
    assert policy_fingerprint(flipped) != policy_fingerprint(kto)


def test_the_evaluation_fingerprint_follows_settings_problems_world_and_code(checkpoints, world, tmp_path):
    kto = checkpoints[0]
    catalogue = tmp_path / "catalogue.jsonl"
    world.catalogue.to_jsonl(catalogue)
    problems = world.problems[:3]
    base = dict(settings={"n": 2, "seed": 0}, problem_sets={"sample": problems}, world_files=[catalogue],
                code_version="c1")
    key = eval_fingerprint(kto, **base)
    assert key == eval_fingerprint(kto, **base)
    assert key != eval_fingerprint(kto, **{**base, "settings": {"n": 2, "seed": 1}})
    assert key != eval_fingerprint(kto, **{**base, "problem_sets": {"sample": problems[:2]}})
    assert key != eval_fingerprint(kto, **{**base, "problem_sets": {"sample": problems, "holdout": problems[:1]}})
    assert key != eval_fingerprint(kto, **{**base, "code_version": "c2"})
    changed = dict(problems[0], query=problems[0]["query"] + " cheap")
    assert key != eval_fingerprint(kto, **{**base, "problem_sets": {"sample": [changed, *problems[1:]]}})
    other_world = tmp_path / "other.jsonl"
    other_world.write_text(catalogue.read_text() + "\n")
    assert key != eval_fingerprint(kto, **{**base, "world_files": [other_world]})


def test_identical_weights_reuse_the_finished_evaluation_and_keep_their_own_name_and_checks(checkpoints, world,
                                                                                          tmp_path):
    kto, same, other = checkpoints
    problems = world.problems[:2]
    catalogue_path = tmp_path / "catalogue.jsonl"
    world.catalogue.to_jsonl(catalogue_path)
    eval_root = tmp_path / "eval"
    calls = []

    def evaluate(checkpoint, stage):
        def run(out_dir):
            calls.append(stage)
            evaluate_checkpoint(checkpoint, problems[:1], world.catalogue, stage=stage, n=0, max_new_tokens=8,
                                out_dir=out_dir / HOLDOUT_GREEDY_DIR, manifest_problems=[])
            return evaluate_checkpoint(checkpoint, problems, world.catalogue, stage=stage, n=1, temperature=1.0,
                                       max_new_tokens=8, out_dir=out_dir, manifest_problems=[], enforce_checks=True)
        return run

    def key(checkpoint):
        return eval_fingerprint(checkpoint, settings={"n": 1}, problem_sets={"sample": problems},
                                world_files=[catalogue_path], code_version="c1")

    first, reused = evaluate_once(eval_root, "kto", key(kto), evaluate(kto, "kto"), checkpoint=kto,
                                  checkpoint_version="v1", checks={"no_training_leak": []})
    assert reused is None and calls == ["kto"]
    second, reused = evaluate_once(eval_root, "dr_grpo", key(same), evaluate(same, "dr_grpo"), checkpoint=same,
                                   checkpoint_version="v2", checks={"no_training_leak": [{"problem_id": "x"}]})
    assert calls == ["kto"], "identical weights were rolled out again"
    assert reused == eval_root / "kto"
    assert second.stage == "dr_grpo" and second.metrics == first.metrics and second.rows == first.rows
    assert second.config["checkpoint"] == str(same) and second.config["checkpoint_version"] == "v2"
    assert second.config["reused_from"] == {"stage": "kto", "checkpoint": str(kto), "run_id": first.run_id}
    assert second.checks["no_training_leak"] == [{"problem_id": "x"}]  # its own checks, not the parent's
    saved = json.loads((eval_root / "dr_grpo" / "eval_result.json").read_text())
    assert saved["stage"] == "dr_grpo"
    assert saved["trajectories_path"] == str(eval_root / "dr_grpo" / "trajectories.jsonl")
    assert (eval_root / "dr_grpo" / "trajectories.jsonl").read_bytes() == \
        (eval_root / "kto" / "trajectories.jsonl").read_bytes()
    part = json.loads((eval_root / "dr_grpo" / HOLDOUT_GREEDY_DIR / "eval_result.json").read_text())
    assert part["stage"] == "dr_grpo"
    assert part["trajectories_path"] == str(eval_root / "dr_grpo" / HOLDOUT_GREEDY_DIR / "trajectories.jsonl")

    evaluate_once(eval_root, "teacher_sft", key(other), evaluate(other, "teacher_sft"), checkpoint=other,
                  checkpoint_version="v0", checks={})
    assert calls == ["kto", "teacher_sft"]  # other weights: evaluated


def test_a_result_without_a_fingerprint_is_never_reused(checkpoints, world, tmp_path):
    """A half-finished evaluation (its result written before the hold-out run, no fingerprint yet) is redone."""
    kto, same, _ = checkpoints
    eval_root = tmp_path / "eval"
    (eval_root / "kto").mkdir(parents=True)
    (eval_root / "kto" / "eval_result.json").write_text(json.dumps({"config": {}}))
    calls = []

    def run(out_dir):
        calls.append(out_dir.name)
        return evaluate_checkpoint(same, world.problems[:1], world.catalogue, stage="dr_grpo", n=0, max_new_tokens=4,
                                   out_dir=out_dir, manifest_problems=[])

    evaluate_once(eval_root, "dr_grpo", "f" * 64, run, checkpoint=same, checkpoint_version="v2", checks={})
    assert calls == ["dr_grpo"]
    assert json.loads((eval_root / "dr_grpo" / "eval_result.json").read_text())["config"]["fingerprint"] == "f" * 64


def test_a_second_evaluation_of_one_fingerprint_waits_for_the_first(tmp_path):
    order = []

    def hold():
        with fingerprint_lock(tmp_path, "a" * 64):
            order.append("first in")
            time.sleep(0.5)
            order.append("first out")

    t = threading.Thread(target=hold)
    t.start()
    time.sleep(0.1)
    with fingerprint_lock(tmp_path, "a" * 64):
        order.append("second in")
    t.join()
    assert order == ["first in", "first out", "second in"]
    with fingerprint_lock(tmp_path, "b" * 64):  # another fingerprint does not wait
        order.append("other")
    assert order[-1] == "other"
