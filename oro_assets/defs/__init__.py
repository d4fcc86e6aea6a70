"""Dagster wiring only: assets, checks, resources, jobs, schedules and sensors per concern.

Domain logic lives in ``oro_assets/<domain>/``; modules here call it and report metadata.
"""
