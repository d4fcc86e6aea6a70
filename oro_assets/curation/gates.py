"""Gates (reference §5.3): format validity, grounding, reasoning quality.

Order per trace (cheapest first, the judge last): the five hard format rejects, then the
grounding check, then the reasoning gate. The first failing gate decides the one reason code.

Before them, only when the caller sets a minimum (``ORO_MIN_AGENTIC_RICHNESS``; off by default),
the richness gate: LOW_AGENTIC_RICHNESS when ORO's ``agentic_richness`` of the trace (computed at
normalisation, ``traces/calls.oro_agentic_richness``) is below it. A trace where it is not computable
(no proxy calls, no catalogue dispatch) passes: it has nothing ORO could score.

Format rejects, in the order checked:
1. UNPAIRED_TOOL_CALL — a call id without exactly one tool response, or a response without a call;
2. THINK_THEN_STOP — the last assistant turn thinks and calls nothing (checked before the
   recommend count so a trace that stopped mid-thought is named for its cause);
3. RECOMMEND_NOT_ONCE — ``recommend_product`` called zero or several times;
4. RECOMMEND_ARGS_UNPARSEABLE — its arguments do not parse into ≥1 product id;
5. OVER_TOKEN_BUDGET — the rendered trajectory (tools + messages + thinking) exceeds the budget,
   counted with the caller's ``count_tokens`` (the active model profile's tokenizer).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from oro_assets import jsonio
from oro_assets.arena.scoring import split_ids
from oro_assets.curation.rows import (
    RECOMMEND,
    StageStats,
    as_rows,
    messages_of,
    meta_of,
    parsed,
    rejected_row,
    steps_of,
    tool_calls_of,
)
from oro_assets.curation.step import StepResult
from oro_assets.judge.base import judge_or_unavailable
from oro_assets.native import kernels as _kernels
from oro_assets.reasons import ReasonCode, Stage
from oro_assets.toolcalls import TERMINATE, arguments_dict

DEFAULT_TOKEN_BUDGET = 14_336
#: Default reasoning threshold. The judge's scores are the decision-tree levels 0.1/0.3/0.5/0.7/0.9
#: (reference §4). 0.7 means gates 1-3 passed: a model produced the reasoning, it analyses tool
#: results, and it cites a specific datum from tool output - the grounded reasoning we want the
#: student to imitate. 0.9 additionally needs an explicit comparison of ≥2 candidates, which
#: single-candidate successes rarely show, so it would drop many good traces; 0.5 admits thinking
#: that never cites what the tools returned. A run averaging 0.7 also earns ORO coefficient
#: 0.3 + 0.7·0.7/0.8 ≈ 0.91, close to the 1.0 plateau at q ≥ 0.8.
DEFAULT_REASONING_THRESHOLD = 0.7
_NO_GROUNDING_TOOLS = {RECOMMEND, TERMINATE}


class TokenCounter(Protocol):
    """Counts a trace as a model profile renders it (``training.token_count.TemplateTokenCounter``)."""

    name: str

    def count(self, messages: list[dict], tools: Any, budget: int | None = None) -> int | None: ...

    def upper_bound_bytes(self, stored_bytes: int, n_messages: int) -> int: ...


def estimate_tokens(text: str) -> int:
    """Cheap token estimate used when no tokenizer is supplied: ~4 bytes per BPE token,
    never fewer than the whitespace-separated words (``estimate_tokens_py``, the reference: the words counted
    natively where the kernels are built, ``oro_assets.native``, without making them)."""
    if _kernels is not None and type(text) is str:
        return max(_kernels.word_count(text), math.ceil(len(text.encode()) / 4))
    return estimate_tokens_py(text)


def estimate_tokens_py(text: str) -> int:
    return max(len(text.split()), math.ceil(len(text.encode()) / 4))


def render_for_budget(messages: list[dict], tools: Any) -> str:
    """Plain text close to what the chat template renders (tools, roles, thinking, calls, results)."""
    parts = [jsonio.dumps(parsed(tools, []))]
    for m in messages:
        parts.append(str(m.get("role")))
        if m.get("reasoning_content"):
            parts.append(f"<think>{m['reasoning_content']}</think>")
        if m.get("content"):
            parts.append(str(m["content"]))
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            args = fn.get("arguments")
            parts.append(
                f"<tool_call>{fn.get('name')} {args if isinstance(args, str) else jsonio.dumps(args)}"
            )
    return "\n".join(parts)


def _size_bound(row: dict, messages: list[dict]) -> int:
    """An upper bound on the UTF-8 size of :func:`render_for_budget`'s text (JSON text is never
    shorter than the strings it encodes; 40 bytes a message cover roles and tags)."""
    raw = row.get("messages")
    tools = row.get("tools")
    if not isinstance(raw, str) or not isinstance(tools, str):
        return 1 << 62  # parsed input: no cheap bound, count
    return len(raw.encode()) + len(tools.encode()) + 40 * (len(messages) + 1)


def coefficient(q: float) -> float:
    """ORO's reasoning coefficient over a run's mean judge quality ``q`` (reference §4)."""
    return 1.0 if q >= 0.80 else 0.3 + q * 0.7 / 0.8


def _check_pairing(messages: list[dict], tool_calls: list[dict] | None = None) -> str | None:
    responses: dict[Any, int] = {}
    for m in messages:
        if m.get("role") == "tool":
            rid = m.get("tool_call_id")
            responses[rid] = responses.get(rid, 0) + 1
    call_counts: dict[Any, int] = {}
    for c in tool_calls if tool_calls is not None else tool_calls_of(messages):
        cid = c["id"]
        call_counts[cid] = call_counts.get(cid, 0) + 1
    for cid, n in call_counts.items():
        if n > 1:
            return f"call id {cid!r} used {n} times"
        if responses.get(cid, 0) != 1:
            return f"call {cid!r} has {responses.get(cid, 0)} tool responses"
    for rid in responses:
        if rid not in call_counts:
            return f"tool response {rid!r} answers no call"
    return None


def _has_thinking(message: dict) -> bool:
    return bool(str(message.get("reasoning_content") or "").strip()) or "<think>" in str(
        message.get("content") or ""
    )


def _check_think_then_stop(messages: list[dict]) -> str | None:
    last = next((m for m in reversed(messages) if m.get("role") == "assistant"), None)
    if last is None:
        return None
    if not last.get("tool_calls") and _has_thinking(last):
        return "the last assistant turn thinks and calls no tool"
    return None


def _collect_product_ids(value: Any, into: set[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("product_id", "product_ids") and isinstance(item, str | int):
                into.update(split_ids(item))
            elif key in ("result_product_ids", "product_ids") and isinstance(item, list):
                into.update(str(v) for v in item)
            else:
                _collect_product_ids(item, into)
    elif isinstance(value, list):
        for item in value:
            _collect_product_ids(item, into)


def _step_product_ids(steps: list[dict]) -> set[str]:
    seen: set[str] = set()
    for step in steps:
        for call in step.get("tool_calls") or []:
            if call.get("name") not in _NO_GROUNDING_TOOLS:
                seen.update(map(str, call.get("result_product_ids") or []))
        for search in step.get("search") or []:
            seen.update(map(str, search.get("result_product_ids") or []))
    return seen


def seen_product_ids(messages: list[dict], steps: list[dict]) -> set[str]:
    """Product ids returned by any search/view tool (tool messages and per-step evidence)."""
    seen = _step_product_ids(steps)
    for m in messages:
        if m.get("role") != "tool" or m.get("name") in _NO_GROUNDING_TOOLS:
            continue
        content = m.get("content")
        try:
            value = jsonio.loads(content) if isinstance(content, str) else content
        except jsonio.JSONDecodeError:
            continue
        _collect_product_ids(value, seen)
    return seen


def format_gate(
    row: dict,
    count_tokens: Callable[[str], int] | TokenCounter = estimate_tokens,
    token_budget: int = DEFAULT_TOKEN_BUDGET,
) -> tuple[ReasonCode | None, str, dict]:
    """The five hard rejects. Returns ``(reason or None, detail, facts)``; facts include
    ``recommended_ids`` and ``n_tokens`` when computed."""
    messages = messages_of(row)
    facts: dict[str, Any] = {}
    calls = tool_calls_of(messages)
    detail = _check_pairing(messages, calls)
    if detail:
        return ReasonCode.UNPAIRED_TOOL_CALL, detail, facts
    detail = _check_think_then_stop(messages)
    if detail:
        return ReasonCode.THINK_THEN_STOP, detail, facts
    recommends = [c for c in calls if c["name"] == RECOMMEND]
    if len(recommends) != 1:
        return ReasonCode.RECOMMEND_NOT_ONCE, f"recommend_product called {len(recommends)} times", facts
    args = arguments_dict(recommends[0]["arguments"])
    ids = split_ids(args.get("product_ids")) if args else []
    if not ids:
        return (
            ReasonCode.RECOMMEND_ARGS_UNPARSEABLE,
            f"arguments {str(recommends[0]['arguments'])[:120]!r} give no product ids",
            facts,
        )
    facts["recommended_ids"] = ids
    facts["messages"] = messages
    n_tokens = _budget_tokens(row, messages, count_tokens, token_budget)
    facts["n_tokens"] = n_tokens
    if n_tokens is not None and n_tokens > token_budget:
        return ReasonCode.OVER_TOKEN_BUDGET, f"{n_tokens} tokens > budget {token_budget}", facts
    return None, "", facts


def _budget_tokens(row: dict, messages: list[dict], count_tokens: Any, token_budget: int) -> int | None:
    """The trace's tokens, or ``None`` when it provably fits without counting: every token covers at
    least one byte (byte-level BPE, word-level pieces, the estimate), so a rendering of at most
    ``token_budget`` bytes cannot exceed the budget.

    ``count_tokens`` is a text counter applied to :func:`render_for_budget`, or a token counter with
    ``count(messages, tools, budget)`` and ``upper_bound_bytes(stored_bytes, n_messages)`` that
    renders the trace itself (``training.token_count.TemplateTokenCounter``: the profile's tokenizer)."""
    bound = _size_bound(row, messages)
    if hasattr(count_tokens, "count"):
        if count_tokens.upper_bound_bytes(bound, len(messages)) <= token_budget:
            return None
        return count_tokens.count(messages, row.get("tools"), budget=token_budget)
    if bound <= token_budget:
        return None
    return int(count_tokens(render_for_budget(messages, row.get("tools"))))


def grounding_gate(
    row: dict, recommended_ids: list[str], messages: list[dict] | None = None, steps: list[dict] | None = None
) -> tuple[ReasonCode | None, str]:
    steps = steps if steps is not None else steps_of(row)
    # Fast path: the per-step evidence already lists every returned id; the tool messages are
    # only walked when it does not show all recommended ids.
    step_ids = _step_product_ids(steps)
    if all(i in step_ids for i in recommended_ids):
        return None, ""
    seen = seen_product_ids(messages if messages is not None else messages_of(row), steps)
    missing = [i for i in recommended_ids if i not in seen]
    if missing:
        return (
            ReasonCode.UNGROUNDED_RECOMMENDATION,
            f"recommended {missing} never appeared in a tool result ({len(seen)} ids seen)",
        )
    return None, ""


def richness_gate(steps: list[dict], min_richness: float) -> tuple[ReasonCode | None, str]:
    """LOW_AGENTIC_RICHNESS when ORO's agentic_richness (step 1's ``oro_richness``) is below
    ``min_richness``; a trace without a computable richness passes."""
    first = steps[0] if steps and isinstance(steps[0], dict) else {}
    rich = first.get("oro_richness") or {}
    value = rich.get("agentic_richness")
    if not isinstance(value, int | float) or value >= min_richness:
        return None, ""
    misses = ", ".join(f"{k} {v}" for k, v in sorted((rich.get("misses") or {}).items()))
    return (ReasonCode.LOW_AGENTIC_RICHNESS,
            f"agentic_richness {value:.3f} < {min_richness} ({rich.get('emitted')}/{rich.get('dispatches')} dispatches "
            f"named by the latest answer{'; not counted: ' + misses if misses else ''})")


def validator_score(row: dict, meta: dict | None = None) -> float | None:
    """The validator-recorded judge score (``meta.reasoning.score``) when present and numeric."""
    reasoning = (meta if meta is not None else meta_of(row)).get("reasoning")
    if isinstance(reasoning, dict):
        score = reasoning.get("score")
        if isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score):
            return float(score)
    return None


def _call_judge(judge: Any, row: dict) -> tuple[float | None, bool, str, str]:
    result = judge_or_unavailable(judge, row)
    available = bool(getattr(result, "available", getattr(result, "score", None) is not None))
    score = getattr(result, "score", None)
    if score is None:
        available = False
    return (
        float(score) if available else None,
        available,
        str(getattr(result, "explanation", "")),
        str(getattr(result, "judge_id", type(judge).__name__)),
    )


def judge_all(judge: Any, views: list[dict], concurrency: int = 1) -> list[tuple[float | None, bool, str, str]]:
    """``_call_judge`` of every view, in order; ``concurrency`` > 1 judges that many at once on
    threads (an HTTP judge spends its time waiting; results and their order do not change)."""
    if concurrency <= 1 or len(views) <= 1:
        return [_call_judge(judge, v) for v in views]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(concurrency, len(views)), thread_name_prefix="judge") as pool:
        return list(pool.map(lambda v: _call_judge(judge, v), views))


def gate_traces(
    rows: Iterable[dict],
    judge: Any | None = None,
    threshold: float = DEFAULT_REASONING_THRESHOLD,
    count_tokens: Callable[[str], int] | TokenCounter = estimate_tokens,
    token_budget: int = DEFAULT_TOKEN_BUDGET,
    judge_concurrency: int = 1,
    min_agentic_richness: float | None = None,
) -> StepResult:
    """Gate structurally-kept traces.

    ``min_agentic_richness``: when set, the richness gate runs first (:func:`richness_gate`).

    ``judge``: an object with ``judge(row) -> JudgeResult`` (or a plain callable) used only when
    the validator recorded no score; ``None`` makes unscored traces JUDGE_UNAVAILABLE. The rows
    that need it are judged together after the format and grounding gates, ``judge_concurrency``
    at a time (see :func:`judge_all`); the result does not depend on it.
    Kept rows gain ``recommended_ids`` (JSON), ``n_tokens``, ``reasoning_score``,
    ``reasoning_source`` (validator|judge), ``judge_id``, ``judge_explanation``.
    ``stats["reasoning_coefficients"]`` maps eval_run_id → {n, n_scored, n_failed, mean_q, coeff,
    invalid}; a run with more than half its judge calls failed is invalid (coeff None).
    """
    stats = StageStats(str(Stage.GATES))
    kept: list[dict] = []
    rejected: list[dict] = []
    runs: dict[str, dict[str, Any]] = defaultdict(lambda: {"scores": [], "failed": 0, "n": 0})
    judge_calls = judge_failures = 0
    # pass 1: the rule gates. Rows the judge must score are judged a chunk at a time (one row at a
    # time without concurrency), so parsed messages are never held for a whole batch.
    checked: list[tuple[dict, dict, float | None, Any, str, list, int]] = []
    pending: list[dict] = []
    found: list[tuple[float | None, bool, str, str]] = []
    chunk = 1 if judge_concurrency <= 1 else 4 * judge_concurrency
    for row in as_rows(rows):
        meta = meta_of(row)
        v_score = validator_score(row, meta)
        steps = None
        reason, detail, facts = None, "", {}
        if min_agentic_richness is not None:
            steps = steps_of(row)
            reason, detail = richness_gate(steps, min_agentic_richness)
        if reason is None:
            reason, detail, facts = format_gate(row, count_tokens, token_budget)
        if reason is None:
            steps = steps if steps is not None else steps_of(row)
            reason, detail = grounding_gate(row, facts["recommended_ids"], facts["messages"], steps)
            if reason is None and v_score is None and judge is not None:
                # the judge gets the columns parsed above (its interface accepts both forms)
                pending.append({**row, "messages": facts["messages"], "steps": steps})
                if len(pending) >= chunk:
                    found += judge_all(judge, pending, judge_concurrency)
                    pending = []
        checked.append((row, meta, v_score, reason, detail, facts.get("recommended_ids"), facts.get("n_tokens")))
    found += judge_all(judge, pending, judge_concurrency)
    verdicts = iter(found)
    # pass 2: in row order, exactly as if each row had been judged when it was reached
    for row, meta, v_score, reason, detail, recommended_ids, n_tokens in checked:
        stats.seen += 1
        run_id = meta.get("eval_run_id")
        run = runs[str(run_id)] if run_id is not None else None
        if run is not None:
            run["n"] += 1
        if run is not None and v_score is not None:
            run["scores"].append(v_score)
        score = v_score
        source, explanation, judge_id = "validator", "", "validator"
        if reason is None and score is None:
            if judge is None:
                available, explanation = False, "no validator score and no judge configured"
            else:
                judge_calls += 1
                score, available, explanation, judge_id = next(verdicts)
            source = "judge"
            if run is not None:
                if available:
                    run["scores"].append(score)
                else:
                    run["failed"] += 1
            if not available:
                judge_failures += 1
                reason, detail = ReasonCode.JUDGE_UNAVAILABLE, explanation or "judge failed"
        elif reason is None:
            explanation = str((meta.get("reasoning") or {}).get("explanation") or "")
        if reason is None and score is not None and score < threshold:
            reason, detail = (
                ReasonCode.REASONING_BELOW_THRESHOLD,
                f"score {score} < threshold {threshold} ({source})",
            )
        if reason is not None:
            stats.rejected[str(reason)] += 1
            rej = rejected_row(row, Stage.GATES, reason, detail)
            rej["reasoning_score"] = score
            rejected.append(rej)
            continue
        stats.kept += 1
        kept.append(
            {
                **row,
                "recommended_ids": jsonio.dumps(recommended_ids),
                "n_tokens": n_tokens,
                "reasoning_score": score,
                "reasoning_source": source,
                "judge_id": judge_id,
                "judge_explanation": explanation[:1000],
            }
        )
    coeffs = {}
    for run_id in sorted(runs):
        run = runs[run_id]
        scores = run["scores"]
        attempted = len(scores) + run["failed"]
        invalid = attempted > 0 and run["failed"] * 2 > attempted
        mean_q = sum(scores) / len(scores) if scores else None
        coeffs[run_id] = {
            "n": run["n"],
            "n_scored": len(scores),
            "n_failed": run["failed"],
            "sum_q": round(sum(scores), 6),
            "mean_q": None if mean_q is None else round(mean_q, 4),
            "coeff": None if (invalid or mean_q is None) else round(coefficient(mean_q), 4),
            "invalid": invalid,
        }
    stats.extra.update(
        {
            "threshold": threshold,
            "token_budget": token_budget,
            "min_agentic_richness": min_agentic_richness,
            "judge_calls": judge_calls,
            "judge_failures": judge_failures,
            "judge_failure_ratio": round(judge_failures / judge_calls, 4) if judge_calls else 0.0,
            "reasoning_coefficients": coeffs,
        }
    )
    return StepResult(kept, rejected, stats=stats.as_dict())


def _run_summary(n: int, n_scored: int, n_failed: int, sum_q: float) -> dict[str, Any]:
    attempted = n_scored + n_failed
    invalid = attempted > 0 and n_failed * 2 > attempted
    mean_q = sum_q / n_scored if n_scored else None
    return {
        "n": n,
        "n_scored": n_scored,
        "n_failed": n_failed,
        "sum_q": round(sum_q, 6),
        "mean_q": None if mean_q is None else round(mean_q, 4),
        "coeff": None if (invalid or mean_q is None) else round(coefficient(mean_q), 4),
        "invalid": invalid,
    }


def ungated_run_scores(rows: Iterable[dict]) -> dict[str, Any]:
    """A stats part for :func:`merge_gate_stats` with the validator scores of rows the gates never
    see (structurally rejected: sub-task, no-inference): ORO's coefficient is over every trajectory
    of a run that its judge scored, not only over the ones this curation keeps."""
    pairs = []
    for row in as_rows(rows):
        meta = meta_of(row)
        run_id = meta.get("eval_run_id")
        pairs.append((None if run_id is None else str(run_id), validator_score(row, meta)))
    return run_scores(pairs)


def run_scores(pairs: Iterable[tuple[str | None, float | None]]) -> dict[str, Any]:
    """:func:`ungated_run_scores` of ``(eval_run_id, validator score)`` pairs (the structural labels
    carry both for every trace)."""
    runs: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0.0])
    for run_id, score in pairs:
        if run_id is None:
            continue
        acc = runs[run_id]
        acc[0] += 1
        if score is not None:
            acc[1] += 1
            acc[3] += score
    return {"seen": 0, "kept": 0, "rejected": {}, "judge_calls": 0, "judge_failures": 0,
            "reasoning_coefficients": {k: _run_summary(*runs[k]) for k in sorted(runs)}}


def merge_gate_stats(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Combine the stats of :func:`gate_traces` run batch by batch over one partition."""
    if not parts:
        return {}
    rejected: Counter = Counter()
    runs: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0.0])
    for part in parts:
        rejected.update(part["rejected"])
        for run_id, r in part["reasoning_coefficients"].items():
            acc = runs[run_id]
            acc[0] += r["n"]
            acc[1] += r["n_scored"]
            acc[2] += r["n_failed"]
            acc[3] += r["sum_q"]
    calls = sum(p["judge_calls"] for p in parts)
    failures = sum(p["judge_failures"] for p in parts)
    return {
        **parts[0],
        "seen": sum(p["seen"] for p in parts),
        "kept": sum(p["kept"] for p in parts),
        "rejected": dict(sorted(rejected.items())),
        "judge_calls": calls,
        "judge_failures": failures,
        "judge_failure_ratio": round(failures / calls, 4) if calls else 0.0,
        "reasoning_coefficients": {k: _run_summary(*runs[k]) for k in sorted(runs)},
    }
