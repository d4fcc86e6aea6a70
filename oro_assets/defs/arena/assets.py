"""Arena assets: the problem pool and catalogue every downstream stage scores against."""


from pathlib import Path

import dagster as dg
import pyarrow as pa

from oro_assets import jsonio
from oro_assets.arena.problems import load_problems, problem_ground_truth_ids
from oro_assets.defs.common import OWNER_DATA, code_version, table_metadata
from oro_assets.defs.resources import FirehoseSource, WarehouseResource
from oro_assets.storage import write_jsonl


def _problem_sources(firehose: FirehoseSource) -> list[str]:
    if firehose.problems:
        return list(firehose.problems)
    beside = Path(firehose.root()) / "problems.jsonl"
    if beside.exists():
        return [str(beside)]
    from oro_assets.arena.problems import embedded_problem_files

    return [str(p) for p in embedded_problem_files()]


@dg.asset(
    group_name="arena",
    owners=[OWNER_DATA],
    kinds={"python", "jsonl"},
    description=(
        "The arena's problem files and product catalogue. Embedded default: the deterministic simulated world "
        "(problems with leak variants + a catalogue with ground truth, near-miss distractors and background). "
        "With ORO_FIREHOSE_DIR/ORO_PROBLEMS: the real problem files, and `catalogue.jsonl` beside the firehose "
        "days or a catalogue built around the problems so they are playable."
    ),
    code_version=code_version(load_problems),
)
def arena_world(context: dg.AssetExecutionContext, warehouse: WarehouseResource, firehose: FirehoseSource) -> dg.MaterializeResult:
    from oro_assets.arena.catalogue import Catalogue
    from oro_assets.arena.firehose import default_world, write_world
    from oro_assets.arena.generator import build_catalogue_for_problems

    problems_path, catalogue_path = warehouse.layout.world_files
    if firehose.embedded and not firehose.problems:
        world = default_world(firehose.seed)
        write_world(world, firehose.root())  # the simulator reads/writes the same world beside its days
        problems, catalogue = world.problems, world.catalogue
        source = f"embedded simulator world (seed {firehose.seed})"
    else:
        sources = _problem_sources(firehose)
        problems = load_problems(sources)
        beside = Path(firehose.root()) / "catalogue.jsonl"
        if beside.exists():
            catalogue = Catalogue.from_jsonl(beside)
            source = f"{', '.join(sources)} + {beside}"
        else:
            catalogue = build_catalogue_for_problems(problems, seed=firehose.seed)
            source = f"{', '.join(sources)} + catalogue built around them"
    write_jsonl(problems, problems_path)
    catalogue_path.parent.mkdir(parents=True, exist_ok=True)
    catalogue.to_jsonl(catalogue_path)
    pool_hash = jsonio.content_hash(problems)
    context.log.info(f"{len(problems)} problems, {len(catalogue)} products from {source}")
    return dg.MaterializeResult(
        metadata={
            "problems": len(problems),
            "products": len(catalogue),
            "source": source,
            "problems_file": dg.MetadataValue.path(str(problems_path)),
            "catalogue_file": dg.MetadataValue.path(str(catalogue_path)),
        },
        data_version=dg.DataVersion(pool_hash[:16]),
    )


POOL_SCHEMA = pa.schema(
    [
        ("problem_id", pa.string()),
        ("query", pa.string()),
        ("category", pa.string()),
        ("difficulty", pa.string()),
        ("title", pa.string()),
        ("source", pa.string()),
        ("reward", pa.string()),
        ("voucher", pa.string()),
        ("ground_truth_ids", pa.list_(pa.string())),
        ("content_hash", pa.string()),
    ]
)


def problems_table(problems: list[dict]) -> pa.Table:
    rows = [
        {
            "problem_id": p["problem_id"],
            "query": p.get("query", ""),
            "category": p.get("category"),
            "difficulty": p.get("difficulty"),
            "title": p.get("title"),
            "source": p.get("source"),
            "reward": jsonio.dumps(p.get("reward")),
            "voucher": jsonio.dumps(p["voucher"]) if p.get("voucher") else None,
            "ground_truth_ids": problem_ground_truth_ids(p),
            "content_hash": jsonio.content_hash(p)[:16],
        }
        for p in problems
    ]
    return pa.Table.from_pylist(rows, schema=POOL_SCHEMA)


@dg.asset(
    group_name="arena",
    owners=[OWNER_DATA],
    kinds={"python", "parquet"},
    deps=[arena_world],
    description="Every known problem with its reward spec (one row per problem), versioned by content hash.",
    code_version=code_version(problems_table),
)
def problem_pool(context: dg.AssetExecutionContext, warehouse: WarehouseResource) -> dg.MaterializeResult:
    problems = load_problems([warehouse.layout.world_problems])
    table = problems_table(problems)
    path = warehouse.warehouse.write(table, "problem_pool")
    version = jsonio.content_hash(table.column("content_hash").to_pylist())[:16]
    by_category: dict[str, int] = {}
    for category in table.column("category").to_pylist():
        by_category[str(category)] = by_category.get(str(category), 0) + 1
    return dg.MaterializeResult(
        metadata={**table_metadata(table, path, preview_columns=["problem_id", "category", "difficulty", "query"]),
                  "pool_version": version, "by_category": by_category},
        data_version=dg.DataVersion(version),
    )
