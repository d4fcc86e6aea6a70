"""The one checkpoint lifecycle every stage goes through (training.stages.lifecycle)."""

import pytest

from oro_assets.training.stages import STAGES
from oro_assets.training.stages.lifecycle import StageCheckpoint
from oro_assets.training.tracking import Tracking


def test_a_failed_stage_leaves_no_checkpoint_and_no_temporary_dir(small_profile, tmp_path):
    checkpoint = StageCheckpoint(small_profile, "sft", {"k": 1}, {"sft": "abc"}, "not/a/local/parent", tmp_path,
                                 Tracking.disabled())
    seen = {}

    def train(tmp, run):
        seen["tmp"] = tmp
        (tmp / "partial.bin").write_bytes(b"x")
        raise RuntimeError("out of memory")

    with pytest.raises(RuntimeError, match="out of memory"):
        checkpoint.run_once(train, log=lambda m: None)
    assert not seen["tmp"].exists()
    assert not checkpoint.final.exists()
    assert list((tmp_path / "sft").iterdir()) == []
    assert checkpoint.existing() is None


def test_the_version_moves_with_data_config_and_parent(small_profile, tmp_path):
    def version(config, hashes, parent):
        return StageCheckpoint(small_profile, "sft", config, hashes, parent, tmp_path, Tracking.disabled()).version

    v = version({"k": 1}, {"sft": "abc"}, "p")
    assert v == version({"k": 1}, {"sft": "abc"}, "p")
    assert len({v, version({"k": 2}, {"sft": "abc"}, "p"), version({"k": 1}, {"sft": "abd"}, "p"),
                version({"k": 1}, {"sft": "abc"}, "q")}) == 4


def test_every_stage_the_assets_run_is_dispatched_by_name():
    assert list(STAGES) == ["base", "sft", "rejection_sft", "teacher_sft", "kto", "dr_grpo"]


def test_pipes_entry_names_the_accepted_stages_for_an_unknown_one():
    from oro_assets.training.pipes_entry import run_stage

    with pytest.raises(ValueError, match="unknown stage 'sfft'; one of base, sft, rejection_sft"):
        run_stage({"stage": "sfft", "out_root": "x"})


def test_the_version_follows_the_training_code(small_profile, tmp_path, monkeypatch):
    from oro_assets.training.stages import lifecycle

    def version():
        return StageCheckpoint(small_profile, "sft", {"k": 1}, {"sft": "abc"}, "p", tmp_path, Tracking.disabled()).version

    before = version()
    monkeypatch.setattr(lifecycle, "training_code_version", lambda stage: "edited")
    assert version() != before


def test_a_tiny_checkpoint_rolls_out_with_the_threads_it_trained_with(base_ckpt):
    import torch

    from oro_assets.training.checkpoints import load_policy

    torch.set_num_threads(2)
    try:
        load_policy(base_ckpt)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(2)


def test_the_tiny_base_version_follows_its_code(small_profile, monkeypatch):
    import oro_assets.code_version as cv
    from oro_assets.training import tiny_model

    before = tiny_model.base_version(small_profile, ["a text"], 0)
    assert before == tiny_model.base_version(small_profile, ["a text"], 0)
    assert before != tiny_model.base_version(small_profile, ["another text"], 0)
    monkeypatch.setattr(cv, "code_version", lambda *objs: "edited")
    assert tiny_model.base_version(small_profile, ["a text"], 0) != before


def test_two_runs_of_one_version_at_once_train_it_once_and_the_second_reuses_it(small_profile, tmp_path):
    """The sft stage and the scaffold arm start side by side and need the same warm-up checkpoint: one trains it,
    the other waits and reuses it (before the lock both trained it into one folder at the same time)."""
    import threading
    import time

    from oro_assets.training.stages.lifecycle import Trained

    class Saved:
        def save_pretrained(self, path):
            path.mkdir(parents=True, exist_ok=True)
            (path / "weights.bin").write_bytes(b"w")

    trainings = []

    def train(tmp, run):
        trainings.append(threading.get_ident())
        time.sleep(0.5)  # long enough for the other thread to arrive while this one trains
        return Trained(Saved(), Saved(), {"steps": 1}, ["row-1"], ["p-1"])

    results = []

    def stage():
        checkpoint = StageCheckpoint(small_profile, "sft_warmup", {"k": 1}, {"drills": "abc"}, "p", tmp_path,
                                     Tracking.disabled())
        results.append(checkpoint.run_once(train, log=lambda m: None))

    threads = [threading.Thread(target=stage) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(trainings) == 1
    assert sorted(result.reused for result in results) == [False, True]
    assert results[0].path == results[1].path and (results[0].path / "model" / "weights.bin").exists()


def test_two_stages_opening_a_new_tracking_store_at_once_both_start(tmp_path):
    """MLflow creates a new SQLite store's tables on first open; two stages starting side by side both tried and
    one failed ("table experiments already exists")."""
    from concurrent.futures import ProcessPoolExecutor

    uri = f"sqlite:///{tmp_path / 'mlflow' / 'mlflow.db'}"
    with ProcessPoolExecutor(4) as pool:
        runs = list(pool.map(_start_run, [uri] * 4, [str(tmp_path / "artifacts")] * 4, range(4)))
    assert len(set(runs)) == 4 and all(runs)


def _start_run(uri: str, artifacts: str, i: int) -> str:
    from oro_assets.training.tracking import StageRun

    (__import__("pathlib").Path(uri.removeprefix("sqlite:///")).parent).mkdir(parents=True, exist_ok=True)
    return StageRun(Tracking(uri, artifacts), f"stage{i}", "v", {"i": i}).run_id


def test_a_checkpoint_records_the_machine_that_trained_it_outside_its_version(small_profile, tmp_path, monkeypatch):
    """Another CPU's kernels train other weights from the same inputs: the checkpoint says which machine trained it,
    and the version (what a rerun reuses) does not depend on it."""
    from oro_assets.training import checkpoints as ck
    from oro_assets.training.stages import lifecycle
    from oro_assets.training.stages.lifecycle import Trained

    class Saved:
        def save_pretrained(self, path):
            path.mkdir(parents=True, exist_ok=True)

    machine = {"cpu": "AMD EPYC", "family": 25, "model": 17, "key": "AMD EPYC, family 25 model 17, avx512f"}
    monkeypatch.setattr(lifecycle, "machine_signature", lambda: machine)
    (tmp_path / "mlflow").mkdir()
    tracking = Tracking(f"sqlite:///{tmp_path / 'mlflow' / 'mlflow.db'}", str(tmp_path / "artifacts"))
    checkpoint = StageCheckpoint(small_profile, "sft", {"k": 1}, {"sft": "abc"}, "p", tmp_path, tracking)
    version = checkpoint.version
    result = checkpoint.run_once(lambda tmp, run: Trained(Saved(), Saved(), {"steps": 1}, ["row-1"], ["p-1"]),
                                 log=lambda m: None)
    assert ck.read_meta(result.path)["trained_on"] == machine
    from mlflow.tracking import MlflowClient

    run = MlflowClient(tracking_uri=tracking.uri).get_run(result.mlflow_run["run_id"])
    assert run.data.tags["machine"] == "AMD EPYC, family 25 model 17, avx512f"
    monkeypatch.setattr(lifecycle, "machine_signature", lambda: {**machine, "model": 1, "key": "zen 3"})
    assert StageCheckpoint(small_profile, "sft", {"k": 1}, {"sft": "abc"}, "p", tmp_path,
                           Tracking.disabled()).version == version
