"""The curated corpus of the window's days as a Hugging Face dataset folder (``curation.export``), on demand."""

import dagster as dg

from oro_assets import jsonio
from oro_assets.curation.datasets import window_partitions
from oro_assets.curation.export import DEFAULT_LICENSE, ExportError, export_corpus
from oro_assets.defs.common import OWNER_DATA, code_version
from oro_assets.defs.resources import WarehouseResource
from oro_assets.storage import file_sha256


class CorpusConfig(dg.Config):
    """Which curated days are exported (the ``window_days`` up to the newest) and the card's license field."""

    window_days: int = 30
    license: str = DEFAULT_LICENSE


@dg.asset(
    group_name="curation",
    owners=[OWNER_DATA],
    kinds={"python", "parquet"},
    deps=["split_traces", "trace_ledger"],
    description=(
        "The kept traces of the window's curated days as a Hugging Face dataset folder (<data>/corpus): "
        "data/{train,eval}-00000-of-00001.parquet split by leak cluster (eval: the held-out pool's dev side; its "
        "locked test side and never_touch withheld), and a dataset card README.md with features, splits, license, "
        "the funnel, the reason-code table and the provenance columns. "
        "Not part of the main job; `oro-assets export --start --end --out` writes any day range."
    ),
    code_version=code_version(export_corpus),
)
def curated_corpus(config: CorpusConfig, warehouse: WarehouseResource) -> dg.MaterializeResult:
    wh = warehouse.warehouse
    days = wh.partitions("split_traces")
    if not days:
        raise dg.Failure("no curated day to export: materialise curation_job first")
    window = window_partitions(days, days[-1], config.window_days)
    try:
        result = export_corpus(wh, window[0], window[-1], warehouse.layout.corpus, license=config.license,
                               skip_uncurated=True)
    except ExportError as exc:
        raise dg.Failure(str(exc)) from None
    digests = [file_sha256(result.files[name]) for name in ("train", "eval", "card")]
    return dg.MaterializeResult(
        metadata={
            "dagster/uri": dg.MetadataValue.path(str(result.out_dir)),
            "dagster/row_count": sum(result.rows.values()),
            "rows": dg.MetadataValue.json(result.rows),
            "partitions": dg.MetadataValue.json(result.partitions),
            "skipped_days": dg.MetadataValue.json(result.skipped),
            "withheld": dg.MetadataValue.json(result.withheld),
            "repeated_trace_ids": result.repeated,
            "reason_counts": dg.MetadataValue.json(result.reason_counts),
            "card": dg.MetadataValue.path(str(result.files["card"])),
        },
        data_version=dg.DataVersion(jsonio.content_hash(digests)[:16]),
    )
