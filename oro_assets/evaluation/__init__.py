"""Evaluation: rollouts on eval problems, metrics (ASR, CI, pass@k, process), report + plots (no Dagster)."""
