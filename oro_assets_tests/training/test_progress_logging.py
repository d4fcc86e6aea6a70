"""A stage's progress: every step to the log and the history as it comes, to MLflow in batches (one SQLite write
per step was tens of milliseconds on the loaded CI box)."""

from __future__ import annotations

from types import SimpleNamespace

from oro_assets.training.stages import common


class _Run:
    def __init__(self) -> None:
        self.calls: list[list[tuple[dict, int, int]]] = []

    def log_steps(self, rows):
        self.calls.append(list(rows))


def test_steps_reach_mlflow_in_batches_and_all_of_them(monkeypatch):
    monkeypatch.setattr(common, "MLFLOW_FLUSH_S", 1e9)
    run, logs, history = _Run(), [], []
    progress = common._progress_callback(run, logs.append, history, 0.0)
    for step in range(1, 121):
        progress.on_log(None, SimpleNamespace(global_step=step), None, logs={"loss": 1.0 / step, "grad_norm": 2.0})
    progress.on_log(None, SimpleNamespace(global_step=120), None, logs={"train_runtime": 3.0})  # the summary
    assert [len(c) for c in run.calls] == [50, 50]
    assert len(logs) == 120 and [h["step"] for h in history] == list(range(1, 121))
    progress.on_train_end(None, None, None)
    assert [len(c) for c in run.calls] == [50, 50, 20]
    logged = [row for call in run.calls for row in call]
    assert [step for _, step, _ in logged] == list(range(1, 121))
    assert logged[9][0]["loss"] == 0.1 and logged[9][0]["grad_norm"] == 2.0 and "step" not in logged[9][0]
    progress.flush()  # nothing pending: no empty write
    assert len(run.calls) == 3


def test_a_slow_stage_still_reaches_mlflow_every_few_seconds(monkeypatch):
    monkeypatch.setattr(common, "MLFLOW_FLUSH_S", 0.0)
    run = _Run()
    progress = common._progress_callback(run, lambda m: None, [], 0.0)
    for step in (1, 2, 3):
        progress.on_log(None, SimpleNamespace(global_step=step), None, logs={"loss": 1.0})
    assert [len(c) for c in run.calls] == [1, 1, 1]
