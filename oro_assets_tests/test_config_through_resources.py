"""Configuration reaches assets only through resources: a launchpad override of a resource field moves
every path derived from it, and no asset module reads the environment's settings itself."""

from pathlib import Path

import dagster as dg
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_no_wiring_module_reads_settings_except_where_resources_are_built():
    offenders = []
    for path in sorted((ROOT / "oro_assets" / "defs").rglob("*.py")):
        if path.name == "resources.py" and path.parent.name == "defs":
            continue  # the one place the environment becomes resources
        if "load_settings" in path.read_text():
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_overriding_the_warehouse_data_dir_moves_the_arena_world(tmp_path, monkeypatch):
    from oro_assets.defs.arena.assets import arena_world, problem_pool
    from oro_assets.defs.resources import EmbeddedFirehose, WarehouseResource

    env_dir, override = tmp_path / "env", tmp_path / "override"
    monkeypatch.setenv("ORO_DATA_DIR", str(env_dir))
    result = dg.materialize(
        [arena_world, problem_pool],
        resources={"warehouse": WarehouseResource(data_dir=str(override)),
                   "firehose": EmbeddedFirehose(out_dir=str(override / "firehose"), traces_per_day=5, seed=15)},
        instance=dg.DagsterInstance.ephemeral(),
    )
    assert result.success
    assert (override / "arena" / "problems.jsonl").exists()
    assert (override / "warehouse").exists()
    assert not env_dir.exists()


def test_the_firehose_seed_of_the_resource_is_the_world_that_is_built(tmp_path):
    from oro_assets import jsonio
    from oro_assets.defs.arena.assets import arena_world
    from oro_assets.defs.resources import EmbeddedFirehose, WarehouseResource

    catalogues = []
    for seed in (15, 16):
        data = tmp_path / str(seed)
        dg.materialize([arena_world], resources={
            "warehouse": WarehouseResource(data_dir=str(data)),
            "firehose": EmbeddedFirehose(out_dir=str(data / "firehose"), traces_per_day=5, seed=seed)},
            instance=dg.DagsterInstance.ephemeral())
        lines = (data / "arena" / "catalogue.jsonl").read_bytes().splitlines()
        catalogues.append([jsonio.loads(line)["product_id"] for line in lines[:50]])
    assert catalogues[0] != catalogues[1]


def test_training_stage_parameters_follow_the_resources(tmp_path, monkeypatch):
    from oro_assets.defs.resources import ModelProfileResource, TrackingResource, WarehouseResource
    from oro_assets.defs.training.assets import TrainingConfig, _params

    monkeypatch.setenv("ORO_DATA_DIR", str(tmp_path / "env"))
    override = tmp_path / "override"
    from oro_assets.training.chain import stage_named

    params = _params(stage_named("base"), TrainingConfig(), WarehouseResource(data_dir=str(override)),
                     TrackingResource(tracking_uri="sqlite:///x.db", artifact_root=str(override / "a")),
                     ModelProfileResource(profile="tiny", qwen3_4b_path="/models/q3", teacher_base_url="http://t/v1",
                                          teacher_model="teach"))
    assert Path(params["out_root"]) == override / "checkpoints"
    assert Path(params["catalogue"]).is_relative_to(override)
    assert Path(params["eval_problems"]).is_relative_to(override)
    assert (params["qwen3_4b_path"], params["teacher_base_url"], params["teacher_model"]) == \
        ("/models/q3", "http://t/v1", "teach")


def test_the_stage_process_takes_the_resources_settings_over_the_environment(monkeypatch):
    from oro_assets.training.pipes_entry import _stage_settings

    monkeypatch.setenv("ORO_QWEN3_4B_PATH", "/from/env")
    monkeypatch.setenv("ORO_TEACHER_BASE_URL", "http://env/v1")
    settings = _stage_settings({"qwen3_4b_path": "/from/resource", "teacher_base_url": ""})
    assert settings.qwen3_4b_path == "/from/resource"
    assert settings.teacher_base_url is None  # the resource says: no teacher endpoint
    assert _stage_settings({}).teacher_base_url == "http://env/v1"


def test_the_llm_judge_resource_carries_its_endpoint(monkeypatch):
    from oro_assets.defs.judge.resources import JudgeResource

    monkeypatch.delenv("ORO_JUDGE_BASE_URL", raising=False)
    judge = JudgeResource(kind="llm", base_url="http://127.0.0.1:9/v1", models=["m1", "m2"]).build()
    assert judge.config.base_url == "http://127.0.0.1:9/v1" and judge.config.models == ("m1", "m2")
    with pytest.raises(ValueError, match="needs a base URL and a model"):
        JudgeResource(kind="llm").build()


def test_the_blocking_manifest_check_is_fed_the_registrys_held_out_problems_not_a_dataset(tmp_path, monkeypatch):
    """No eval_problems dataset on disk: the check still gets every held-out (dev and test) problem id from the
    registry; with an empty registry it gets an empty list, which training.checks refuses (nothing to check)."""
    from oro_assets.curation.clusters import Registry
    from oro_assets.defs.resources import WarehouseResource
    from oro_assets.defs.training import assets as training_assets
    from oro_assets.training import checkpoints, checks
    from oro_assets.training.checks import CheckOutcome

    seen: list[list[str]] = []
    monkeypatch.setattr(checks, "check_loss", lambda path: CheckOutcome("loss_decreased", True, "", {}))
    monkeypatch.setattr(checks, "check_weights_changed", lambda path: CheckOutcome("weights_changed", True, "", {}))
    monkeypatch.setattr(checks, "check_reload_tool_call", lambda path: CheckOutcome("reload_emits_tool_call", True, "", {}))
    monkeypatch.setattr(checks, "check_copies_request",
                        lambda loaded, catalogue: CheckOutcome("copies_request_words", True, "", {}))
    monkeypatch.setattr(checks, "check_manifest_disjoint",
                        lambda path, ids: seen.append(list(ids)) or CheckOutcome("manifest_disjoint_from_eval", True, "", {}))
    monkeypatch.setattr(checkpoints, "load_checkpoint", lambda path: None)  # no weights: the rollout checks are stubbed
    warehouse = WarehouseResource(data_dir=str(tmp_path))
    training_assets._checks(tmp_path / "ckpt", warehouse)
    assert seen == [[]]  # an empty registry holds nothing out
    registry = Registry()
    registry.assign([{"problem_id": f"p{i}", "query": f"distinct gadget {i} model {i * 7}",
                      "reward": {"product_id": str(i)}} for i in range(40)])
    registry.save(warehouse.state_dir)
    training_assets._checks(tmp_path / "ckpt", warehouse)
    held_out = sorted(k for k, m in registry.members.items() if m["pool"] == "eval")
    assert held_out and seen[1] == held_out
    assert not (tmp_path / "warehouse" / "eval_problems.jsonl").exists()
