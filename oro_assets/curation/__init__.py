"""Curation: structural filter, gates, dedup + ranking, leak clusters + split, datasets, ledger, lineage.

Each stage is a pure function over normalised rows returning ``(kept, rejected, stats)``;
``pipeline.curate_partition`` chains them. No Dagster imports here.
"""
