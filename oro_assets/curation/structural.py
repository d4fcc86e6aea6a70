"""Structural filter (reference §5.2): is the model itself driving the tools?

The harness writes each step's ``content`` from the parsed calls, so it proves nothing. The
evidence is the inference responses bucketed onto each step (``steps[i].inference``): an
**agentic** step has an inference response that carries the step's tool calls; a **sub-task**
trace has a deterministic loop calling the tools while the model only classifies or narrates;
a **no-inference** trace never called a model at all (a scripted agent).

Secondary evidence, recorded and used only when the responses are inconclusive (truncated
bodies): the user query copied verbatim into ``find_product(q=...)`` and the step-shape regularity
of scripted loops.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from oro_assets.curation._rows import (
    FIND,
    StageResult,
    StageStats,
    arguments_dict,
    as_rows,
    modal_share,
    rejected_row,
    steps_of,
)
from oro_assets.curation.reasons import ReasonCode, Stage
from oro_assets.traces.formats import inference_succeeded

AGENTIC = "agentic"
SUBTASK = "subtask"
NO_INFERENCE = "no_inference"

#: share of tool-calling steps whose calls an inference response carried, from which a trace is agentic
DEFAULT_CARRIED_THRESHOLD = 0.5
_WS = re.compile(r"\s+")
_NO_PROXY_FORMATS = ("shoppingbench_rollout", "openai_messages")


def _norm_text(text: Any) -> str:
    # str.split() splits on exactly the characters ``\s`` matches (str.isspace), ~3x faster than re.sub
    return " ".join(str(text or "").split()).lower()


def _step_evidence(step: dict) -> dict:
    calls = step.get("tool_calls") or ()
    names = [c.get("name") for c in calls]
    # successful inference calls: no status recorded, or 2xx
    inferences = [e for e in step.get("inference") or () if inference_succeeded(e.get("status_code"))]
    matched_args: bool | None = None
    if not names:
        verdict = "no_calls"
    else:
        verdict = "not_carried"
        want = sorted(map(str, names))
        for entry in inferences:
            carried_names = entry.get("tool_call_names") or ()
            if len(carried_names) == len(want) and sorted(map(str, carried_names)) == want:
                verdict = "carried"
                # Argument comparison when the response kept them (not part of the minimal contract).
                carried_calls = entry.get("tool_calls")
                if isinstance(carried_calls, list) and len(carried_calls) == len(names):
                    got = sorted((c.get("name"), str(arguments_dict(c.get("arguments")))) for c in carried_calls)
                    exp = sorted((c.get("name"), str(arguments_dict(c.get("arguments")))) for c in calls)
                    matched_args = got == exp
                    if not matched_args:
                        verdict = "names_only"
                break
            if not carried_names and entry.get("truncated"):
                content = str(entry.get("content") or "")
                if any(n and n in content for n in want):
                    verdict = "uncertain"  # the body was cut before the tool calls could be read
    return {
        "step": step.get("step"),
        "tool_call_names": names,
        "n_inference": len(inferences),
        "verdict": verdict,
        "args_match": matched_args,
    }


def _copies_query(target: str, calls: Iterable[dict]) -> bool:
    """True when some find_product ``q`` among ``calls`` is exactly ``target`` (copied by code)."""
    for call in calls:
        if call.get("name") == FIND:
            args = arguments_dict(call.get("arguments")) or {}
            if _norm_text(args.get("q")) == target:
                return True
    return False


def label_structural(row: dict, carried_threshold: float = DEFAULT_CARRIED_THRESHOLD) -> tuple[str, dict]:
    """Label one normalised trace ``agentic`` / ``subtask`` / ``no_inference`` with its evidence.

    One pass over the steps gathers the per-step verdicts, the verbatim-query check (some
    find_product ``q`` equal to the user query), the step shapes for the regularity share and
    whether any proxy evidence exists."""
    steps = steps_of(row)
    target = _norm_text(row.get("query"))
    per_step = []
    shapes: list[tuple] = []
    n_inference = n_tool_steps = carried = uncertain = 0
    verbatim = has_proxy_evidence = False
    for step in steps:
        e = _step_evidence(step)
        per_step.append(e)
        n_inference += e["n_inference"]
        verdict = e["verdict"]
        if verdict != "no_calls":
            n_tool_steps += 1
            shapes.append(tuple(e["tool_call_names"]))
            if verdict == "carried":
                carried += 1
            elif verdict == "uncertain":
                uncertain += 1
            if target and not verbatim:
                verbatim = _copies_query(target, step["tool_calls"])
        if not has_proxy_evidence and (step.get("inference") or step.get("search")):
            has_proxy_evidence = True
    regularity = modal_share(shapes)
    carried_frac = carried / n_tool_steps if n_tool_steps else 0.0
    scripted_shape = verbatim and regularity >= 0.8

    if n_inference == 0 and not has_proxy_evidence and row.get("format") in _NO_PROXY_FORMATS:
        # ShoppingBench rollouts and OpenAI rows never carry proxy evidence: they are model
        # rollouts by construction. The reasoning judge still sees no inference evidence.
        label, why = AGENTIC, f"format {row.get('format')} carries no proxy evidence; model rollout assumed"
    elif n_inference == 0:
        label, why = NO_INFERENCE, "no successful inference call on any step"
    elif n_tool_steps == 0:
        label, why = AGENTIC, "inference present but no tool calls to attribute"
    elif carried_frac >= carried_threshold:
        label, why = AGENTIC, f"{carried}/{n_tool_steps} tool steps carried by an inference response"
    elif (carried + uncertain) / n_tool_steps >= carried_threshold and not scripted_shape:
        label, why = AGENTIC, f"{carried} carried + {uncertain} truncated responses naming the calls"
    else:
        label = SUBTASK
        why = f"only {carried}/{n_tool_steps} tool steps carried by an inference response"
        if scripted_shape:
            why += "; query copied verbatim into find_product and regular step shape"
    evidence = {
        "reason": why,
        "n_steps": len(steps),
        "n_tool_steps": n_tool_steps,
        "n_inference": n_inference,
        "proxy_evidence": has_proxy_evidence,
        "carried_steps": carried,
        "uncertain_steps": uncertain,
        "carried_fraction": round(carried_frac, 4),
        "query_copied_verbatim": verbatim,
        "step_shape_regularity": round(regularity, 4),
        "steps": per_step,
    }
    return label, evidence


def structural_filter(
    rows: Iterable[dict], carried_threshold: float = DEFAULT_CARRIED_THRESHOLD
) -> tuple[StageResult, list[dict], list[dict]]:
    """Run the structural filter over normalised rows.

    Returns ``(StageResult(kept, rejected, stats), subtask_rows, label_rows)``: kept rows are the
    agentic traces with ``structural_label``; ``subtask_rows`` are the sub-task traces themselves
    (for ``subtask_traces``; they are also in ``rejected`` with SUBTASK so the ledger stays
    complete); ``label_rows`` is one ``{trace_id, partition, label, evidence}`` row per input
    (the ``structural_labels`` asset; evidence is a JSON string).
    """
    from oro_assets import jsonio

    stats = StageStats(str(Stage.STRUCTURAL))
    kept: list[dict] = []
    rejected: list[dict] = []
    subtasks: list[dict] = []
    labels: list[dict] = []
    label_counts: Counter = Counter()
    for row in as_rows(rows):
        stats.seen += 1
        label, evidence = label_structural(row, carried_threshold)
        label_counts[label] += 1
        labels.append(
            {
                "trace_id": row.get("trace_id"),
                "partition": row.get("partition"),
                "label": label,
                "evidence": jsonio.dumps(evidence),
            }
        )
        n_calls = row.get("n_tool_calls")
        if n_calls is None:
            n_calls = sum(len(s["tool_call_names"]) for s in evidence["steps"])
        out = {**row, "structural_label": label}
        if label == NO_INFERENCE:
            reason, detail = ReasonCode.NO_INFERENCE, evidence["reason"]
        elif n_calls == 0:
            reason, detail = ReasonCode.NO_TOOL_CALLS, "the trajectory never calls a tool"
        elif label == SUBTASK:
            reason, detail = ReasonCode.SUBTASK, evidence["reason"]
            subtasks.append(out)
        else:
            stats.kept += 1
            kept.append(out)
            continue
        stats.rejected[str(reason)] += 1
        rejected.append(rejected_row(row, Stage.STRUCTURAL, reason, detail))
    stats.extra["labels"] = dict(sorted(label_counts.items()))
    return StageResult(kept, rejected, stats.as_dict()), subtasks, labels
