"""Where everything lives under the data dir (``ORO_DATA_DIR``): the one place that names its paths.

    <data>/
      arena/problems.jsonl, arena/catalogue.jsonl    the world (arena_world)
      firehose/                                      the embedded simulator's days
      warehouse/                                     asset tables (storage.Warehouse: <asset>[/<day>].parquet),
                                                     datasets (<name>.parquet / .jsonl)
      warehouse.duckdb                               SQL views over the warehouse
      state/                                         leak-cluster registry, judge cache, tokenizers, spill, staging
      checkpoints/                                   <stage>/<version>/ (training.checkpoints), current pointers,
                                                     _inputs/ (the problems handed to the training process),
                                                     ablation/
      reports/                                       eval/<stage>/, ablation/, the comparison report
      corpus/                                        the curated corpus as a Hugging Face dataset folder (curated_corpus)
      mlflow/mlflow.db, mlflow/artifacts             MLflow
      dagster_home/                                  the Dagster instance

Inside ``warehouse/`` the table layout is :class:`oro_assets.storage.Warehouse`'s and inside ``checkpoints/``
the ``<stage>/<version>`` layout is :mod:`oro_assets.training.checkpoints`'; every other path is named here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class StateLayout:
    """Persistent, non-partitioned state under ``<data>/state`` (or any state dir a test gives)."""

    root: Path

    @property
    def leak_clusters(self) -> Path:
        return self.root / "leak_clusters"

    @property
    def registry(self) -> Path:
        """The persistent leak-cluster registry (``curation.clusters.Registry``)."""
        return self.leak_clusters / "registry.parquet"

    @property
    def registry_lock(self) -> Path:
        return self.leak_clusters / "registry.lock"

    @property
    def tokenizers(self) -> Path:
        """Cache of the profile tokenizers the format gate counts tokens with."""
        return self.root / "tokenizers"

    @property
    def duckdb_spill(self) -> Path:
        return self.root / "duckdb_spill"

    def staging(self, name: str) -> Path:
        """Scratch space of one curation step (``curation.store.WarehouseStore``)."""
        return self.root / "staging" / name


@dataclass(frozen=True)
class DataLayout:
    """Every path under one data dir. ``DataLayout(settings.data_dir)``; the warehouse resource exposes one."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    # ---- the world (arena_world)
    @property
    def arena(self) -> Path:
        return self.root / "arena"

    @property
    def world_problems(self) -> Path:
        return self.arena / "problems.jsonl"

    @property
    def world_catalogue(self) -> Path:
        return self.arena / "catalogue.jsonl"

    @property
    def world_files(self) -> tuple[Path, Path]:
        """(problems, catalogue) as arena_world publishes them."""
        return self.world_problems, self.world_catalogue

    @property
    def firehose(self) -> Path:
        """The embedded simulator's days (a real firehose lives wherever ORO_FIREHOSE_DIR says)."""
        return self.root / "firehose"

    # ---- warehouse
    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    @property
    def duckdb(self) -> Path:
        return self.root / "warehouse.duckdb"

    def dataset(self, name: str, suffix: str = ".parquet") -> Path:
        """A window dataset (``sft_dataset``, ``kto_dataset``, ``rl_prompts``, ``eval_problems``) as exported."""
        return self.warehouse / f"{name}{suffix}"

    @property
    def corpus(self) -> Path:
        """The curated corpus as a Hugging Face dataset folder (asset ``curated_corpus``, ``curation/export.py``)."""
        return self.root / "corpus"

    # ---- state
    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def state_layout(self) -> StateLayout:
        return StateLayout(self.state)

    # ---- training
    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def training_inputs(self) -> Path:
        """The problem files the wiring writes for the out-of-process training stages."""
        return self.checkpoints / "_inputs"

    @property
    def train_problems(self) -> Path:
        return self.training_inputs / "train_problems.jsonl"

    @property
    def heldout_problems(self) -> Path:
        """Every held-out problem (dev and test): what synthetic teacher problems are decontaminated against."""
        return self.training_inputs / "eval_problems.jsonl"

    @property
    def ablation_checkpoints(self) -> Path:
        return self.checkpoints / "ablation"

    # ---- reports
    @property
    def reports(self) -> Path:
        return self.root / "reports"

    @property
    def eval_reports(self) -> Path:
        """``<stage>/`` per evaluated stage (``eval_result.json``, trajectories, the greedy hold-out run)."""
        return self.reports / "eval"

    def eval_result(self, stage: str) -> Path:
        return self.eval_reports / stage / "eval_result.json"

    @property
    def ablation_reports(self) -> Path:
        return self.reports / "ablation"

    # ---- services
    @property
    def mlflow(self) -> Path:
        return self.root / "mlflow"

    @property
    def mlflow_db(self) -> Path:
        return self.mlflow / "mlflow.db"

    @property
    def mlflow_artifacts(self) -> Path:
        return self.mlflow / "artifacts"

    @property
    def dagster_home(self) -> Path:
        return self.root / "dagster_home"
