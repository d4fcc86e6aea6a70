"""The ``oro-assets`` console script. Each subcommand delegates to one domain function."""

from __future__ import annotations

import argparse
import importlib
import sys

from oro_assets.settings import SettingsError, load_settings

# Modules that contribute subcommands through ``register(subparsers)``.
_SUBCOMMAND_MODULES = (
    "oro_assets.arena.sim_cli",  # simulate
    "oro_assets.arena.cli",  # arena serve, score
    "oro_assets.judge.cli",  # judge
    "oro_assets.curation.cli",  # clusters, lineage, export
    "oro_assets.evaluation.cli",  # eval
    "oro_assets.ops.cli",  # main, materialize, backfill, config
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="oro-assets",
        description="ORO SN15 trajectory firehose -> curated training data -> distilled model, as Dagster assets.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _SUBCOMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        if getattr(args, "needs_settings", True):
            load_settings()  # fail fast, with one clear line, on bad configuration
        return int(args.func(args) or 0)
    except SettingsError as exc:
        print(f"oro-assets: configuration error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
