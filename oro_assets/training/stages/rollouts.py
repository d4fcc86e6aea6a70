"""Scoring arena episodes and turning them into dataset rows (rejection re-SFT and teacher-SFT;
the evaluation uses the same loader and episode loop)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from oro_assets import jsonio
from oro_assets.training.data import normalise_messages


def category_of(item: Mapping) -> str:
    """A problem's (or a row's) category; one without a category is a Product problem."""
    return item.get("category") or "Product"


def counts_by_category(categories: Iterable[str]) -> dict[str, int]:
    """How many of each category, in name order (a stage's metrics)."""
    return dict(sorted(Counter(categories).items()))


def of_categories(problems: Sequence[dict], categories: Sequence[str] | None) -> list[dict]:
    """The problems of ``categories`` (None: all)."""
    return [p for p in problems if categories is None or category_of(p) in categories]


def episode_score(problem: dict, episode: Any, catalogue: Any) -> Any:
    """The arena scorer's result for an episode's last recommendation; None when the episode failed or recommended
    nothing (no score, no success)."""
    from oro_assets.arena.scoring import score_trace

    recommended = episode.recommended_ids() if episode.status == "success" else []
    return score_trace(problem, recommended, catalogue) if recommended else None


def default_scorer(catalogue: Any) -> Callable[[dict, Any], bool]:
    """Production-strict success of an episode's last recommendation (arena scorer)."""

    def score(problem: dict, episode: Any) -> bool:
        result = episode_score(problem, episode, catalogue)
        return result is not None and bool(result.success)

    return score


def episode_row(episode: Any, tools: Sequence[dict], source: str, problem_id: str, sample: int) -> dict:

    messages = normalise_messages(episode.to_messages())
    rid = f"{source}_{problem_id}_{sample}_{jsonio.content_hash(messages)[:10]}"
    return {"id": rid, "messages": messages, "tools": jsonio.template_dumps(list(tools)),
            "source": source, "problem_id": problem_id}


def _canonical_args(arguments: Any) -> str:
    if isinstance(arguments, str):
        try:
            arguments = jsonio.loads(arguments)
        except ValueError:
            return arguments
    return jsonio.canonical_dumps(arguments)


def trajectory_key(row: dict) -> tuple:
    """What makes two kept rollouts the same trajectory: the problem and, per assistant turn, its calls (tool name,
    canonical arguments). Thinking text and sample number do not count: two samples that search, view and recommend
    alike teach the same thing."""
    turns = [turn_calls(m) for m in row.get("messages") or [] if m.get("role") == "assistant"]
    return str(row.get("problem_id")), tuple(turns)


def turn_calls(message: dict) -> tuple:
    """What an assistant turn does: its calls as (tool name, canonical arguments), thinking text aside."""
    calls = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        calls.append((str(fn.get("name")), _canonical_args(fn.get("arguments"))))
    return tuple(calls)


def dedupe_trajectories(rows: Sequence[dict]) -> list[dict]:
    """The first row of each :func:`trajectory_key`, in order."""
    seen: set[tuple] = set()
    out = []
    for row in rows:
        key = trajectory_key(row)
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out
