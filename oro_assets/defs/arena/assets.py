"""Arena assets: the problem pool and catalogue every downstream stage scores against."""

import dagster as dg

from oro_assets import jsonio
from oro_assets.arena.problems import load_problems
from oro_assets.arena.world_source import assemble_world, problems_table
from oro_assets.defs.common import OWNER_DATA, code_version, table_metadata
from oro_assets.defs.resources import FirehoseSource, WarehouseResource
from oro_assets.storage import write_jsonl


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
    code_version=code_version(assemble_world),
)
def arena_world(context: dg.AssetExecutionContext, warehouse: WarehouseResource, firehose: FirehoseSource) -> dg.MaterializeResult:
    problems_path, catalogue_path = warehouse.layout.world_files
    problems, catalogue, source = assemble_world(embedded=firehose.embedded, seed=firehose.seed,
                                                 problem_files=list(firehose.problems or ()),
                                                 firehose_root=firehose.root())
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
