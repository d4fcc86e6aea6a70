"""The code location's executor: Dagster's multi-or-in-process executor with at most one training step at a time in
a multiprocess run, for a run from the CLI and one launched from the UI alike.

A trainer takes every core its profile names (torch_threads) or the one GPU. A final-report run started sft and its
scaffold arm side by side on a 2-core machine, 4 threads on 2 cores: 51 min for the pair where sft alone takes ~8
(world 202, 2026-12-04). Evaluations still run beside the next training stage.
"""

import dagster as dg

TRAINING_STEP_LIMIT = {"key": "oro/kind", "value": "training", "limit": 1}


def with_training_step_limit(config: dict) -> dict:
    """The executor config with the training-step limit added to a multiprocess run (in-process runs one step at a
    time anyway); a limit of its own on the same tag is kept."""
    multi = config.get("multiprocess")
    if multi is None:
        return config
    limits = list(multi.get("tag_concurrency_limits") or [])
    if not any(lim.get("key") == TRAINING_STEP_LIMIT["key"] and lim.get("value") == TRAINING_STEP_LIMIT["value"]
               for lim in limits):
        limits.append(dict(TRAINING_STEP_LIMIT))
    return {"multiprocess": {**multi, "tag_concurrency_limits": limits}}


oro_executor = dg.multi_or_in_process_executor.configured(
    with_training_step_limit, config_schema=dg.multi_or_in_process_executor.config_schema)


@dg.definitions
def executor() -> dg.Definitions:
    return dg.Definitions(executor=oro_executor)
