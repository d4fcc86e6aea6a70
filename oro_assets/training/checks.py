"""Checkpoint checks (wired as Dagster asset checks by the lead; plain functions here).

* ``check_loss``: every logged loss finite, and the end of training lower than the start.
* ``check_reload_tool_call``: the checkpoint reloads and, given an arena prompt, emits a parseable tool call.
* ``check_weights_changed``: training changed the weights it started from (a stage that did not is a no-op).
* ``check_manifest_disjoint``: no example id / problem id of the checkpoint (and its ancestors) is in the eval pool.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oro_assets import jsonio
from oro_assets.training import checkpoints as ck


@dataclass
class CheckOutcome:
    name: str
    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)


def check_loss(path: str | Path, window: int = 3) -> CheckOutcome:
    """Mean of the last ``window`` losses below the mean of the first ``window``; all finite."""
    metrics = jsonio.loads_lenient((Path(path) / "metrics.json").read_text())
    losses = [h["loss"] for h in metrics.get("history", []) if "loss" in h]
    if not losses:
        return CheckOutcome("loss_decreased", False, "no loss was logged")
    if not all(math.isfinite(x) for x in losses):
        return CheckOutcome("loss_decreased", False, "non-finite loss logged", {"losses": losses[:50]})
    w = max(1, min(window, len(losses) // 2 or 1))
    start, end = sum(losses[:w]) / w, sum(losses[-w:]) / w
    ok = len(losses) >= 2 and end < start
    return CheckOutcome("loss_decreased", ok, f"loss {start:.4f} -> {end:.4f} over {len(losses)} logged steps",
                        {"loss_start": start, "loss_end": end, "steps": len(losses)})


def check_weights_changed(path: str | Path) -> CheckOutcome:
    """The stage's training changed the weights it started from; a checkpoint that does not say fails."""
    metrics = jsonio.loads_lenient((Path(path) / "metrics.json").read_text())
    changed = metrics.get("weights_changed")
    if changed is None:
        return CheckOutcome("weights_changed", False, "the checkpoint does not record whether its weights changed "
                            "(trained before it was recorded: retrain it)")
    detail = {"steps": metrics.get("steps")}
    if changed:
        return CheckOutcome("weights_changed", True, "training changed the weights it started from", detail)
    return CheckOutcome("weights_changed", False, "every weight is as the parent left it: the stage is a no-op",
                        detail)


def arena_probe_messages(query: str = "Find me a red cotton shirt priced between 100 and 300 pesos.") -> list[dict]:
    from oro_assets.arena.episode import SYSTEM_PROMPT

    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": query}]


def check_reload_tool_call(path: str | Path, query: str | None = None, tools: list[dict] | None = None,
                           max_new_tokens: int = 96) -> CheckOutcome:
    """Reload the checkpoint through ``load_policy`` (greedy) and parse one turn for an arena prompt."""
    if tools is None:
        from oro_assets.arena.tools import TOOL_SCHEMAS

        tools = TOOL_SCHEMAS
    policy = ck.load_policy(path, temperature=0.0, max_new_tokens=max_new_tokens)
    view = {"problem_id": "probe", "query": query or "probe"}
    turn = policy.act(view, arena_probe_messages(query) if query else arena_probe_messages(), tools)
    record = (turn.inference or [{}])[0]
    errors = record.get("parse_errors", [])
    names = [c.name for c in turn.tool_calls]
    ok = bool(turn.tool_calls) and all(c.raw_arguments is None for c in turn.tool_calls if hasattr(c, "raw_arguments"))
    text = ((record.get("choices") or [{}])[0].get("message") or {}).get("content", "")
    return CheckOutcome("reload_emits_tool_call", ok,
                        f"tool calls {names}" if ok else "no parseable tool call in the reloaded model's output",
                        {"tool_calls": names, "parse_errors": errors, "output": str(text)[:500]})


def check_manifest_disjoint(path: str | Path, eval_problem_ids: Iterable[str],
                            eval_example_ids: Iterable[str] = ()) -> CheckOutcome:
    """The checkpoint's lineage (it and its ancestors) never trained on an eval-pool problem or example.

    Fails when there is nothing to check against (no eval problem id): an empty eval list means the eval
    pool was not read, and a blocking check that passes then would guard nothing."""
    eval_problem_ids = sorted(set(map(str, eval_problem_ids)))
    if not eval_problem_ids:
        return CheckOutcome("manifest_disjoint_from_eval", False,
                            "no eval problem ids to check the training manifest against (eval pool missing or empty)",
                            {"eval_problems": 0})
    examples, problems = ck.lineage_manifest(path)
    bad_p = sorted(set(problems) & set(eval_problem_ids))
    bad_e = sorted(set(examples) & set(map(str, eval_example_ids)))
    ok = not bad_p and not bad_e
    return CheckOutcome("manifest_disjoint_from_eval", ok,
                        "manifest disjoint from the eval pool" if ok
                        else f"{len(bad_p)} eval problems and {len(bad_e)} eval examples in the training manifest",
                        {"overlap_problems": bad_p[:20], "overlap_examples": bad_e[:20],
                         "manifest_examples": len(examples), "manifest_problems": len(problems),
                         "eval_problems": len(eval_problem_ids)})
