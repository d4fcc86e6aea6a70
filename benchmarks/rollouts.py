"""Rollouts side by side: today's path and the rollout engine, on the same checkpoint and problems, in one run.

    .venv/bin/python benchmarks/rollouts.py --checkpoint <data>/checkpoints/sft/<version> --data-dir <data> \
        --problems 120 --sampled-problems 30 --n 8 --threads 1 2 [--out benchmarks/results/rollouts.json]
    .venv/bin/python benchmarks/rollouts.py --build /tmp/rollouts_ckpt --sft-steps 300   # or train one on --seed's world

``--data-dir``: a main run's data dir (its world and the dev pool's Product problems), paired with that run's
checkpoint - the sft stage of ``oro-assets main`` solves ~20-30% of Product problems, so the sampled comparison
has successes to compare (the ``--build`` checkpoint of 300 SFT steps solved none).

Today's path (``engine=False``): every turn re-renders and re-encodes the whole conversation and one padded HF
``generate`` serves all lockstep episodes (``EvalConfig.batch_size`` 72); an episode that ends leaves its slot
idle until the round ends. The engine (``agents/engine.py``): each episode's KV cache kept across its turns,
continuous batching by tokens, per-episode sampling. Both run the evaluation's own policy (``load_policy``: the
profile's prompt view) through ``rollout_many`` and the arena's episode loop, and are scored production-strict.

Reported per torch thread count: episodes/s, generated tokens/s and episodes per CPU-second of each path and their
ratios (on a shared box the CPU-second ratio is the steadier one: a neighbour's load slows wall time, not CPU
time); greedy outcomes (status, outcome, recommended ids, success) compared episode for episode; sampled runs
compared in distribution: pass@1 and pass@n of each path with 95% bootstrap intervals over problems and the paired
difference's interval (samples are seeded per episode in the engine and per batch call in today's path, so they are
equal in distribution, not token for token).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def build_checkpoint(out: Path, sft_steps: int, seed: int, copy_steps: int | None = None) -> Path:
    """Tiny base (copy pre-training: the profile's steps unless ``copy_steps``) + ``sft_steps`` of SFT on the
    scripted teacher's Product episodes of the training split: a checkpoint whose greedy runs succeed sometimes."""
    from train_tiny import split_world

    from oro_assets.arena.env import InProcessEnv
    from oro_assets.arena.policies.agentic import TeacherPolicy
    from oro_assets.arena.tools import TOOL_SCHEMAS
    from oro_assets.training import stages
    from oro_assets.training.profiles import get_profile, with_overrides
    from oro_assets.training.tiny_model import build_base_checkpoint

    world = _world(seed)
    env = InProcessEnv(world.catalogue)
    train, _ = split_world(world, seed)
    teacher = TeacherPolicy({p["problem_id"]: p for p in world.problems})
    rows, _ = stages.teacher_rows(teacher, [p for p in train if p["category"] == "Product"], env,
                                  stages.default_scorer(world.catalogue), TOOL_SCHEMAS)
    profile = get_profile("tiny")
    if copy_steps is not None:
        profile = with_overrides(profile, "base", copy_pretrain_steps=copy_steps)
    base = build_base_checkpoint(profile, out, world.catalogue, world.problems, seed=seed)
    p = with_overrides(profile, "sft", max_steps=sft_steps, copy_drills=0, mixed_drills=0, row_shapes=None,
                       word_swaps=0)
    return Path(stages.run_sft(p, rows, base, out, catalogue=world.catalogue, seed=seed, log=lambda m: None).path)


def _world(seed: int):
    from oro_assets.arena.generator import build_world

    return build_world(seed, n_problems=1500, n_products=6000)


def _problems(args: argparse.Namespace) -> tuple:
    """(catalogue, held-out Product problems): a main run's dev pool (``--data-dir``) or ``--seed``'s world."""
    if args.data_dir:
        from oro_assets.arena.catalogue import Catalogue
        from oro_assets.evaluation.heldout import load_eval_problems

        data = Path(args.data_dir)
        rows = load_eval_problems(data / "warehouse" / "eval_problems.jsonl", "dev", reader="benchmarks/rollouts.py")
        return Catalogue.from_jsonl(data / "arena" / "catalogue.jsonl"), [p for p in rows if p["category"] == "Product"]
    from train_tiny import split_world

    world = _world(args.seed)
    _, heldout = split_world(world, args.seed)
    return world.catalogue, [p for p in heldout if p["category"] == "Product"]


def _wilson(k: int, n: int, z: float = 1.96) -> list[float]:
    if n == 0:
        return [0.0, 0.0]
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [round(max(0.0, c - h), 4), round(min(1.0, c + h), 4)]


def _arm(policy, problems, env, catalogue, n: int, engine, legacy_batch: int, max_steps: int, greedy: bool) -> dict:
    from oro_assets.agents.rollout import rollout_many
    from oro_assets.arena.tools import TOOL_SCHEMAS
    from oro_assets.evaluation.rollout import score_rollout

    stats: dict = {}
    t0, c0 = time.perf_counter(), time.process_time()
    rollouts = rollout_many(policy, problems, env, n, max_steps=max_steps, batch_size=legacy_batch, engine=engine,
                            episode_kwargs={"tools": list(TOOL_SCHEMAS)}, stats=stats)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rows = [score_rollout(r, catalogue, greedy=greedy) for r in rollouts]
    tokens = sum(r["completion_tokens"] for r in rows)
    wins = sum(r["success"] for r in rows)
    solved = len({r["problem_id"] for r in rows if r["success"]})
    out = {"episodes": len(rows), "wall_s": round(wall, 2), "episodes_per_s": round(len(rows) / wall, 3),
           "cpu_s": round(cpu, 2), "episodes_per_cpu_s": round(len(rows) / cpu, 3),
           "generated_tokens": tokens, "tokens_per_s": round(tokens / wall, 1),
           "turns": sum(len(r.episode.steps) for r in rollouts), "successes": wins,
           "success_rate": round(wins / len(rows), 4), "success_ci95": _wilson(wins, len(rows)),
           "problems_solved": solved, "pass_at_n": round(solved / len(problems), 4),
           "outcomes": {o: sum(r["outcome"] == o for r in rows) for o in sorted({r["outcome"] for r in rows})}}
    if stats:
        out["engine"] = stats
    out["_rows"] = rows
    out["_messages"] = [r.episode.to_messages() for r in rollouts]
    return out


def _compare(legacy: dict, engine: dict, greedy: bool) -> dict:
    la, ea = legacy.pop("_rows"), engine.pop("_rows")
    lm, em = legacy.pop("_messages"), engine.pop("_messages")
    res = {"episodes_per_s_ratio": round(engine["episodes_per_s"] / legacy["episodes_per_s"], 2),
           "tokens_per_s_ratio": round(engine["tokens_per_s"] / max(legacy["tokens_per_s"], 1e-9), 2),
           "episodes_per_cpu_s_ratio": round(engine["episodes_per_cpu_s"] / legacy["episodes_per_cpu_s"], 2)}
    if greedy:
        key = lambda r: (r["problem_id"], r["status"], r["outcome"], tuple(r["recommended"]), r["success"])  # noqa: E731
        same = sum(key(a) == key(b) for a, b in zip(la, ea, strict=True))
        res["identical_outcomes"] = f"{same}/{len(la)}"
        res["identical_messages"] = f"{sum(a == b for a, b in zip(lm, em, strict=True))}/{len(lm)}"
        res["outcomes_identical"] = same == len(la)
    else:
        res.update(_pass_at_k(la, ea))
    return res


def _per_problem(rows: list[dict]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for r in rows:
        out.setdefault(r["problem_id"], []).append(int(bool(r["success"])))
    return out


def _pass_at_k(legacy_rows: list[dict], engine_rows: list[dict], resamples: int = 4000) -> dict:
    """pass@1 (mean success) and pass@n (share of problems with a success among their n samples) of both paths, each
    with a 95% bootstrap interval over problems (samples of one problem are not independent), and the paired
    differences (engine - today's path, same problems) with theirs. ``within_noise``: both intervals contain 0."""
    import random

    lp, ep = _per_problem(legacy_rows), _per_problem(engine_rows)
    ids = sorted(lp)
    stat = {"pass_at_1": lambda s: sum(s) / len(s), "pass_at_n": lambda s: float(any(s))}

    def mean(name: str, by: dict, pick: list[str]) -> float:
        return sum(stat[name](by[i]) for i in pick) / len(pick)

    rng = random.Random(0)
    draws = [[rng.choice(ids) for _ in ids] for _ in range(resamples)]
    out: dict = {"problems": len(ids), "samples_per_problem": len(lp[ids[0]]) if ids else 0}
    for name in stat:
        block: dict = {}
        for label, by in (("legacy", lp), ("engine", ep)):
            boot = sorted(mean(name, by, d) for d in draws)
            block[label] = round(mean(name, by, ids), 4)
            block[f"{label}_ci95"] = [round(boot[int(0.025 * resamples)], 4), round(boot[int(0.975 * resamples) - 1], 4)]
        diffs = sorted(mean(name, ep, d) - mean(name, lp, d) for d in draws)
        block["diff"] = round(block["engine"] - block["legacy"], 4)
        block["diff_ci95"] = [round(diffs[int(0.025 * resamples)], 4), round(diffs[int(0.975 * resamples) - 1], 4)]
        out[name] = block
    out["within_noise"] = all(out[k]["diff_ci95"][0] <= 0 <= out[k]["diff_ci95"][1] for k in stat)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    who = ap.add_mutually_exclusive_group(required=True)
    who.add_argument("--checkpoint", help="a tiny checkpoint trained on --seed's world (e.g. from --build)")
    who.add_argument("--build", help="train a checkpoint into this folder first (base + --sft-steps of SFT)")
    ap.add_argument("--data-dir", help="a main run's data dir: its world (arena/catalogue.jsonl) and the dev pool's "
                                       "Product problems (warehouse/eval_problems.jsonl) instead of --seed's world; "
                                       "pair with that run's checkpoint (e.g. checkpoints/sft/<version>)")
    ap.add_argument("--sft-steps", type=int, default=300)
    ap.add_argument("--copy-steps", type=int, default=None, help="copy pre-training steps of --build's base "
                                                                  "(default: the tiny profile's)")
    ap.add_argument("--build-only", action="store_true", help="stop after --build")
    ap.add_argument("--seed", type=int, default=7, help="world and training seed")
    ap.add_argument("--problems", type=int, default=90, help="held-out Product problems of the greedy run")
    ap.add_argument("--sampled-problems", type=int, default=30)
    ap.add_argument("--n", type=int, default=8, help="sampled runs per problem (pass@n)")
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--max-new-tokens", type=int, default=160, help="per turn (EvalConfig's default)")
    ap.add_argument("--max-steps", type=int, default=30)
    ap.add_argument("--legacy-batch", type=int, default=72, help="today's lockstep batch (EvalConfig.batch_size)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--out", default="benchmarks/results/rollouts.json")
    args = ap.parse_args(argv)

    import torch

    from oro_assets.agents.engine import EngineConfig
    from oro_assets.arena.env import InProcessEnv
    from oro_assets.evaluation.rollout import sibling_policy
    from oro_assets.training.checkpoints import load_policy

    t_build = None
    if args.build:
        t0 = time.perf_counter()
        checkpoint = build_checkpoint(Path(args.build), args.sft_steps, args.seed, args.copy_steps)
        t_build = round(time.perf_counter() - t0, 1)
        print(f"checkpoint {checkpoint} built in {t_build}s", flush=True)
        if args.build_only:
            return 0
    else:
        checkpoint = Path(args.checkpoint)
    catalogue, product = _problems(args)
    env = InProcessEnv(catalogue)
    greedy_problems, sampled_problems = product[: args.problems], product[: args.sampled_problems]
    greedy = load_policy(checkpoint, temperature=0.0, max_new_tokens=args.max_new_tokens, seed=0)
    sampler = sibling_policy(greedy, temperature=args.temperature, seed=0)
    report: dict = {"checkpoint": str(checkpoint), "build_s": t_build, "config": {
        k: v for k, v in vars(args).items() if k not in ("checkpoint", "build", "out")}, "threads": {}}
    for threads in args.threads:
        torch.set_num_threads(threads)
        block: dict = {}
        for label, pol, probs, n, is_greedy in (("greedy", greedy, greedy_problems, 1, True),
                                                ("sampled", sampler, sampled_problems, args.n, False)):
            arms = {}
            # The engine pins its own torch threads (EngineConfig.cpu_threads, 1 by default: main runs two step
            # processes side by side); here it gets the same thread count as today's path.
            for arm, engine in (("legacy", False), ("engine", EngineConfig(cpu_threads=threads))):
                arms[arm] = _arm(pol, probs, env, catalogue, n, engine, args.legacy_batch, args.max_steps,
                                 is_greedy)
                print(f"threads {threads} {label} {arm}: {arms[arm]['episodes']} episodes in {arms[arm]['wall_s']}s "
                      f"({arms[arm]['episodes_per_s']}/s, {arms[arm]['tokens_per_s']} tok/s, "
                      f"{arms[arm]['cpu_s']} CPU-s), "
                      f"success {arms[arm]['successes']}", flush=True)
            cmp = _compare(arms["legacy"], arms["engine"], is_greedy)
            block[label] = {**arms, "compare": cmp}
            print(f"threads {threads} {label}: {json.dumps(cmp)}", flush=True)
        report["threads"][str(threads)] = block
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
