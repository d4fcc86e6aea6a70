"""Persistent leak clusters and the training / evaluation datasets built over a window of partitions."""


from collections.abc import Iterator

import dagster as dg
import pyarrow.compute as pc

from oro_assets import jsonio
from oro_assets.curation.clusters import (
    leak_violations,
    near_duplicate_leaks,
    problem_key,
    registry_lock,
    update_registry,
)
from oro_assets.curation.datasets import (
    eval_problem_rows,
    export_dataset,
    kto_rows,
    rl_prompt_rows,
    rl_prompts_from_registry,
    sft_rows,
    strict_success_fn,
    window_partitions,
)
from oro_assets.curation.store import iter_row_batches
from oro_assets.defs.common import DATASET_FRESHNESS, OWNER_DATA, code_version, markdown_table
from oro_assets.defs.resources import WarehouseResource


class DatasetWindowConfig(dg.Config):
    """Which partitions feed the datasets: the ``window_days`` days up to the newest curated one."""

    window_days: int = 30
    max_teacher_problems: int = 300


@dg.asset(
    group_name="curation",
    owners=[OWNER_DATA],
    kinds={"python", "parquet"},
    deps=["problem_pool"],
    description=(
        "Leak clusters of the problem pool, persistent across days: MinHash-LSH over order-invariant shingles of the "
        "normalised query, merged (union-find) with problems sharing a ground-truth product id. Each cluster is "
        "assigned once, for ever, to train / eval / never_touch by a stable hash; new problems join their cluster's "
        "pool, and a problem bridging pools is a reported leak conflict."
    ),
    check_specs=[
        dg.AssetCheckSpec("no_leak", asset="leak_clusters", blocking=True,
                          description="No cluster, ground-truth id or near-duplicate query on both train and eval (blocking).")
    ],
    code_version=code_version(update_registry),
)
def leak_clusters(context: dg.AssetExecutionContext, warehouse: WarehouseResource) -> dg.MaterializeResult:
    wh = warehouse.warehouse
    with registry_lock(warehouse.state_dir):
        registry, stats = update_registry(warehouse.pool_problems(), warehouse.state_dir, first_seen="problem_pool")
    table = registry.to_table()
    path = wh.write(table, "leak_clusters")
    violations = leak_violations(registry) + near_duplicate_leaks(registry)
    conflicts = stats.get("conflicts", [])
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": table.num_rows,
            "dagster/uri": dg.MetadataValue.path(str(path)),
            "clusters": stats["clusters"],
            "problems_per_pool": stats["problems_per_pool"],
            "new_clusters": stats.get("new_clusters", 0),
            "leak_conflicts": len(conflicts),
            "conflicts": dg.MetadataValue.json(conflicts[:20]),
        },
        check_results=[
            dg.AssetCheckResult(check_name="no_leak", passed=not violations,
                                metadata={"violations": len(violations), "examples": dg.MetadataValue.json(violations[:5])})
        ],
        data_version=dg.DataVersion(jsonio.content_hash(table.column("cluster_id").to_pylist()
                                                         + table.column("pool").to_pylist())[:16]),
    )


def _window_partitions(wh, window_days: int) -> list[str]:
    partitions = wh.partitions("split_traces")
    return window_partitions(partitions, partitions[-1], window_days) if partitions else []


def _train_rows(wh, partitions: list[str]) -> Iterator[dict]:
    """The window's train-pool traces, streamed: other pools are filtered out in Arrow, so only the
    rows a training dataset can use ever become Python dicts."""
    for partition in partitions:
        for rows in iter_row_batches(wh, "split_traces", partition,
                                     keep=lambda batch: pc.equal(batch.column("pool"), "train")):
            yield from rows


def _problems_by_key(warehouse: WarehouseResource) -> dict[str, dict]:
    return {problem_key(p): p for p in warehouse.pool_problems()}


def _catalogue(warehouse: WarehouseResource):
    from oro_assets.arena.catalogue import Catalogue

    return Catalogue.from_jsonl(warehouse.layout.world_catalogue)


def _dataset_result(wh, rows: list[dict], name: str, partitions: list[str], preview_keys: list[str]) -> dg.MaterializeResult:
    info = export_dataset(rows, wh.root, name)
    preview = [{k: (str(r.get(k))[:80]) for k in preview_keys} for r in rows[:5]]
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": info["rows"],
            "dagster/uri": dg.MetadataValue.path(info["parquet"]),
            "jsonl": dg.MetadataValue.path(info["jsonl"]),
            "sha256": info["sha256"],
            "partitions": dg.MetadataValue.json(partitions),
            "preview": dg.MetadataValue.md(markdown_table(preview)),
        },
        data_version=dg.DataVersion(info["sha256"][:16]),
    )


def _trace_dataset(config: DatasetWindowConfig, warehouse: WarehouseResource, name: str, build,
                   preview_keys: list[str]) -> dg.MaterializeResult:
    """A dataset of curated traces over the window, labelled by production-strict success."""
    wh = warehouse.warehouse
    partitions = _window_partitions(wh, config.window_days)
    success = strict_success_fn(_problems_by_key(warehouse), _catalogue(warehouse))
    return _dataset_result(wh, build(_train_rows(wh, partitions), success), name, partitions, preview_keys)


DATASET = dict(group_name="curation", owners=[OWNER_DATA], kinds={"python", "parquet", "jsonl"},
               freshness_policy=DATASET_FRESHNESS)


@dg.asset(
    **DATASET,
    deps=["split_traces", "problem_pool", "arena_world"],
    description="SFT rows {id, messages, tools, source}: train pool, kept, production-strict successful; over the partition window.",
    code_version=code_version(sft_rows, strict_success_fn),
)
def sft_dataset(config: DatasetWindowConfig, warehouse: WarehouseResource) -> dg.MaterializeResult:
    return _trace_dataset(config, warehouse, "sft_dataset", sft_rows, ["id", "source"])


@dg.asset(
    **DATASET,
    deps=["split_traces", "problem_pool", "arena_world"],
    description="KTO rows {id, messages, tools, source, label}: train pool, desirable = production-strict success.",
    code_version=code_version(kto_rows, strict_success_fn),
)
def kto_dataset(config: DatasetWindowConfig, warehouse: WarehouseResource) -> dg.MaterializeResult:
    return _trace_dataset(config, warehouse, "kto_dataset", kto_rows, ["id", "label", "source"])


@dg.asset(
    **DATASET,
    deps=["leak_clusters", "problem_pool", "arena_world"],
    description=(
        "RL prompts for Dr. GRPO: per step of the teacher's trajectory on each train-pool problem, the prompt "
        "(messages so far), the teacher's next step and the reward spec."
    ),
    code_version=code_version(rl_prompts_from_registry, rl_prompt_rows),
)
def rl_prompts(config: DatasetWindowConfig, warehouse: WarehouseResource) -> dg.MaterializeResult:
    rows = rl_prompts_from_registry(warehouse.registry(), _problems_by_key(warehouse), _catalogue(warehouse),
                                    config.max_teacher_problems)
    return _dataset_result(warehouse.warehouse, rows, "rl_prompts", [], ["id", "problem_id", "step"])


@dg.asset(
    **DATASET,
    deps=["leak_clusters", "problem_pool"],
    description="The leak-guarded hold-out: held-out problems (dev and test sides) with reward specs, cluster ids and pool.",
    code_version=code_version(eval_problem_rows),
)
def eval_problems(warehouse: WarehouseResource) -> dg.MaterializeResult:
    rows = eval_problem_rows(warehouse.registry(), _problems_by_key(warehouse))
    return _dataset_result(warehouse.warehouse, rows, "eval_problems", [],
                           ["problem_id", "pool", "category", "difficulty", "query"])
