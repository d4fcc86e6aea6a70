"""Structural filter (reference §5.2): is the model itself driving the tools?

The harness re-renders each step's ``content`` from the parsed calls, so it proves nothing. The
evidence is the inference calls made *for* each step (normalisation re-derives them from the
step stamps, traces/calls.py) and what their answers said:

* **carried** — an answer in the step's window holds the step's calls (names and canonical
  arguments; structured ``tool_calls`` or text tags alike);
* **against** — a step whose window has no inference at all (code made the call), an answer
  kept whole that holds no call or other calls, or a dropped body too short to hold the step's
  thinking and calls;
* **dropped** — every answer in the window lost its body (ORO keeps none over 2,000
  characters): only its length is left, which is consistent with the model having written the
  step.

Decision (first rule that applies; the evidence names it): no successful inference on any step →
``no_inference``; carried ≥ against and carried > 0 → ``agentic`` (rule ``carried``); any against
→ ``subtask`` (rule ``against``); only dropped windows left → ``subtask`` when the query is copied
verbatim into ``find_product`` or several answers share one step's window with a regular step
shape (a classifying loop), else ``agentic`` (rule ``dropped_consistent``). A code-made
auto-recommend step is never counted for or against.

Beside the label, every record with proxy calls carries ORO's own measure, ``agentic_richness``
(``traces/calls.oro_agentic_richness``): the share of catalogue dispatches that the latest inference
answer *in the same ORO step list* named next. It differs from the label by construction: it reads
only tool names (not arguments, not whether code wrote the step), it walks ORO's step buckets as
recorded (a step's answer usually sits on the list before its searches, so with reliable bucketing
it under-counts), and it cannot read a body ORO's a6b1cf3 recorder dropped (such a dispatch counts as
not emitted). The two *agree* on a record when richness >= :data:`RICHNESS_AGREES_AT` exactly when
the label is ``agentic``; where they disagree, ``richness_note`` in the evidence says which of those
blind spots (or which of the label's rules) explains it. The record's recorder era (``a6b1cf3``,
``later``, ``mixed``) is in the evidence too: later-era bodies are whole, so every tool step has
direct evidence and the dropped-body rules never apply; and where a later-era record's step stamps
are missing, out of order or shared by several tool steps, the answers are matched to the tool steps in their own order (one
answer per step) instead of by window, since every answer can be read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from functools import lru_cache, partial
from typing import Any

from oro_assets import jsonio
from oro_assets.curation.rows import (
    FIND,
    StageStats,
    as_rows,
    modal_share,
    rejected_row,
    steps_of,
)
from oro_assets.curation.step import StepResult
from oro_assets.native import kernels as _kernels
from oro_assets.reasons import ReasonCode, Stage
from oro_assets.toolcalls import arguments_dict
from oro_assets.traces.calls import ERA_LATER, same_calls
from oro_assets.traces.formats import inference_succeeded

AGENTIC = "agentic"
SUBTASK = "subtask"
NO_INFERENCE = "no_inference"
#: the tables of :func:`structural_filter`'s outputs (``StepResult.outputs``)
LABELS = "structural_labels"
SUBTASKS = "subtask_traces"

_NO_PROXY_FORMATS = ("shoppingbench_rollout", "openai_messages", "sharegpt")
#: Bytes of a chat-completion body besides the answer text (id, model, usage...): a dropped body must
#: be at least this much longer than the thinking and calls the step claims the model wrote.
MIN_BODY_OVERHEAD = 120


def _norm_text(text: Any) -> str:
    # str.split() splits on exactly the characters ``\s`` matches (str.isspace), ~3x faster than re.sub
    return " ".join(str(text or "").split()).lower()


def _claimed_length_py(step: dict) -> int:
    """Characters (JSON-escaped) an answer must hold to have written this step's thinking and calls:
    ``len(stdlib_dumps(think)) + len(stdlib_dumps(stdlib_dumps(calls))) + MIN_BODY_OVERHEAD`` with
    ``calls`` the step's ``{name, parameters}``, counted per call and per thinking text (both repeat
    across a day's steps: each distinct one is encoded once)."""
    calls = step.get("tool_calls") or ()
    # ``stdlib_dumps(calls)`` is "[" + ", ".join(each call's text) + "]", all printable ASCII (the encoder
    # escapes the rest), so encoding it again adds its two quotes and a backslash per '"' and '\\' in it
    chars = 2 + 2 * max(0, len(calls) - 1) + 2
    for c in calls:
        name, arguments = c.get("name"), c.get("arguments")
        try:
            n, escaped = _call_text(name, arguments)
        except TypeError:  # unhashable arguments (already parsed): not memoised
            n, escaped = _call_text.__wrapped__(name, arguments)
        chars += n + escaped
    think = step.get("think") or ""
    try:
        chars += _json_length(think)
    except TypeError:  # an unhashable thinking value
        chars += _json_length.__wrapped__(think)
    return chars + MIN_BODY_OVERHEAD


# typed: equal keys of different types (1, 1.0, True) encode differently
@lru_cache(maxsize=1 << 14, typed=True)
def _json_length(think: Any) -> int:
    return len(jsonio.stdlib_dumps(think))


@lru_cache(maxsize=1 << 14, typed=True)
def _call_text(name: Any, arguments: Any) -> tuple[int, int]:
    """(length, quotes and backslashes) of one call's ``{name, parameters}`` as ``stdlib_dumps`` writes it."""
    text = jsonio.stdlib_dumps({"name": name, "parameters": arguments_dict(arguments) or {}})
    return len(text), text.count('"') + text.count("\\")


#: :func:`_claimed_length_py` of a step (the reference), natively where the kernels are built (``oro_assets.native``:
#: a str thinking's JSON length counted in C, each call's text by the same cached ``_call_text``)
_claimed_length: Callable[[dict], int] = (
    partial(_kernels.claimed_length, _call_text, _json_length, MIN_BODY_OVERHEAD) if _kernels is not None
    else _claimed_length_py)


def _step_evidence(step: dict) -> dict:
    """One step's evidence (:func:`_step_evidence_py`, the reference): natively where the kernels are built
    (``oro_assets.native``), with the reference's own helpers for the call comparison, the claimed length and a
    status that is neither an int nor None."""
    if _kernels is not None:
        return _kernels.step_evidence(step, same_calls, _claimed_length, inference_succeeded, max)
    return _step_evidence_py(step)


def _step_evidence_py(step: dict) -> dict:
    """The verdict of one step (``no_calls``, ``code_made``, ``no_inference_in_window``, ``carried``,
    ``names_only``, ``dropped``, ``dropped_too_short``, ``not_carried``) with what it was read from."""
    calls = step.get("tool_calls") or ()
    names = [c.get("name") for c in calls]
    inferences = [e for e in step.get("inference") or () if inference_succeeded(e.get("status_code"))]
    out: dict[str, Any] = {"step": step.get("step"), "tool_call_names": names, "n_inference": len(inferences)}
    if not names:
        out["verdict"] = "no_calls"
        return out
    if step.get("code_made"):
        out["verdict"] = "code_made"  # ORO's auto-recommend fallback: written by the agent's code
        return out
    if not inferences:
        out["verdict"] = "no_inference_in_window"
        return out
    done = [{"name": c.get("name"), "arguments": c.get("arguments")} for c in calls]
    verdict = None
    dropped_lengths = []
    for entry in inferences:
        if entry.get("dropped") or (entry.get("truncated") and not entry.get("tool_calls")):
            dropped_lengths.append(entry.get("response_length") or 0)
            continue
        said = entry.get("tool_calls") or [{"name": n, "arguments": None} for n in entry.get("tool_call_names") or ()]
        if not said:
            continue
        names_ok, args_ok = same_calls(said, done)
        if args_ok or (names_ok and entry.get("cut")):
            verdict = "carried"
            out["answer_shape"] = entry.get("answer_shape")
            break
        if names_ok:
            verdict = "names_only"  # the model named the calls; the code changed their arguments
    if verdict is None:
        kept_whole = len(dropped_lengths) < len(inferences)
        if dropped_lengths and max(dropped_lengths) >= _claimed_length_py(step):
            verdict = "dropped"
        elif dropped_lengths and not kept_whole:
            verdict = "dropped_too_short"
        else:
            verdict = "not_carried"
    out["verdict"] = verdict
    if dropped_lengths:
        out["dropped_lengths"] = dropped_lengths
    return out


def _copies_query(target: str, calls: Iterable[dict]) -> bool:
    """True when some find_product ``q`` among ``calls`` is exactly ``target`` (copied by code)."""
    for call in calls:
        if call.get("name") == FIND:
            args = arguments_dict(call.get("arguments")) or {}
            if _norm_text(args.get("q")) == target:
                return True
    return False


_AGAINST = ("no_inference_in_window", "not_carried", "dropped_too_short")
_STAMPED = "calls attributed by step stamps"


def _said(entry: dict) -> list[dict]:
    return entry.get("tool_calls") or [{"name": n, "arguments": None} for n in entry.get("tool_call_names") or ()]


def _stamps_unusable(steps: list[dict], first: dict) -> bool:
    """The step stamps cannot give each step its window: missing or out of order (the attribution
    fell back), or several steps share one stamp (a harness that stamped them all at once)."""
    if not str(first.get("attribution") or _STAMPED).startswith(_STAMPED):
        return True
    stamps = [s.get("timestamp") for s in steps if s.get("tool_calls")]
    return len(set(stamps)) < len(stamps)


def _carried_in_sequence(steps: list[dict]) -> set[int]:
    """Positions of the tool steps that the dialogue's readable answers carry in order, matched one
    answer per step wherever the answer sits: for whole bodies (ORO's later recorder) whose step
    stamps cannot say which answer was made for which step."""
    answers = [e for step in steps for e in step.get("inference") or ()
               if inference_succeeded(e.get("status_code")) and not e.get("truncated") and _said(e)]
    answers.sort(key=lambda e: e.get("timestamp") if isinstance(e.get("timestamp"), int) else 0)
    carried: set[int] = set()
    j = 0
    for pos, step in enumerate(steps):
        calls = step.get("tool_calls") or ()
        if not calls or step.get("code_made"):
            continue
        done = [{"name": c.get("name"), "arguments": c.get("arguments")} for c in calls]
        for k in range(j, len(answers)):
            names_ok, args_ok = same_calls(_said(answers[k]), done)
            if args_ok or (names_ok and answers[k].get("cut")):
                carried.add(pos)
                j = k + 1
                break
    return carried


StepTallies = tuple[list[dict], int, Counter, list[tuple], int, bool, bool]


def _label_steps(steps: list[dict], target: str, in_sequence: set[int] | None) -> StepTallies:
    """:func:`_label_steps_py` (the reference), natively where the kernels are built (``oro_assets.native``; steps that
    are not a list of plain dicts are read by the reference)."""
    if _kernels is not None:
        found = _kernels.label_steps(steps, target, in_sequence, Counter, _copies_query, same_calls, _claimed_length,
                                     inference_succeeded, max)
        if found is not None:
            return found
    return _label_steps_py(steps, target, in_sequence)


def _label_steps_py(steps: list[dict], target: str, in_sequence: set[int] | None) -> StepTallies:
    """Each step's evidence (the positions in ``in_sequence`` carried when their verdict is against or names only) and
    the trace's tallies: ``(per_step, n_inference, verdicts, shapes, multi_answer_steps, verbatim,
    has_proxy_evidence)``."""
    per_step = []
    shapes: list[tuple] = []
    verdicts: Counter = Counter()
    n_inference = 0
    multi_answer_steps = 0
    verbatim = has_proxy_evidence = False
    for pos, step in enumerate(steps):
        e = _step_evidence(step)
        if in_sequence is not None and pos in in_sequence and e["verdict"] in (*_AGAINST, "names_only"):
            e["verdict"], e["matched"] = "carried", "answers in sequence (stamps unusable)"
        per_step.append(e)
        n_inference += e["n_inference"]
        verdict = e["verdict"]
        verdicts[verdict] += 1
        if verdict not in ("no_calls", "code_made"):
            shapes.append(tuple(e["tool_call_names"]))
            if e["n_inference"] > 1:
                multi_answer_steps += 1
            if target and not verbatim:
                verbatim = _copies_query(target, step["tool_calls"])
        if not has_proxy_evidence and (step.get("inference") or step.get("search")):
            has_proxy_evidence = True
    return per_step, n_inference, verdicts, shapes, multi_answer_steps, verbatim, has_proxy_evidence


def label_structural(row: dict, carried_threshold: float = 0.5) -> tuple[str, dict]:
    """Label one normalised trace ``agentic`` / ``subtask`` / ``no_inference`` with its evidence.

    ``carried_threshold``: the least share of carried steps among the steps with direct evidence
    (carried + against) for ``agentic``."""
    steps = steps_of(row)
    target = _norm_text(row.get("query"))
    first = steps[0] if steps and isinstance(steps[0], dict) else {}
    era = first.get("recorder_era")
    # Whole bodies whose windows the stamps cannot give: the answers are read in their own order
    # instead (a6b1cf3 records keep the window rule, so their verdicts do not move).
    in_sequence = (_carried_in_sequence(steps) if era == ERA_LATER and _stamps_unusable(steps, first) else None)
    per_step, n_inference, verdicts, shapes, multi_answer_steps, verbatim, has_proxy_evidence = _label_steps(
        steps, target, in_sequence)
    regularity = modal_share(shapes)
    carried = verdicts["carried"]
    against = sum(verdicts[v] for v in _AGAINST)
    n_tool_steps = len(shapes)
    direct = carried + against

    if n_inference == 0 and not has_proxy_evidence and row.get("format") in _NO_PROXY_FORMATS:
        # ShoppingBench rollouts and OpenAI rows never carry proxy evidence: they are model
        # rollouts by construction. The reasoning judge still sees no inference evidence.
        label, rule = AGENTIC, "no_proxy_format"
        why = f"format {row.get('format')} carries no proxy evidence; model rollout assumed"
    elif n_inference == 0:
        label, rule, why = NO_INFERENCE, "no_inference", "no successful inference call on any step"
    elif n_tool_steps == 0:
        label, rule, why = AGENTIC, "no_tool_steps", "inference present but no model tool calls to attribute"
    elif carried and carried / direct >= carried_threshold:
        label, rule = AGENTIC, "carried"
        why = f"{carried}/{direct} tool steps with direct evidence carried by the model's answer"
    elif against:
        label, rule = SUBTASK, "against"
        why = (f"only {carried}/{direct} tool steps carried by the model's answer "
               f"({verdicts['no_inference_in_window']} without inference, {verdicts['not_carried']} answered "
               f"without the calls, {verdicts['dropped_too_short']} too short to hold them)")
    elif verbatim:
        label, rule = SUBTASK, "dropped_verbatim_query"
        why = "bodies dropped; the query is copied verbatim into find_product (a code-driven search)"
    elif multi_answer_steps and regularity >= 0.6:
        label, rule = SUBTASK, "dropped_classifier_loop"
        why = (f"bodies dropped; {multi_answer_steps} step(s) with several answers each and a regular step "
               "shape (a loop asking the model to classify)")
    else:
        label, rule = AGENTIC, "dropped_consistent"
        why = (f"bodies of {verdicts['dropped']} tool step(s) dropped; their lengths can hold the step's thinking "
               "and calls and there is no sign of a scripted loop")
    if verdicts["names_only"]:
        why += f"; {verdicts['names_only']} step(s) where the code changed the model's arguments"
    if first.get("recorder_note"):
        why += f"; recorder: {first['recorder_note']}"
    evidence = {
        "reason": why,
        "rule": rule,
        "attribution": (steps[0].get("attribution") if steps and isinstance(steps[0], dict) else None),
        "n_steps": len(steps),
        "n_tool_steps": n_tool_steps,
        "n_inference": n_inference,
        "proxy_evidence": has_proxy_evidence,
        "carried_steps": carried,
        "against_steps": against,
        "dropped_steps": verdicts["dropped"],
        "code_made_steps": verdicts["code_made"],
        "query_copied_verbatim": verbatim,
        "step_shape_regularity": round(regularity, 4),
        "steps": per_step,
        "recorder_era": era,
    }
    rich = first.get("oro_richness")
    if rich is not None:
        evidence["oro_richness"] = rich
        note = richness_note(label, rich, evidence)
        if note:
            evidence["richness_note"] = note
    return label, evidence


DEFAULT_CARRIED_THRESHOLD = 0.5
#: richness at or above which ORO's measure is read as "agentic" when comparing it with the label
RICHNESS_AGREES_AT = 0.5


def richness_note(label: str, rich: dict | None, evidence: dict) -> str | None:
    """Why ORO's ``agentic_richness`` and the label disagree on one record (None when they agree or
    richness is not computable)."""
    value = (rich or {}).get("agentic_richness")
    if value is None:
        return None
    says_agentic = value >= RICHNESS_AGREES_AT
    if says_agentic == (label == AGENTIC):
        return None
    misses = rich.get("misses") or {}
    if label == AGENTIC:
        parts = []
        if misses.get("dropped_body"):
            parts.append(f"{misses['dropped_body']} dispatch(es) after an answer whose body ORO dropped (it reads no "
                         "name there)")
        if misses.get("no_answer_in_step"):
            parts.append(f"{misses['no_answer_in_step']} dispatch(es) whose answer ORO bucketed onto an earlier step's "
                         "list (pending names do not carry over)")
        if misses.get("not_named"):
            parts.append(f"{misses['not_named']} dispatch(es) the latest answer did not name next (other order, or "
                         "repeated by code)")
        if misses.get("no_body"):
            parts.append(f"{misses['no_body']} dispatch(es) after a failed inference request")
        return (f"richness {value:.2f} < {RICHNESS_AGREES_AT} but the label is agentic (rule {evidence['rule']}): "
                + ("; ".join(parts) or "no dispatch was named"))
    return (f"richness {value:.2f} >= {RICHNESS_AGREES_AT} but the label is {label} (rule {evidence['rule']}): "
            "ORO's measure reads tool names only (an answer that names the tool counts even when the code wrote or "
            "changed the call) and walks ORO's step lists, not the windows the label derives from the stamps "
            f"(attribution: {evidence.get('attribution')}); the label's reason: {evidence['reason']}")


def structural_filter(rows: Iterable[dict], carried_threshold: float = DEFAULT_CARRIED_THRESHOLD) -> StepResult:
    """Run the structural filter over normalised rows.

    Kept rows are the agentic traces with ``structural_label``. ``outputs`` holds, by asset:
    :data:`SUBTASKS`, the sub-task traces themselves (they are also in ``rejected`` with SUBTASK so the
    ledger stays complete), and :data:`LABELS`, one ``{trace_id, partition, label, evidence,
    agentic_richness, recorder_era}`` row per input (evidence is a JSON string; ``agentic_richness``:
    ORO's measure, None where not computable; ``recorder_era``: a6b1cf3 / later / mixed / None).
    """
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
                "agentic_richness": (evidence.get("oro_richness") or {}).get("agentic_richness"),
                "recorder_era": evidence.get("recorder_era"),
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
    return StepResult(kept, rejected, {LABELS: labels, SUBTASKS: subtasks}, stats.as_dict())
