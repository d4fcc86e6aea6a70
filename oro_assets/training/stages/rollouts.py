"""Scoring arena episodes and turning them into dataset rows (rejection re-SFT and teacher-SFT;
the evaluation uses the same loader and episode loop)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from oro_assets import jsonio
from oro_assets.training.data import normalise_messages


def default_scorer(catalogue: Any) -> Callable[[dict, Any], bool]:
    """Production-strict success of an episode's last recommendation (arena scorer)."""
    from oro_assets.arena.scoring import score_trace

    def score(problem: dict, episode: Any) -> bool:
        if episode.status != "success":
            return False
        return bool(score_trace(problem, episode.recommended_ids(), catalogue).success)

    return score


def episode_row(episode: Any, tools: Sequence[dict], source: str, problem_id: str, sample: int) -> dict:

    messages = normalise_messages(episode.to_messages())
    rid = f"{source}_{problem_id}_{sample}_{jsonio.content_hash(messages)[:10]}"
    return {"id": rid, "messages": messages, "tools": jsonio.template_dumps(list(tools)),
            "source": source, "problem_id": problem_id}
