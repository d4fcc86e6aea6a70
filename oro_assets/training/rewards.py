"""The Dr. GRPO per-step reward: format + tool-call match against the teacher's next step + outcome.

* format (0..1): 1 when the completion is a well-formed Qwen3 turn with thinking and >=1 tool call,
  0.5 when calls were recovered from malformed text, 0 without any call.
* match (0..1): per teacher call (in order) one third each for the same tool name, the same argument
  keys (Jaccard) and the same argument values (fraction of the teacher's keys with equal values,
  compared case-insensitively after stripping); averaged over max(#teacher calls, #model calls).
* outcome (0/1): only when the teacher's step ends the episode (it recommends): the model's
  recommendation succeeds, production-strict (reference section 3) against the problem in
  ``reward_spec`` when the trainer has the catalogue, else by the exact ground-truth ids in order.

``reward_spec`` (JSON) is the ``rl_prompts`` scoring spec (``arena.problems.scoring_spec``:
category, reward, voucher, ground_truth_ids; ``id_map`` maps view handles back to product ids); a
bare ``{"ground_truth_ids": [...]}`` or an older row's bare reward is read for its ids; none gives no
outcome term.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oro_assets import jsonio
from oro_assets.agents.toolcall import parse_assistant_text
from oro_assets.arena.problems import problem_ground_truth_ids
from oro_assets.arena.scoring import score_trace, split_ids
from oro_assets.toolcalls import RECOMMEND_PRODUCT


def _loads(value: Any, default: Any) -> Any:
    if isinstance(value, str):
        try:
            return jsonio.loads(value) if value.strip() else default
        except jsonio.JSONDecodeError:
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
    return jsonio.stdlib_dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else str(v).strip().lower()


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


def _spec(reward_spec: Any) -> dict:
    """A reward spec as a dict: an ``rl_prompts`` scoring spec (``arena.problems.scoring_spec``), or a
    bare problem reward as older ``rl_prompts`` stored it (then only its ground-truth ids are used)."""
    spec = _loads(reward_spec, {})
    if isinstance(spec, dict) and ("reward" in spec or "ground_truth_ids" in spec or "gt_ids" in spec):
        return spec
    if isinstance(spec, dict | list):
        return {"ground_truth_ids": problem_ground_truth_ids({"reward": spec})}
    return {}


def outcome(recommended: Any, spec: dict, catalogue: Any = None) -> float:
    """1.0 when a recommendation succeeds: production-strict success against the problem when a
    catalogue is given (ids first mapped back through the spec's ``id_map`` of view handles), else
    the exact ground-truth ids in order."""
    ids = split_ids(recommended)
    if catalogue is not None and isinstance(spec.get("reward"), dict | list):
        id_map = spec.get("id_map") or {}
        real = [id_map.get(i, i) for i in ids]
        return 1.0 if score_trace(spec, real, catalogue).success else 0.0
    gt = split_ids(spec.get("ground_truth_ids", spec.get("gt_ids")))
    return 1.0 if gt and ids == gt else 0.0


def step_reward(completion: str, teacher_next: Any, reward_spec: Any, *, format_weight: float = 1.0,
                match_weight: float = 1.0, outcome_weight: float = 1.0, catalogue: Any = None) -> float:
    """Format (0 / 0.5 / 1) + tool-call match with the teacher's next step (0-1) + outcome (0 / 1)
    when the teacher's next step recommends: see :func:`outcome`."""
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
    won = 0.0
    recs = [a.get("product_ids") for n, a in got if n == RECOMMEND_PRODUCT]
    if recs and any(name == RECOMMEND_PRODUCT for name, _ in expected):
        won = outcome(recs[-1], _spec(reward_spec), catalogue)
    return format_weight * fmt + match_weight * match + outcome_weight * won


def make_reward_fn(format_weight: float, match_weight: float, outcome_weight: float,
                   sink: list[float] | None = None, catalogue: Any = None) -> Callable[..., list[float]]:
    """A TRL reward function (``completions`` + dataset columns as kwargs); rewards are appended to ``sink``."""

    def teacher_step_reward(completions: list[Any], teacher_next: list[Any] | None = None,
                            reward_spec: list[Any] | None = None, **_: Any) -> list[float]:
        out = []
        for i, comp in enumerate(completions):
            text = comp if isinstance(comp, str) else (comp[0].get("content", "") if comp else "")
            out.append(step_reward(text, (teacher_next or [None] * len(completions))[i],
                                   (reward_spec or [None] * len(completions))[i], format_weight=format_weight,
                                   match_weight=match_weight, outcome_weight=outcome_weight, catalogue=catalogue))
        if sink is not None:
            sink.extend(out)
        return out

    return teacher_step_reward
