"""The Dr. GRPO per-step reward: format + tool-call match against the teacher's next step + outcome.

* format (0..1): 1 when the completion is a well-formed Qwen3 turn with thinking and >=1 tool call,
  0.5 when calls were recovered from malformed text, 0 without any call.
* match (0..1): per teacher call (in order) one third each for the same tool name, the same argument
  keys (Jaccard) and the same argument values (fraction of the teacher's keys with equal values,
  compared case-insensitively after stripping); averaged over max(#teacher calls, #model calls).
* outcome (0/1): only when the teacher's step ends the episode (it recommends): the model's
  recommended ids equal the ground-truth ids of ``reward_spec`` (order matters).

``reward_spec`` (JSON) may carry ``ground_truth_ids``/``gt_ids`` (list); a missing spec gives no outcome term.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from oro_assets.agents.toolcall import parse_assistant_text


def _loads(value: Any, default: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value) if value.strip() else default
        except json.JSONDecodeError:
            return default
    return default if value is None else value


def teacher_calls(teacher_next: Any) -> list[tuple[str, dict]]:
    tn = _loads(teacher_next, {})
    calls = tn.get("tool_calls") if isinstance(tn, dict) else None
    out = []
    for c in calls or []:
        if not isinstance(c, dict):
            continue
        fn = c.get("function") if isinstance(c.get("function"), dict) else c
        args = _loads(fn.get("arguments", fn.get("parameters")), {})
        out.append((str(fn.get("name") or ""), args if isinstance(args, dict) else {}))
    return out


def _norm(v: Any) -> str:
    return json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else str(v).strip().lower()


def call_match(expected: list[tuple[str, dict]], got: list[tuple[str, dict]]) -> float:
    n = max(len(expected), len(got))
    if n == 0:
        return 0.0
    total = 0.0
    for (name, args), (gname, gargs) in zip(expected, got, strict=False):
        score = 1.0 if name == gname else 0.0
        keys, gkeys = set(args), set(gargs)
        score += len(keys & gkeys) / len(keys | gkeys) if keys | gkeys else 1.0
        score += (sum(1 for k in keys if k in gargs and _norm(args[k]) == _norm(gargs[k])) / len(keys)) if keys else 1.0
        total += score / 3.0
    return total / n


def _ids(value: Any) -> list[str]:
    if isinstance(value, list):
        parts = [str(x) for x in value]
    elif isinstance(value, str):
        parts = value.split(",")
    else:
        return []
    out: list[str] = []
    for p in parts:
        p = p.strip()
        if p and p not in out:
            out.append(p)
    return out


def step_reward(completion: str, teacher_next: Any, reward_spec: Any, *, format_weight: float = 1.0,
                match_weight: float = 1.0, outcome_weight: float = 1.0) -> float:
    parsed = parse_assistant_text(completion)
    got = [(c.name, dict(c.arguments)) for c in parsed.tool_calls]
    if not got:
        fmt = 0.0
    elif parsed.errors or not parsed.think:
        fmt = 0.5
    else:
        fmt = 1.0
    expected = teacher_calls(teacher_next)
    match = call_match(expected, got)
    outcome = 0.0
    spec = _loads(reward_spec, {})
    gt = _ids((spec or {}).get("ground_truth_ids") or (spec or {}).get("gt_ids")) if isinstance(spec, dict) else []
    if gt and any(name == "recommend_product" for name, _ in expected):
        rec = [_ids(a.get("product_ids")) for n, a in got if n == "recommend_product"]
        outcome = 1.0 if rec and rec[-1] == gt else 0.0
    return format_weight * fmt + match_weight * match + outcome_weight * outcome


def make_reward_fn(format_weight: float, match_weight: float, outcome_weight: float,
                   sink: list[float] | None = None) -> Callable[..., list[float]]:
    """A TRL reward function (``completions`` + dataset columns as kwargs); rewards are appended to ``sink``."""

    def teacher_step_reward(completions: list[Any], teacher_next: list[Any] | None = None,
                            reward_spec: list[Any] | None = None, **_: Any) -> list[float]:
        out = []
        for i, comp in enumerate(completions):
            text = comp if isinstance(comp, str) else (comp[0].get("content", "") if comp else "")
            out.append(step_reward(text, (teacher_next or [None] * len(completions))[i],
                                   (reward_spec or [None] * len(completions))[i], format_weight=format_weight,
                                   match_weight=match_weight, outcome_weight=outcome_weight))
        if sink is not None:
            sink.extend(out)
        return out

    return teacher_step_reward
