"""``oro-assets clusters``, ``oro-assets lineage`` and ``oro-assets export``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from oro_assets import jsonio


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "clusters",
        help="show the leak cluster and pool of each problem in benchmark files (read-only)",
        description="Read problems (ORO suite JSON/JSONL, ShoppingBench JSONL, simulator problems.jsonl) and print one "
        "JSON line per problem: query, problem_id, cluster_id, pool, status. With --registry the clusters already "
        "assigned there are used (the registry file is never written); without it, a fresh registry.",
    )
    p.add_argument("--problems", nargs="+", required=True, metavar="FILE", help="problem files or folders")
    p.add_argument(
        "--registry",
        metavar="DIR",
        help="state directory holding leak_clusters/registry.parquet (or the file)",
    )
    p.set_defaults(func=_clusters, needs_settings=False)

    q = subparsers.add_parser(
        "lineage",
        help="print the whole story of one trace or dataset example",
        description="Raw file:line and partition, format, structural label and evidence, gate results and judge "
        "score, dedup decision, leak cluster with siblings, pool, datasets, checkpoints and MLflow runs.",
    )
    q.add_argument("record_id", help="trace id (tr_...) or dataset example id")
    q.add_argument("--warehouse", metavar="DIR", help="warehouse directory (default: ORO_DATA_DIR/warehouse)")
    q.add_argument(
        "--checkpoints", metavar="DIR", help="checkpoints directory (default: ORO_DATA_DIR/checkpoints)"
    )
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_lineage)

    e = subparsers.add_parser(
        "export",
        help="write the curated corpus of a day range as a Hugging Face dataset folder",
        description="The kept traces of the curated days START..END (inclusive), split train / eval by leak cluster, "
        "as DIR/data/<split>-00000-of-00001.parquet plus a dataset card DIR/README.md; load it with "
        'datasets.load_dataset("parquet", data_files=...) or datasets.load_dataset(DIR).',
    )
    e.add_argument("--start", required=True, metavar="YYYY-MM-DD", help="first day of the range")
    e.add_argument("--end", required=True, metavar="YYYY-MM-DD", help="last day of the range")
    e.add_argument("--out", required=True, metavar="DIR", help="output folder (created; its card and shards replaced)")
    e.add_argument("--warehouse", metavar="DIR", help="data directory holding warehouse/ (default: ORO_DATA_DIR)")
    e.add_argument("--license", default=None, metavar="ID", help="the card's license field (default: unknown)")
    e.set_defaults(func=_export)


def _clusters(args: argparse.Namespace) -> int:
    from oro_assets.arena.problems import ProblemFormatError, load_problems
    from oro_assets.curation.clusters import ASSIGNED, Registry, problem_key

    try:
        problems = load_problems(args.problems)
    except ProblemFormatError as exc:
        print(f"oro-assets clusters: {exc}", file=sys.stderr)
        return 2
    state = None
    if args.registry:
        path = Path(args.registry)
        if path.suffix == ".parquet":  # the registry file itself: its state dir is two levels up
            path = path.parent.parent
        from oro_assets.curation.clusters import registry_path

        if not registry_path(path).exists():
            print(f"oro-assets clusters: no registry at {registry_path(path)}", file=sys.stderr)
            return 2
        state = path
    try:
        registry = Registry.load(state)
    except (ValueError, OSError) as exc:
        print(f"oro-assets clusters: cannot read registry: {exc}", file=sys.stderr)
        return 2
    registry.assign(problems, first_seen="cli")  # in memory only; never saved
    for p in problems:
        m = registry.lookup(problem_key(p))
        line = {
            "query": p["query"],
            "problem_id": p.get("problem_id"),
            "cluster_id": m["cluster_id"],
            "pool": m["pool"],
            "status": m["status"],
        }
        if m["status"] != ASSIGNED:
            line["conflict_clusters"] = jsonio.loads(m["conflict_clusters"])
        print(jsonio.dumps(line))
    return 0


def _lineage(args: argparse.Namespace) -> int:
    from oro_assets.ops.lineage import RecordNotFound, explain, format_explanation

    warehouse, checkpoints = args.warehouse, args.checkpoints
    if warehouse is None or checkpoints is None:
        from oro_assets.settings import load_settings

        settings = load_settings()
        warehouse = warehouse or settings.warehouse_dir
        checkpoints = checkpoints or settings.checkpoints_dir
    try:
        story = explain(args.record_id, warehouse, checkpoints)
    except RecordNotFound as exc:
        print(f"oro-assets lineage: {exc}", file=sys.stderr)
        return 1
    print(jsonio.dumps(story) if args.json else format_explanation(story))
    return 0


def _export(args: argparse.Namespace) -> int:
    from oro_assets.curation.export import DEFAULT_LICENSE, ExportError, export_corpus
    from oro_assets.storage import StorageError, Warehouse

    if args.warehouse is None:
        from oro_assets.settings import load_settings

        data_dir = load_settings().data_dir
    else:
        data_dir = Path(args.warehouse)
    try:
        result = export_corpus(Warehouse(data_dir), args.start, args.end, args.out,
                               license=args.license or DEFAULT_LICENSE)
    except (ExportError, StorageError, OSError) as exc:
        print(f"oro-assets export: {exc}", file=sys.stderr)
        return 2
    print(jsonio.dumps(result.to_dict()))
    return 0
