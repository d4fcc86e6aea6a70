"""Stage 4, KTO (TRL ``KTOTrainer``): per-turn examples labelled desirable / undesirable by
production-strict success, class weights balanced into TRL's recommended band. The turns come from the curated
kto_dataset (miners' trajectories) and/or from the parent's own rollouts on train problems (``on_policy_k``)."""

from __future__ import annotations

import dataclasses
import random
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from oro_assets import jsonio
from oro_assets.toolcalls import RECOMMEND_PRODUCT
from oro_assets.training import checkpoints as ck
from oro_assets.training.checkpoints import StageResult
from oro_assets.training.data import DatasetError, kto_examples, load_rows, rows_hash
from oro_assets.training.profiles import ModelProfile
from oro_assets.training.stages.common import (
    LogFn,
    StageContext,
    apply_threads,
    base_args,
    default_tools,
    fit,
    load_for_training,
    print_log,
    row_problem_ids,
)
from oro_assets.training.stages.kto_config import KTOStageConfig
from oro_assets.training.stages.lifecycle import StageCheckpoint, Trained
from oro_assets.training.stages.rollouts import default_scorer, episode_row, of_categories, turn_calls
from oro_assets.training.tracking import Tracking


def balanced_kto_weights(n_desirable: int, n_undesirable: int) -> tuple[float, float]:
    """(desirable_weight, undesirable_weight) so that d*n_D / (u*n_U) lies in TRL's [1, 4/3] band."""
    if n_desirable == 0 or n_undesirable == 0:
        return 1.0, 1.0
    if n_desirable >= n_undesirable:
        return 1.0, min(n_desirable / n_undesirable, 100.0)  # ratio = 1
    return min(n_undesirable / n_desirable, 100.0), 1.0


def _interleave_classes(examples: list[dict], limit: int) -> list[dict]:
    """At most ``limit`` examples, desirable and undesirable alternating, so a cut keeps both classes."""
    pos = [e for e in examples if e["label"]]
    neg = [e for e in examples if not e["label"]]
    mixed: list[dict] = []
    for i in range(max(len(pos), len(neg))):
        mixed.extend(x[i] for x in (pos, neg) if i < len(x))
    return mixed[:limit]


def config_error(cfg: KTOStageConfig) -> str | None:
    """One line naming the field of a config that cannot give KTO both classes to learn from, or None."""
    if not cfg.curated_turns and cfg.on_policy_k < 1:
        return "kto: curated_turns=False and on_policy_k=0 leave the stage no example to train on"
    if cfg.turn_credit not in TURN_CREDITS:
        return f"kto: turn_credit={cfg.turn_credit!r} is not one of {', '.join(TURN_CREDITS)}"
    if cfg.on_policy_k and cfg.contrastive_only:
        if cfg.on_policy_k < 2:
            return (f"kto: on_policy_k={cfg.on_policy_k} gives each problem one rollout, so with contrastive_only no "
                    f"problem has both a success and a failure; use on_policy_k >= 2")
        if not cfg.temperature > 0:
            return (f"kto: temperature={cfg.temperature} samples the same rollout on_policy_k times, so with "
                    f"contrastive_only no problem has both a success and a failure; use temperature > 0")
    return None


def _turn_key(example: dict) -> str:
    return jsonio.content_hash([example["prompt"], example["completion"]])


TURN_CREDITS = ("episode", "first_deviation", "recommendation")


def _action_prefixes(examples: Sequence[dict]) -> list[tuple]:
    """The calls made up to and including each turn of one rollout's examples (in turn order)."""
    prefixes, calls = [], ()
    for e in examples:
        calls = (*calls, turn_calls(e["completion"][0]))
        prefixes.append(calls)
    return prefixes


def _recommends(example: dict) -> bool:
    return any(name == RECOMMEND_PRODUCT for name, _ in turn_calls(example["completion"][0]))


def _decisive_turns(group: list[tuple[list[dict], bool]]) -> list[tuple[list[dict], bool]]:
    """``turn_credit='first_deviation'``: each rollout's turns whose calls so far no rollout of the other outcome
    made; of a failed rollout, only the first of them."""
    prefixes = [_action_prefixes(examples) for examples, _ in group]
    made = {ok: {p for (_, o), ps in zip(group, prefixes, strict=True) if o == ok for p in ps} for ok in (True, False)}
    out = []
    for (examples, ok), ps in zip(group, prefixes, strict=True):
        own = [e for e, prefix in zip(examples, ps, strict=True) if prefix not in made[not ok]]
        out.append((own if ok else own[:1], ok))
    return out


def labelled_turns(labelled: dict[str, list[tuple[dict, bool]]], view: str, tools: Sequence[dict],
                   contrastive_only: bool, turn_credit: str = "episode") -> tuple[list[dict], list[str], int]:
    """Per-turn KTO examples of labelled rollout rows (problem id -> [(row, success)]), one per distinct (turn,
    label). ``contrastive_only``: only problems with both outcomes, and no turn that rollouts of both outcomes took.
    ``turn_credit``: see ``KTOStageConfig.turn_credit``.
    Returns (examples, the problem ids used, the number of turns taken by both outcomes)."""
    if turn_credit not in TURN_CREDITS:
        raise ValueError(f"kto.turn_credit must be one of {TURN_CREDITS}, got {turn_credit!r}")
    kept_ids = [pid for pid, group in labelled.items()
                if not contrastive_only or len({ok for _, ok in group}) == 2]
    examples: list[dict] = []
    labels_of: dict[str, set[bool]] = defaultdict(set)
    for pid in kept_ids:
        group = [(kto_examples(dict(row, label=ok), view, tools), ok) for row, ok in labelled[pid]]
        if turn_credit == "first_deviation":
            group = _decisive_turns(group)
        elif turn_credit == "recommendation":
            group = [([e for e in turns if _recommends(e)], ok) for turns, ok in group]
        for turns, ok in group:
            for e in turns:
                key = _turn_key(e)
                if ok not in labels_of[key]:
                    examples.append(e)
                labels_of[key].add(ok)
    ambiguous = {k for k, labels in labels_of.items() if len(labels) == 2}
    if contrastive_only:
        examples = [e for e in examples if _turn_key(e) not in ambiguous]
    return examples, sorted(kept_ids), len(ambiguous)


def on_policy_examples(profile: ModelProfile, problems: Sequence[dict], env: Any, parent: str | Path,
                       scorer: Callable[[dict, Any], bool], tools: Sequence[dict], *, seed: int = 0,
                       log: LogFn = print_log) -> tuple[list[dict], list[str], dict[str, Any]]:
    """The parent's own turns as KTO examples: ``on_policy_k`` rollouts per train problem at (temperature, top_p),
    each labelled by production-strict success. With ``contrastive_only`` only problems with both outcomes count,
    and a turn taken by a successful and a failed rollout alike is dropped. Returns (examples, problem ids, stats)."""
    from oro_assets.agents.rollout import rollout_many

    cfg = profile.kto
    problems = of_categories(problems, cfg.categories)
    chosen = list(problems[: cfg.on_policy_problems] if cfg.on_policy_problems else problems)
    apply_threads(profile)
    policy = ck.load_policy(parent, temperature=cfg.temperature, top_p=cfg.top_p, max_new_tokens=cfg.max_new_tokens,
                            seed=seed, dtype=profile.dtype)
    t0 = time.perf_counter()
    rollouts = rollout_many(policy, chosen, env, n=cfg.on_policy_k, max_steps=cfg.max_steps_per_episode,
                            batch_size=max(1, min(32, len(chosen) * cfg.on_policy_k)))
    labelled: dict[str, list[tuple[dict, bool]]] = defaultdict(list)
    for r in rollouts:
        row = episode_row(r.episode, tools, "kto_on_policy", r.problem_id, r.sample)
        labelled[r.problem_id].append((row, bool(scorer(r.problem, r.episode))))
    successes = sum(ok for group in labelled.values() for _, ok in group)
    examples, kept_ids, ambiguous = labelled_turns(labelled, profile.view, tools, cfg.contrastive_only,
                                                   cfg.turn_credit)
    mixed = [pid for pid, group in labelled.items() if len({ok for _, ok in group}) == 2]
    stats = {"on_policy_rollouts": len(rollouts), "on_policy_successes": successes,
             "on_policy_problems": len(chosen), "on_policy_mixed_problems": len(mixed),
             "on_policy_examples": len(examples), "on_policy_ambiguous_turns": ambiguous,
             "on_policy_rollout_s": round(time.perf_counter() - t0, 2)}
    log(f"kto: {successes}/{len(rollouts)} on-policy rollouts succeeded; {len(mixed)}/{len(chosen)} problems with "
        f"both outcomes; {len(examples)} turns kept, {ambiguous} taken by both outcomes")
    return examples, kept_ids, stats


def kto_trainer_class(profile: ModelProfile) -> type:
    """TRL's ``KTOTrainer``, or its label-position-head subclass where the profile asks for it."""
    if profile.label_position_loss:
        from oro_assets.training.stages.label_position_loss import label_position_kto_trainer

        return label_position_kto_trainer()
    from trl import KTOTrainer

    return KTOTrainer


def run_kto(profile: ModelProfile, kto_rows: str | Path | Sequence[dict], parent: str | Path, out_root: str | Path,
            tracking: Tracking = Tracking.disabled(), *, train_problems: Sequence[dict] = (), env: Any = None,
            catalogue: Any = None, scorer: Callable[[dict, Any], bool] | None = None, seed: int = 0,
            log: LogFn = print_log, force: bool = False) -> StageResult:
    """KTO (β from the profile, 0.02 by default) on per-turn examples labelled by production-strict success: the
    curated rows' turns (``curated_turns``) and the parent's own rollouts on ``train_problems`` (``on_policy_k``)."""
    from datasets import Dataset
    from trl import KTOConfig

    cfg = profile.kto
    error = config_error(cfg)
    if error:
        raise ValueError(error)
    rows = load_rows(kto_rows) if cfg.curated_turns else []
    if cfg.on_policy_k and (env is None or (catalogue is None and scorer is None) or not train_problems):
        raise ValueError("kto: on_policy_k needs train problems, an env and the catalogue (or a scorer)")
    hashes = {"kto": rows_hash(rows)}
    if cfg.on_policy_k:
        hashes["on_policy_problems"] = rows_hash([{"id": p["problem_id"]} for p in train_problems])
    # the version is known from the inputs (the rollouts follow from the parent, the problems and the seed), so a
    # reused checkpoint costs no rollouts
    checkpoint = StageCheckpoint(profile, "kto", dataclasses.asdict(cfg), hashes, parent, out_root, tracking)

    def train(tmp: Path, run: Any) -> Trained:
        tools = default_tools()
        examples: list[dict] = []
        for r in rows:
            examples.extend(kto_examples(r, profile.view, tools))
        random.Random(seed).shuffle(examples)
        problem_ids = row_problem_ids(rows)
        extra: dict[str, Any] = {}
        if cfg.on_policy_k:
            own, own_problems, extra = on_policy_examples(profile, train_problems, env, parent,
                                                          scorer or default_scorer(catalogue), tools, seed=seed,
                                                          log=log)
            random.Random(seed + 1).shuffle(own)
            examples = own + examples
            problem_ids = sorted(set(problem_ids) | set(own_problems))
        if cfg.max_examples is not None:
            examples = _interleave_classes(examples, cfg.max_examples)
        n_d = sum(1 for e in examples if e["label"])
        n_u = len(examples) - n_d
        if len(examples) < 2 or not n_d or not n_u:
            raise DatasetError(f"kto: need desirable and undesirable examples, got {n_d} and {n_u}"
                               + (f" (on-policy: {extra['on_policy_successes']}/{extra['on_policy_rollouts']} "
                                  f"rollouts succeeded, {extra['on_policy_mixed_problems']} problems with both "
                                  f"outcomes)" if extra else ""))
        d_w, u_w = balanced_kto_weights(n_d, n_u)
        model, tok = load_for_training(profile, parent)
        ds = Dataset.from_list([{k: e[k] for k in ("prompt", "completion", "label", "tools")} for e in examples])
        base = base_args(profile, cfg.train, str(tmp / "trainer"), f"kto-{checkpoint.version}")
        base["per_device_train_batch_size"] = max(2, base["per_device_train_batch_size"])  # KTO needs > 1
        args = KTOConfig(**base, beta=cfg.beta, desirable_weight=d_w, undesirable_weight=u_w,
                         max_length=cfg.max_length)
        trained, metrics = fit(kto_trainer_class(profile), profile=profile, model=model, run=run, log=log, args=args,
                               extrapolate=cfg.extrapolate,
                               train_dataset=ds, processing_class=tok)
        metrics.update({"desirable": n_d, "undesirable": n_u, "desirable_weight": d_w, "undesirable_weight": u_w,
                        **extra})
        ids = list(dict.fromkeys(e["id"] for e in examples))
        return Trained(trained, tok, metrics, ids, problem_ids)

    return checkpoint.run_once(train, force=force, log=log)


def from_params(ctx: StageContext) -> StageResult:
    env, catalogue = ctx.env() if ctx.profile.kto.on_policy_k else (None, None)
    problems = ctx.rows("problems") if ctx.profile.kto.on_policy_k else []
    return run_kto(ctx.profile, ctx.need("kto_rows"), ctx.need("parent"), ctx.out_root, ctx.tracking,
                   train_problems=problems, env=env, catalogue=catalogue, seed=ctx.seed, log=ctx.log,
                   force=ctx.force)
