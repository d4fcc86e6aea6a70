"""Importers for the real problem files (thin, explicit wrappers over ``problems.load_problem_file``).

* ORO suite JSON: a list of ``{query, reward, category, difficulty, title, voucher?,
  reward_title_embeddings?}``; the embeddings (1024 floats per title) are dropped unless asked for.
* ShoppingBench test JSONL: ``{query, reward}`` rows; category ``Product``, difficulty ``unknown``.
Both get ``problem_id = "p_" + sha256(canonical({query, reward}))[:16]`` and a ``source``.
"""

from __future__ import annotations

from pathlib import Path

from oro_assets.arena.problems import EMBEDDED_DATA_DIR, ProblemFormatError, load_problem_file


def import_oro_suite(path: str | Path, *, keep_embeddings: bool = False) -> list[dict]:
    problems = load_problem_file(path, keep_embeddings=keep_embeddings)
    if not str(Path(path)).endswith(".json"):
        raise ProblemFormatError(f"{path}: an ORO suite is a .json list")
    return problems


def import_shoppingbench(path: str | Path) -> list[dict]:
    problems = load_problem_file(path)
    for p in problems:
        p["source"] = "shoppingbench_test"
    return problems


def embedded_oro_suites() -> dict[str, list[dict]]:
    """{"v1": [...], "v2": [...], "v3": [...]} from the copies shipped in ``arena/data``."""
    return {f.stem.rsplit("_", 1)[-1]: import_oro_suite(f) for f in sorted((EMBEDDED_DATA_DIR / "oro_suites").glob("*.json"))}


def embedded_shoppingbench() -> list[dict]:
    return import_shoppingbench(EMBEDDED_DATA_DIR / "shoppingbench" / "shoppingbench_product_test.jsonl")
