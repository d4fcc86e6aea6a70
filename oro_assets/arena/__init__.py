"""Embedded arena: problems, catalogue, BM25 search, tools, environments, scorer, miner population.

Plain Python (no Dagster). Import submodules directly, e.g. ``from oro_assets.arena.scoring import score_trace``.
"""
