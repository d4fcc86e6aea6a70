"""Where the arena's world comes from, and the problem pool as a table (what the arena assets write).

The embedded default is the deterministic simulated world; with problem files (``ORO_PROBLEMS``, or
``problems.jsonl`` beside the firehose days) the world is those problems and ``catalogue.jsonl`` beside
the days, or a catalogue built around the problems so they are playable.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from oro_assets import jsonio
from oro_assets.arena.problems import embedded_problem_files, load_problems, problem_ground_truth_ids

if TYPE_CHECKING:
    from oro_assets.arena.catalogue import Catalogue

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


def problem_sources(problem_files: Sequence[str], firehose_root: str | Path) -> list[str]:
    """The problem files of a world: those given, else ``problems.jsonl`` beside the days, else the embedded ones."""
    if problem_files:
        return list(problem_files)
    beside = Path(firehose_root) / "problems.jsonl"
    if beside.exists():
        return [str(beside)]
    return [str(p) for p in embedded_problem_files()]


def assemble_world(*, embedded: bool, seed: int, problem_files: Sequence[str],
                   firehose_root: str | Path) -> tuple[list[dict], Catalogue, str]:
    """(problems, catalogue, a line saying where they came from). The embedded simulator's world is written
    beside its days, since the simulator reads and writes the same world there."""
    from oro_assets.arena.catalogue import Catalogue
    from oro_assets.arena.firehose import default_world, write_world
    from oro_assets.arena.generator import build_catalogue_for_problems

    if embedded and not problem_files:
        world = default_world(seed)
        write_world(world, firehose_root)
        return world.problems, world.catalogue, f"embedded simulator world (seed {seed})"
    sources = problem_sources(problem_files, firehose_root)
    problems = load_problems(sources)
    beside = Path(firehose_root) / "catalogue.jsonl"
    if beside.exists():
        return problems, Catalogue.from_jsonl(beside), f"{', '.join(sources)} + {beside}"
    catalogue = build_catalogue_for_problems(problems, seed=seed)
    return problems, catalogue, f"{', '.join(sources)} + catalogue built around them"


def problems_table(problems: list[dict]) -> pa.Table:
    """The problem pool, one row per problem (``POOL_SCHEMA``), each with its content hash."""
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
