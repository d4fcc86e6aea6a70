"""Checkpoint checks (wired as Dagster asset checks by the lead; plain functions here).

* ``check_loss``: every logged loss finite, and the end of training lower than the start.
* ``check_reload_tool_call``: the checkpoint reloads and, given an arena prompt, emits a parseable tool call.
* ``check_weights_changed``: training changed the weights it started from (a stage that did not is a no-op).
* ``check_copies_request``: greedy on made-up requests, the first search copies the words the request names.
* ``check_manifest_disjoint``: no example id / problem id of the checkpoint (and its ancestors) is in the eval pool.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
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


def _greedy_policy(checkpoint: str | Path | ck.LoadedCheckpoint, max_new_tokens: int) -> Any:
    """A greedy policy of a checkpoint dir (loaded here) or of a checkpoint already loaded (``ck.load_checkpoint``)."""
    if isinstance(checkpoint, ck.LoadedCheckpoint):
        return checkpoint.policy(temperature=0.0, max_new_tokens=max_new_tokens)
    return ck.load_policy(checkpoint, temperature=0.0, max_new_tokens=max_new_tokens)


def check_reload_tool_call(checkpoint: str | Path | ck.LoadedCheckpoint, query: str | None = None,
                           tools: list[dict] | None = None, max_new_tokens: int = 96) -> CheckOutcome:
    """Reload the checkpoint through ``load_policy`` (greedy; or take it loaded) and parse one turn for an arena
    prompt."""
    if tools is None:
        from oro_assets.arena.tools import TOOL_SCHEMAS

        tools = TOOL_SCHEMAS
    policy = _greedy_policy(checkpoint, max_new_tokens)
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


#: Seed of the copy probes' made-up requests: no stage draws its drills at it (training seeds, + 1, + 1000 x restart).
COPY_PROBE_SEED = 7_777_777
#: Share of the probes whose first search must copy the request's words (session 37, world 202: a working sft 28 of
#: 32, its warm-up 31 of 32, the base and four stalled warm-ups 0 of 32).
COPY_PROBE_MIN_SHARE = 0.5


def copy_probes(catalogue: Any, n: int, seed: int = COPY_PROBE_SEED) -> list[tuple[str, str]]:
    """``n`` made-up one-product requests from the catalogue's title words (the miner-style copy drills), each with
    the product words a first ``find_product`` must carry: ``(request, words)``."""
    from oro_assets.arena.episode import SYSTEM_PROMPT
    from oro_assets.training.corpus import copy_drill_rows
    from oro_assets.training.stages.common import default_tools

    probes = []
    for row in copy_drill_rows(catalogue, n, seed, SYSTEM_PROMPT, default_tools(), style="miner"):
        request = next(m["content"] for m in row["messages"] if m["role"] == "user")
        call = next(c for m in row["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or [])
        probes.append((request, str(jsonio.loads(call["function"]["arguments"])["q"])))
    return probes


def copy_share(first_search: Callable[[str], str | None], probes: list[tuple[str, str]]) -> tuple[float, list[dict]]:
    """Share of ``probes`` whose first search (``first_search(request)``: the query of the model's first
    ``find_product`` call, None when it made none) holds every word the request names, in any order; and the
    misses."""
    misses = []
    for request, words in probes:
        query = first_search(request)
        if query is None or not set(words.lower().split()) <= set(query.lower().split()):
            misses.append({"request": request, "words": words, "first_search": query})
    return (1 - len(misses) / len(probes), misses) if probes else (0.0, misses)


def check_copies_request(checkpoint: str | Path | ck.LoadedCheckpoint, catalogue: Any, n: int = 32,
                         min_share: float = COPY_PROBE_MIN_SHARE) -> CheckOutcome:
    """Greedy on ``n`` made-up requests (``copy_probes``: catalogue words no stage trained on), the reloaded
    checkpoint's first ``find_product`` query copies every product word the request names in at least ``min_share``
    of them. A model that learned no copy answers with words of its own, and every later figure is then near 0 (world
    202's sft in session 36, 0.0% on every category, passed every other check). No catalogue or no probe fails."""
    name = "copies_request_words"
    probes = copy_probes(catalogue, n) if catalogue is not None else []
    if not probes:
        return CheckOutcome(name, False, "no catalogue words to build copy probes from: nothing to check")
    from oro_assets.arena.tools import TOOL_SCHEMAS
    from oro_assets.toolcalls import FIND_PRODUCT

    policy = _greedy_policy(checkpoint, 160)

    def first_search(request: str) -> str | None:
        turn = policy.act({"problem_id": "copy-probe", "query": request}, arena_probe_messages(request), TOOL_SCHEMAS)
        call = next((c for c in turn.tool_calls if c.name == FIND_PRODUCT), None)
        return None if call is None else str((call.arguments or {}).get("q", ""))

    share, misses = copy_share(first_search, probes)
    copied = len(probes) - len(misses)
    return CheckOutcome(name, share >= min_share,
                        f"the first search copied the request's words in {copied} of {len(probes)} made-up requests "
                        f"(at least {min_share:.0%} needed)",
                        {"copied": copied, "probes": len(probes), "min_share": min_share, "misses": misses[:5]})


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
