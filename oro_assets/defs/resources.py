"""Resources shared by every concern. Defaults come from ``oro_assets.settings``; run config can override.

The firehose is an abstract resource with two implementations (embedded simulator / a directory or
object-store prefix of real SN15 dumps), in the style of Dagster's project_ml example.
"""


import dataclasses
from pathlib import Path
from typing import Any

import dagster as dg

from oro_assets.settings import Settings, load_settings
from oro_assets.storage import Warehouse, validate_partition


class WarehouseResource(dg.ConfigurableResource):
    """Parquet warehouse + DuckDB views under the data root."""

    data_dir: str

    @property
    def warehouse(self) -> Warehouse:
        return Warehouse(Path(self.data_dir))

    @property
    def state_dir(self) -> Path:
        path = Path(self.data_dir) / "state"
        path.mkdir(parents=True, exist_ok=True)
        return path


class FirehoseSource(dg.ConfigurableResource):
    """Where a day's raw trace files come from."""

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
    seed: int

    def root(self) -> str:
        return self.out_dir

    def partition_files(self, partition: str) -> list[str]:
        from oro_assets.arena.firehose import simulate_day
        from oro_assets.traces.reader import iter_partition_files

        validate_partition(partition)
        day_dir = Path(self.out_dir) / partition
        marker = day_dir / "_SUCCESS"
        if not marker.exists():
            simulate_day(partition, self.traces_per_day, Path(self.out_dir), seed=self.seed)
            marker.write_text(f"{self.traces_per_day} traces, seed {self.seed}\n")
        return iter_partition_files(self.out_dir, partition)


class TrackingResource(dg.ConfigurableResource):
    """MLflow tracking store (SQLite backend + local artifact root by default)."""

    tracking_uri: str
    artifact_root: str


class ModelProfileResource(dg.ConfigurableResource):
    """Which model profile the training and evaluation assets use (tiny | qwen3-4b); its tokenizer also
    counts the format gate's token budget."""

    profile: str
    qwen3_4b_path: str

    def token_counter(self, data_dir: str | Path) -> tuple[Any, str]:
        """(counter or None, why None) for the format gate: the profile's tokenizer and view (the tiny
        one built over the arena world under ``data_dir``), else None and the byte estimate is used."""
        from oro_assets.defs.arena.assets import world_paths
        from oro_assets.training.profiles import get_profile
        from oro_assets.training.token_count import profile_token_counter

        settings = dataclasses.replace(load_settings(), qwen3_4b_path=self.qwen3_4b_path)
        problems, catalogue = world_paths(Path(data_dir))
        return profile_token_counter(get_profile(self.profile, settings), catalogue, problems,
                                     cache_dir=Path(data_dir) / "state" / "tokenizers")


def firehose_from_settings(settings: Settings) -> FirehoseSource:
    if settings.uses_embedded_firehose:
        return EmbeddedFirehose(
            out_dir=str(settings.embedded_firehose_dir),
            traces_per_day=settings.sim_traces_per_day,
            seed=settings.sim_seed,
        )
    return DirectoryFirehose(path=settings.firehose_root)


def resources_from_settings(settings: Settings) -> dict[str, object]:
    from oro_assets.defs.judge.resources import judge_resource_from_settings

    return {
        "warehouse": WarehouseResource(data_dir=str(settings.data_dir)),
        "firehose": firehose_from_settings(settings),
        "judge": judge_resource_from_settings(settings),
        "tracking": TrackingResource(
            tracking_uri=settings.mlflow_tracking_uri, artifact_root=str(settings.mlflow_dir / "artifacts")
        ),
        "model_profile": ModelProfileResource(profile=settings.model_profile, qwen3_4b_path=settings.qwen3_4b_path),
        # Training runs out of process; swap for dagster_k8s.PipesK8sClient to train on GPU pods (docs/deploy.md).
        "pipes_subprocess_client": dg.PipesSubprocessClient(),
    }


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources=resources_from_settings(load_settings()))
