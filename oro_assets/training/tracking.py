"""MLflow: one run per training stage, the model registered under one name with stage tags.

The trainer logs from inside the training process (works the same in a Pipes subprocess or a
Kubernetes pod); the run id goes back to Dagster as metadata. Tracking URI is passed in
(``sqlite:///<data>/mlflow/mlflow.db``), artifacts go to a local folder.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oro_assets.locking import file_lock

REGISTERED_MODEL = "oro-assets-policy"
EXPERIMENT = "oro-assets-training"


@dataclass(frozen=True)
class Tracking:
    """Where to track. ``uri=None`` disables MLflow (metrics still land in metrics.json)."""

    uri: str | None = None
    artifact_dir: str | None = None
    experiment: str = EXPERIMENT

    @classmethod
    def disabled(cls) -> Tracking:
        return cls(None, None)

    @classmethod
    def from_settings(cls, settings: Any) -> Tracking:
        return cls(settings.mlflow_tracking_uri, str(settings.layout.mlflow_artifacts))


def flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def store_lock(uri: str | None) -> Path | None:
    """The lock file beside a local SQLite tracking store (None for other stores)."""
    if uri and uri.startswith("sqlite:///"):
        return Path(uri.removeprefix("sqlite:///")).with_suffix(".lock")
    return None


class StageRun:
    """A started MLflow run (or a no-op when tracking is disabled)."""

    def __init__(self, tracking: Tracking, stage: str, version: str, params: dict[str, Any],
                 tags: dict[str, str] | None = None) -> None:
        self.enabled = tracking.uri is not None
        self.info: dict[str, Any] = {}
        if not self.enabled:
            return
        os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
        from mlflow.tracking import MlflowClient

        # MLflow creates a new SQLite store's tables on first open: two stages starting side by side (the sft
        # stage and the scaffold arm) both tried, and one failed with "table experiments already exists"
        with file_lock(store_lock(tracking.uri)) if store_lock(tracking.uri) else contextlib.nullcontext():
            self.client = MlflowClient(tracking_uri=tracking.uri)
            exp = self.client.get_experiment_by_name(tracking.experiment)
            if exp is None:
                location = None
                if tracking.artifact_dir:
                    Path(tracking.artifact_dir).mkdir(parents=True, exist_ok=True)
                    location = Path(tracking.artifact_dir).resolve().as_uri()
                exp_id = self.client.create_experiment(tracking.experiment, artifact_location=location)
            else:
                exp_id = exp.experiment_id
        run = self.client.create_run(exp_id, run_name=f"{stage}-{version}",
                                     tags={**(tags or {}), "stage": stage, "version": version})
        self.run_id = run.info.run_id
        flat = flatten(params)
        from mlflow.entities import Param

        batch = [Param(k[:250], str(v)[:6000]) for k, v in sorted(flat.items())]
        for i in range(0, len(batch), 100):
            self.client.log_batch(self.run_id, params=batch[i:i + 100])
        self.info = {"run_id": self.run_id, "experiment_id": exp_id, "uri": tracking.uri,
                     "run_name": f"{stage}-{version}"}

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        import time

        self.log_steps([(metrics, step, int(time.time() * 1000))])

    def log_steps(self, rows: list[tuple[dict[str, float], int, int]]) -> None:
        """Several steps' ``(metrics, step, timestamp in ms)`` in as few calls as MLflow takes (1,000 a batch)."""
        if not self.enabled:
            return
        from mlflow.entities import Metric

        ms = [Metric(k, float(v), ts, step) for metrics, step, ts in rows for k, v in sorted(metrics.items())
              if isinstance(v, (int, float))]
        for i in range(0, len(ms), 1000):
            self.client.log_batch(self.run_id, metrics=ms[i:i + 1000])

    def log_artifact(self, path: str | Path) -> None:
        if self.enabled:
            self.client.log_artifact(self.run_id, str(path))

    def register(self, checkpoint_path: str | Path, stage: str, version: str, profile: str) -> str | None:
        """Register the checkpoint as a new version of ``oro-assets-policy`` tagged with its stage."""
        if not self.enabled:
            return None
        from mlflow.exceptions import MlflowException

        try:
            self.client.get_registered_model(REGISTERED_MODEL)
        except MlflowException:
            self.client.create_registered_model(REGISTERED_MODEL)
        mv = self.client.create_model_version(
            REGISTERED_MODEL, source=Path(checkpoint_path).resolve().as_uri(), run_id=self.run_id,
            tags={"stage": stage, "version": version, "profile": profile},
        )
        self.info["model_version"] = mv.version
        return mv.version

    def finish(self, status: str = "FINISHED") -> None:
        if self.enabled:
            self.client.set_terminated(self.run_id, status=status)
