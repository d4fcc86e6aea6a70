"""Resources shared by every concern: the one way configuration reaches an asset.

The environment (``ORO_*``, see ``oro_assets.settings``) is read and validated once, when the code
location loads, into these resources' fields; assets read only their resources, so a launchpad
override of a resource field (say ``warehouse.data_dir``) moves every path that derives from it:
warehouse, state, checkpoints, reports.

The firehose is an abstract resource with two implementations (embedded simulator / a directory or
object-store prefix of real SN15 dumps), in the style of Dagster's project_ml example.
"""


from pathlib import Path
from types import SimpleNamespace
from typing import Any

import dagster as dg
from pydantic import Field

from oro_assets.defs.pipes_reader import WholeLineTempFileMessageReader
from oro_assets.layout import DataLayout
from oro_assets.settings import QWEN3_4B_DEFAULT, Settings, load_settings
from oro_assets.storage import Warehouse, validate_partition


class WarehouseResource(dg.ConfigurableResource):
    """Parquet warehouse + DuckDB views under the data root; :attr:`layout` names every path under it."""

    data_dir: str = Field(description="Data root (ORO_DATA_DIR): warehouse, state, checkpoints, reports, MLflow.")

    @property
    def layout(self) -> DataLayout:
        return DataLayout(Path(self.data_dir))

    @property
    def warehouse(self) -> Warehouse:
        return Warehouse(Path(self.data_dir))

    @property
    def state_dir(self) -> Path:
        path = self.layout.state
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def checkpoints_dir(self) -> Path:
        return self.layout.checkpoints

    @property
    def reports_dir(self) -> Path:
        return self.layout.reports

    def registry(self) -> Any:
        """The persistent leak-cluster registry (``curation.clusters.Registry``): pools and the held-out rule."""
        from oro_assets.curation.clusters import Registry

        return Registry.load(self.state_dir)

    def pool_problems(self) -> list[dict]:
        """The problem_pool asset's rows as problem dicts (reward decoded)."""
        from oro_assets.curation.store import pool_problems

        return pool_problems(self.warehouse)


class FirehoseSource(dg.ConfigurableResource):
    """Where a day's raw trace files come from, with the problem files that go with them."""

    problems: list[str] = Field(default_factory=list, description=(
        "Problem files or folders (ORO_PROBLEMS); empty: problems.jsonl beside the days, else the embedded pool."))
    seed: int = Field(default=15, description="Seed of the embedded world, or of a catalogue built around real problems (ORO_SIM_SEED).")
    ingest_workers: int = Field(default=1, description="Processes that read and normalise a day's part files (ORO_INGEST_WORKERS).")

    @property
    def embedded(self) -> bool:
        """True when the embedded arena simulator writes the days."""
        return False

    def partition_files(self, partition: str) -> list[str]:
        raise NotImplementedError

    def root(self) -> str:
        raise NotImplementedError


class DirectoryFirehose(FirehoseSource):
    """Real dumps: ``<root>/<YYYY-MM-DD>/*.jsonl[.gz]`` on disk or any fsspec URL (s3://... with s3fs)."""

    path: str

    def root(self) -> str:
        return self.path

    def partition_files(self, partition: str) -> list[str]:
        from oro_assets.traces.reader import iter_partition_files

        return iter_partition_files(self.path, validate_partition(partition))


class EmbeddedFirehose(FirehoseSource):
    """The embedded arena simulator writes the day under ``<data>/firehose`` (deterministic per seed and date)."""

    out_dir: str
    traces_per_day: int
    later_recorder_share: float = Field(default=0.0, description=(
        "Share of ORO records written by ORO's later recorder (whole bodies, requests' messages); the rest by "
        "a6b1cf3's (ORO_SIM_LATER_RECORDER_SHARE)."))

    @property
    def embedded(self) -> bool:
        return True

    def root(self) -> str:
        return self.out_dir

    def partition_files(self, partition: str) -> list[str]:
        from oro_assets.arena.firehose import simulate_day
        from oro_assets.traces.reader import iter_partition_files

        validate_partition(partition)
        day_dir = Path(self.out_dir) / partition
        marker = day_dir / "_SUCCESS"
        if not marker.exists():
            share = self.later_recorder_share
            simulate_day(partition, self.traces_per_day, Path(self.out_dir), seed=self.seed,
                         recorder_shares={"a6b1cf3": 1.0 - share, "later": share} if share else None)
            marker.write_text(f"{self.traces_per_day} traces, seed {self.seed}"
                              + (f", later recorder share {share}" if share else "") + "\n")
        return iter_partition_files(self.out_dir, partition)


class TrackingResource(dg.ConfigurableResource):
    """MLflow tracking store (SQLite backend + local artifact root by default)."""

    tracking_uri: str = Field(description="MLflow tracking store (MLFLOW_TRACKING_URI).")
    artifact_root: str = Field(description="MLflow artifact root.")


class ModelProfileResource(dg.ConfigurableResource):
    """Which model profile the training and evaluation assets use (tiny | qwen3-4b); its tokenizer also
    counts the format gate's token budget."""

    profile: str = Field(description="tiny | qwen3-4b (ORO_MODEL_PROFILE).")
    qwen3_4b_path: str = Field(default=QWEN3_4B_DEFAULT, description="Qwen3-4B weights, a local path or hub id (ORO_QWEN3_4B_PATH).")
    teacher_base_url: str = Field(default="", description="Teacher endpoint for teacher-SFT (ORO_TEACHER_BASE_URL); empty: the scripted teacher.")
    teacher_model: str = Field(default="", description="Teacher model name on that endpoint (ORO_TEACHER_MODEL).")

    def stage_settings(self) -> dict[str, str]:
        """What the out-of-process training stage needs of this resource (``training.pipes_entry`` params)."""
        return {"qwen3_4b_path": self.qwen3_4b_path, "teacher_base_url": self.teacher_base_url,
                "teacher_model": self.teacher_model}

    def token_counter(self, data_dir: str | Path) -> tuple[Any, str]:
        """(counter or None, why None) for the format gate: the profile's tokenizer and view (the tiny
        one built over the arena world under ``data_dir``), else None and the byte estimate is used."""
        from oro_assets.training.profiles import get_profile
        from oro_assets.training.token_count import profile_token_counter

        layout = DataLayout(Path(data_dir))
        profile = get_profile(self.profile, SimpleNamespace(qwen3_4b_path=self.qwen3_4b_path))
        return profile_token_counter(profile, layout.world_catalogue, layout.world_problems,
                                     cache_dir=layout.state_layout.tokenizers)


class RetrainPolicy(dg.ConfigurableResource):
    """When the retrain sensor launches the training job."""

    min_new_rows: int = Field(default=0, description=(
        "New curated SFT rows since the last SFT checkpoint that trigger retraining (ORO_RETRAIN_MIN_NEW_ROWS); 0: off."))


def firehose_from_settings(settings: Settings) -> FirehoseSource:
    common = {"problems": list(settings.problems), "seed": settings.sim_seed, "ingest_workers": settings.ingest_workers}
    if settings.uses_embedded_firehose:
        return EmbeddedFirehose(out_dir=str(settings.embedded_firehose_dir), traces_per_day=settings.sim_traces_per_day,
                                later_recorder_share=settings.sim_later_recorder_share, **common)
    return DirectoryFirehose(path=settings.firehose_root, **common)


def resources_from_settings(settings: Settings) -> dict[str, object]:
    from oro_assets.defs.judge.resources import judge_resource_from_settings

    return {
        "warehouse": WarehouseResource(data_dir=str(settings.data_dir)),
        "firehose": firehose_from_settings(settings),
        "judge": judge_resource_from_settings(settings),
        "tracking": TrackingResource(
            tracking_uri=settings.mlflow_tracking_uri, artifact_root=str(settings.layout.mlflow_artifacts)
        ),
        "model_profile": ModelProfileResource(profile=settings.model_profile, qwen3_4b_path=settings.qwen3_4b_path,
                                              teacher_base_url=settings.teacher_base_url or "",
                                              teacher_model=settings.teacher_model or ""),
        "retrain": RetrainPolicy(min_new_rows=settings.retrain_min_new_rows),
        # Training runs out of process; swap for dagster_k8s.PipesK8sClient to train on GPU pods (docs/deploy.md).
        "pipes_subprocess_client": dg.PipesSubprocessClient(message_reader=WholeLineTempFileMessageReader()),
    }


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources=resources_from_settings(load_settings()))
