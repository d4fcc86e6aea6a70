"""Evaluation rollouts: n sampled runs (+ one greedy run) per eval problem, scored production-strict.

Each run is written twice, as JSONL:

* ``trajectories.jsonl`` - ORO sandbox envelopes (reference §2) with the validator metadata an
  export adds (``eval_run_id``, ``agent_version_id``, ``category``, ``query``, ``score``), so the
  file can be fed back through ``traces/`` ingest and curation like any firehose part; ``status``
  stays ORO's sandbox status, ``eval_outcome`` names what the run came to (:func:`episode_outcome`:
  a run without any tool call is ``no_tool_call``, not ``success``);
* ``samples.jsonl`` - one row per run in the dataset-row shape (``id``, canonical ``messages``
  with ``arguments`` as JSON strings, ``tools`` as a JSON string, ``source``) plus the score and
  process metrics: the rejection re-SFT input (keep ``success``) and the metrics' source.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oro_assets import jsonio
from oro_assets.agents.rollout import Rollout, rollout_many
from oro_assets.evaluation.metrics import process_metrics

MAX_STEPS = 30          # ShoppingBench / ORO loop limits
TIMEOUT_S = 300.0


@dataclass(frozen=True)
class EvalSettings:
    """How an evaluation rolls out and scores: ``n`` sampled runs per problem at ``temperature`` (None: the
    policy's own; a checkpoint then samples at 0.7) plus one greedy run when ``greedy``.

    ``max_new_tokens``, ``top_p`` and ``device`` apply where a checkpoint is loaded; ``engine`` is the rollout
    engine's config (True: defaults, False: padded ``generate`` calls of ``batch_size`` lockstep episodes);
    ``workers`` run policies without a local model (HTTP, scripted); ``tools`` default to the arena's schemas;
    ``clock_factory`` gives each episode its clock; ``score_kwargs`` go to the scorer; ``ks`` are pass@k's k.
    """

    n: int = 8
    temperature: float | None = None
    top_p: float = 1.0
    greedy: bool = True
    seed: int = 0
    max_new_tokens: int = 256
    max_steps: int = MAX_STEPS
    timeout_s: float = TIMEOUT_S
    batch_size: int = 16
    workers: int = 1
    engine: Any = True
    device: str | None = None
    tools: Sequence[dict] | None = None
    clock_factory: Callable[[], Any] | None = None
    score_kwargs: Mapping[str, Any] | None = None
    ks: Sequence[int] = (1, 2, 4, 8, 16)

    def replace(self, **changes: Any) -> EvalSettings:
        return dataclasses.replace(self, **changes)

    @classmethod
    def field_names(cls) -> frozenset[str]:
        return frozenset(f.name for f in dataclasses.fields(cls))


def sibling_policy(policy: Any, *, temperature: float, seed: int | None = None) -> Any:
    """The same model at another temperature (shares weights): LocalModelPolicy or a wrapper of one.

    Wrappers (e.g. training's ``ViewPolicy``) are copied with their ``inner`` policy replaced.
    Policies that cannot change temperature are returned unchanged.
    """
    if hasattr(policy, "with_sampling"):
        kwargs = {"temperature": temperature} if seed is None else {"temperature": temperature, "seed": seed}
        return policy.with_sampling(**kwargs)
    if hasattr(policy, "inner"):
        wrapper = copy.copy(policy)
        wrapper.inner = sibling_policy(policy.inner, temperature=temperature, seed=seed)
        wrapper.name = getattr(wrapper.inner, "name", getattr(policy, "name", "policy"))
        return wrapper
    if hasattr(policy, "temperature"):
        clone = copy.copy(policy)
        clone.temperature = temperature
        if hasattr(clone, "name"):
            clone.name = f"{policy.name}@T{temperature:g}"
        return clone
    return policy


OUTCOMES = ("recommended", "no_recommendation", "no_tool_call", "timed_out", "failed")


def episode_outcome(episode: Any) -> str:
    """What a run came to, named for the evaluation. The arena's loop ends an episode whose model
    answers without any tool call with status ``success`` (ORO's sandbox status: the run completed);
    here it is ``no_tool_call``. A completed run with calls is ``recommended`` or
    ``no_recommendation``; a run that did not complete keeps its status (``timed_out``, ``failed``)."""
    if episode.status != "success":
        return str(episode.status)
    if not any(step.calls for step in episode.steps):
        return "no_tool_call"
    return "recommended" if episode.recommended_ids() else "no_recommendation"


def score_rollout(rollout: Rollout, catalogue: Any, *, greedy: bool, **score_kwargs: Any) -> dict:
    """Production-strict score + process metrics of one run (a metrics sample row)."""
    from oro_assets.arena.scoring import score_trace

    ep = rollout.episode
    problem = rollout.problem
    recommended = ep.recommended_ids()
    timestamps_ok = [s.timestamp is not None for s in ep.steps]
    result = score_trace(problem, recommended, catalogue, timestamps_ok=timestamps_ok, **score_kwargs)
    # Timeouts and crashes count as failures (reference §3): no success, and no ground-truth or rule
    # credit for what a run that never finished had recommended.
    finished = ep.status == "success"
    success = bool(result.success) and finished
    return {
        "problem_id": rollout.problem_id,
        "category": problem.get("category") or "Product",
        "difficulty": problem.get("difficulty") or "unknown",
        "sample": rollout.sample,
        "greedy": greedy,
        "policy": rollout.policy_name,
        "status": ep.status,
        "outcome": episode_outcome(ep),
        "error": ep.error,
        "success": success,
        "gt": float(result.gt) if finished else 0.0,
        "rule": float(result.rule) if finished else 0.0,
        "format": result.format,
        "recommended": recommended,
        "completion_tokens": sum(
            int(((r or {}).get("usage") or {}).get("completion_tokens") or 0) for s in ep.steps for r in s.inference
        ),
        "process": process_metrics(ep.steps, recommended),
        "items": item_metrics(result),
    }


def item_metrics(result: Any) -> dict:
    """Where a multi-item answer stands (what a Shop or Voucher failure comes from): items asked and recommended,
    which asked positions the recommendation meets in full (score 1), and the category's own condition (Shop: one
    shop; Voucher: the budget; None elsewhere)."""
    condition = result.shop if result.category == "Shop" else result.budget if result.category == "Voucher" else None
    return {"asked": len(result.items), "recommended": len(result.recommended),
            "met": [it.score >= 1.0 - 1e-9 for it in result.items], "condition": condition}


def run_id_for(policy_name: str, problems: Sequence[dict], n: int, temperature: float, seed: int, greedy: bool) -> str:
    return "ev_" + jsonio.content_hash({
        "policy": policy_name, "problems": [p["problem_id"] for p in problems], "n": n,
        "temperature": temperature, "seed": seed, "greedy": greedy,
    })[:16]


def _sample_key(row: dict) -> str:
    return "greedy" if row["greedy"] else f"s{row['sample']}"


def envelope(rollout: Rollout, row: dict, run_id: str, agent_version: str) -> dict:
    """An ORO sandbox envelope (+ export metadata) for one run."""
    ep = rollout.episode
    recorded = ep.to_oro_envelope()  # ORO's recording rules (arena/recorder.py)
    return {
        **{k: v for k, v in recorded.items() if k != "dialogue"},
        "problem_id": rollout.problem_id,
        "dialogue": recorded["dialogue"],
        "eval_run_id": run_id,
        "agent_version_id": agent_version,
        "category": row["category"],
        "query": rollout.problem.get("query"),
        "score": {"gt": row["gt"], "rule": row["rule"], "format": row["format"], "success": row["success"]},
        "eval_sample": _sample_key(row),
        "eval_outcome": row.get("outcome"),
    }


def dataset_row(rollout: Rollout, row: dict, tools: Sequence[dict], run_id: str) -> dict:
    """Dataset-row shape (curation/datasets.py) + score: every message has the same key set."""
    keys = ("role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name")
    messages = [{k: m.get(k) for k in keys} for m in rollout.episode.to_messages()]
    sample = _sample_key(row)
    return {
        "id": f"{run_id}_{rollout.problem_id}_{sample}",
        "messages": messages,
        "tools": jsonio.dumps(list(tools)),
        "source": f"eval:{run_id}:{rollout.problem_id}:{sample}",
        **{k: v for k, v in row.items() if k != "process"},
        "process": row["process"],
    }


def _write_jsonl(path: Path, rows: Sequence[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("wb") as fh:
        for r in rows:
            fh.write(jsonio.dumps_bytes(r) + b"\n")
    os.replace(tmp, path)


def run_eval_rollouts(policy: Any, problems: Sequence[dict], env: Any, catalogue: Any,
                      settings: EvalSettings = EvalSettings(),
                      policy_factory: Callable[[int], Any] | None = None) -> tuple[list[Rollout], list[dict]]:
    """``settings.n`` sampled runs per problem (+ one greedy run when ``settings.greedy``); returns (rollouts,
    sample rows).

    ``settings.temperature`` re-targets a model policy for the sampled runs (None = as given). The greedy
    run uses the same model at temperature 0. ``policy_factory(sample)`` replaces ``policy`` for
    sampled runs of policies that are seeded per sample (scripted baselines).
    """
    from oro_assets.arena.tools import TOOL_SCHEMAS

    s = settings
    tools = list(s.tools) if s.tools is not None else list(TOOL_SCHEMAS)
    common = dict(max_steps=s.max_steps, timeout_s=s.timeout_s, batch_size=s.batch_size, workers=s.workers,
                  clock_factory=s.clock_factory, episode_kwargs={"tools": tools}, engine=s.engine)
    score_kwargs = dict(s.score_kwargs or {})
    rollouts: list[Rollout] = []
    rows: list[dict] = []
    if s.n > 0:
        sampler = policy_factory or (sibling_policy(policy, temperature=s.temperature, seed=s.seed)
                                     if s.temperature is not None else policy)
        sampled = rollout_many(sampler, problems, env, s.n, **common)
        rollouts += sampled
        rows += [score_rollout(r, catalogue, greedy=False, **score_kwargs) for r in sampled]
    if s.greedy:
        g_policy = sibling_policy(policy, temperature=0.0, seed=s.seed)
        greedy_runs = rollout_many(g_policy, problems, env, 1, **common)
        rollouts += greedy_runs
        rows += [score_rollout(r, catalogue, greedy=True, **score_kwargs) for r in greedy_runs]
    return rollouts, rows


def write_rollouts(rollouts: Sequence[Rollout], rows: Sequence[dict], out_dir: str | Path, *, run_id: str,
                   agent_version: str, tools: Sequence[dict] | None = None) -> dict[str, Path]:
    """Write ``trajectories.jsonl`` (ORO envelopes) and ``samples.jsonl`` (dataset rows) atomically."""
    from oro_assets.arena.tools import TOOL_SCHEMAS

    tools = list(tools) if tools is not None else list(TOOL_SCHEMAS)
    out = Path(out_dir)
    paths = {"trajectories": out / "trajectories.jsonl", "samples": out / "samples.jsonl"}
    _write_jsonl(paths["trajectories"], [envelope(r, row, run_id, agent_version) for r, row in zip(rollouts, rows, strict=True)])
    _write_jsonl(paths["samples"], [dataset_row(r, row, tools, run_id) for r, row in zip(rollouts, rows, strict=True)])
    return paths
