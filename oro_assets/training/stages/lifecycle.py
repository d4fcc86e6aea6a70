"""A stage's checkpoint lifecycle, written once: reuse an existing version, or start a temporary
directory and an MLflow run, train, commit (metadata, manifest, artifacts, atomic move into
``<out_root>/<stage>/<version>/``), and abort cleanly on any failure."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from oro_assets import jsonio
from oro_assets.code_version import module_version
from oro_assets.locking import file_lock
from oro_assets.machine import machine_signature
from oro_assets.training import checkpoints as ck
from oro_assets.training.checkpoints import StageResult
from oro_assets.training.profiles import ModelProfile
from oro_assets.training.stages.common import LogFn
from oro_assets.training.tracking import StageRun, Tracking


@dataclasses.dataclass
class Trained:
    """What a stage's training function hands back to the lifecycle."""

    model: Any
    tokenizer: Any
    metrics: dict[str, Any]
    example_ids: Sequence[str]
    problem_ids: Sequence[str]
    learned_nothing: bool = False


def training_code_version(stage: str) -> str:
    """Version of the code ``stage`` runs: its own module (``training/stages/<stage>.py``) and what that imports
    (see :func:`oro_assets.code_version.module_version`), not its sibling stages. The parent's version, which
    :class:`StageCheckpoint` hashes too, carries the ancestors' code. A name that is no stage module (an
    ablation's arm) is versioned by SFT's module, the code that trains it."""
    try:
        return module_version(f"{__package__}.{stage}")
    except ValueError:
        return module_version(f"{__package__}.sft")


class StageCheckpoint:
    """The versioned checkpoint of one stage run. ``version`` hashes the input datasets, the resolved
    config, the parent's version and the stage's training code (:func:`training_code_version`), so an unchanged
    stage is reused and a changed one is not - a data dir reused across code changes cannot hand back a checkpoint the current code did not train."""

    def __init__(self, profile: ModelProfile, stage: str, config: dict, dataset_hashes: dict[str, str],
                 parent: str | Path, out_root: str | Path, tracking: Tracking) -> None:
        self.profile, self.stage = profile, stage
        self.parent = str(parent)
        self.parent_version = ck.checkpoint_version(parent) if Path(parent).exists() else str(parent)
        self.config = {"profile": profile.name, "stage": stage, "stage_config": config, "view": profile.view,
                       "dtype": profile.dtype, "lora": dataclasses.asdict(profile.lora) if profile.lora else None}
        self.code = training_code_version(stage)
        self.version = ck.stage_version(dataset_hashes, {**self.config, "code": self.code}, self.parent_version)
        self.dataset_hashes = dataset_hashes
        self.final = ck.checkpoint_dir(out_root, stage, self.version)
        self.tracking = tracking
        self.run: StageRun | None = None
        self.tmp: Path | None = None
        self.machine: dict[str, Any] = {}

    def run_once(self, train: Callable[[Path, StageRun], Trained], *, force: bool = False,
                 log: LogFn = print) -> StageResult:
        """The existing checkpoint of this version (unless ``force``), else ``train(tmp_dir, mlflow_run)``
        committed; any failure (or interrupt) aborts: the run is marked FAILED and nothing is left behind.

        Held under a lock on the version: two processes that need the same checkpoint at once (the sft stage and
        the scaffold arm share their warm-up) train it once, and the second reuses it."""
        with file_lock(self.final.parent.parent / ".locks" / f"{self.stage}-{self.version}.lock"):
            return self._run_once(train, force=force, log=log)

    def _run_once(self, train: Callable[[Path, StageRun], Trained], *, force: bool, log: LogFn) -> StageResult:
        if not force and (done := self.existing()) is not None:
            log(f"{self.stage}: version {self.version} already exists, reused")
            return done
        tmp = self.start()
        assert self.run is not None
        try:
            result = train(tmp, self.run)
            shutil.rmtree(tmp / "trainer", ignore_errors=True)
            return self.commit(result)
        except BaseException:
            self.abort()
            raise

    def existing(self) -> StageResult | None:
        metrics_p = self.final / "metrics.json"
        if not metrics_p.exists() or not (self.final / "model").exists():
            return None
        metrics = jsonio.loads_lenient(metrics_p.read_text())
        run_p = self.final / "mlflow_run.json"
        run = jsonio.loads_lenient(run_p.read_text()) if run_p.exists() else {}
        return StageResult(self.stage, self.version, self.final, metrics, int(metrics.get("n_examples", 0)), run,
                           bool(metrics.get("learned_nothing", False)), reused=True)

    def start(self) -> Path:
        self.final.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{self.version}.", dir=self.final.parent))
        self.machine = machine_signature()
        self.run = StageRun(self.tracking, self.stage, self.version, {**self.config, "parent": self.parent,
                                                                       "datasets": self.dataset_hashes},
                            tags={"machine": self.machine["key"]})
        return self.tmp

    def commit(self, trained: Trained) -> StageResult:
        assert self.tmp is not None and self.run is not None
        model_dir = self.tmp / "model"
        trained.model.save_pretrained(model_dir)
        trained.tokenizer.save_pretrained(model_dir)
        example_ids = list(trained.example_ids)
        metrics = {**trained.metrics, "n_examples": len(example_ids), "learned_nothing": trained.learned_nothing}
        ck.write_json(self.tmp / "config.json", self.config)
        ck.write_json(self.tmp / "metrics.json", metrics)
        ck.write_manifest(self.tmp, example_ids, trained.problem_ids)
        ck.write_json(self.tmp / ck.META_FILE, {
            "stage": self.stage, "version": self.version, "parent_version": self.parent_version,
            "parent_path": self.parent if Path(self.parent).exists() else None, "profile": self.profile.name,
            "view": self.profile.view, "dtype": self.profile.dtype, "datasets": self.dataset_hashes,
            "code_version": self.code,
            # not part of the version (a checkpoint is reused on any machine), but what trained it: another CPU's
            # kernels train other weights from the same inputs (float rounding), as a training seed does
            "trained_on": self.machine,
        })
        try:
            for name in ("config.json", "manifest.jsonl", "manifest_problems.json", "metrics.json"):
                self.run.log_artifact(self.tmp / name)
            self.run.log_metrics({k: v for k, v in metrics.items() if isinstance(v, (int, float))
                                  and not isinstance(v, bool)}, step=int(metrics.get("steps", 0)))
            self.run.register(self.final, self.stage, self.version, self.profile.name)
            self.run.finish("FINISHED")
        except Exception:
            self.run.finish("FAILED")
            raise
        ck.write_json(self.tmp / "mlflow_run.json", self.run.info)
        shutil.rmtree(self.tmp / "runs", ignore_errors=True)
        ck.finalize_dir(self.tmp, self.final)
        return StageResult(self.stage, self.version, self.final, metrics, len(example_ids), self.run.info,
                           trained.learned_nothing)

    def abort(self) -> None:
        if self.run is not None:
            self.run.finish("FAILED")
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
