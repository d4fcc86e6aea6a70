"""Learnability benchmark of the tiny profile: can a from-scratch model learn the arena protocol on CPU?

    .venv/bin/python benchmarks/train_tiny.py --out /tmp/tiny_bench [--seed 7] [--drills 1200] [--synthetic 1500]
    .venv/bin/python benchmarks/train_tiny.py chain --out /tmp/tiny_chain   # whole default tiny chain, timed
    .venv/bin/python benchmarks/train_tiny.py chain --out /tmp/c2 --set sft.copy_drills=1600 --set arch.copy_pretrain_steps=800
    .venv/bin/python benchmarks/train_tiny.py curated --out /tmp/cur --data /tmp/d1/data /tmp/d2/data   # curated-only SFT per day
    .venv/bin/python benchmarks/train_tiny.py copy --checkpoints <checkpoint dirs>   # copy across a gap, per checkpoint
    .venv/bin/python benchmarks/train_tiny.py grpo --parent <checkpoint> --seed 101   # Dr. GRPO alone: reward variance

Builds an arena world (arena.generator.build_world), holds out whole variant groups, evaluates on
held-out easy/medium Product problems with a greedy rollout (same loader as evaluation:
``checkpoints.load_policy``), after: base -> copy-drill warm-up -> SFT on teacher trajectories
(train problems + synthetic problems over non-eval catalogue products). Prints valid-call rate,
exact search-argument rate, recommended-id-among-results rate and success, plus wall times.
Wall-clock limits live here, not in tests.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))



def _dev_problems(path: Path) -> list[dict]:
    """The held-out problems a screen may read: the dev pool only (the test pool is locked to the final report)."""
    from oro_assets.evaluation.heldout import load_eval_problems

    return load_eval_problems(path, "dev", reader="benchmarks/train_tiny.py")

def _every(n: int):
    def log(msg: str) -> None:
        if msg.startswith("step=") and int(msg.split()[0][5:]) % n == 0:
            print("   ", msg, flush=True)
    return log


def split_world(world, seed: int, heldout_share: float = 0.2):
    groups = sorted(set(world.variant_groups.values()))
    rng = random.Random(seed)
    held = set(rng.sample(groups, max(1, int(len(groups) * heldout_share))))
    train = [p for p in world.problems if world.variant_groups[p["problem_id"]] not in held]
    heldout = [p for p in world.problems if world.variant_groups[p["problem_id"]] in held]
    return train, heldout


def _norm_args(args):
    """Search arguments compared case-insensitively: the arena matches services case-insensitively and the
    tiny tokenizer lower-cases ("COD" comes back as "cod")."""
    if not isinstance(args, dict):
        return args
    return {k: v.lower() if isinstance(v, str) else v for k, v in args.items()}


def teacher_first_args(teacher, problems, env) -> dict:
    """problem id -> the scripted teacher's first ``find_product`` arguments (what an exact copy searches)."""
    from oro_assets.arena.tools import TOOL_SCHEMAS
    from oro_assets.training import stages

    rows = stages.teacher_rows(teacher, problems, env, lambda p, e: True, TOOL_SCHEMAS)[0]
    return {r["problem_id"]: json.loads(r["messages"][2]["tool_calls"][0]["function"]["arguments"]) for r in rows}


def evaluate(ckpt, problems, env, catalogue, teacher_first_args, max_new_tokens=120, max_steps=6):
    import torch

    from oro_assets.agents.rollout import rollout_many
    from oro_assets.arena.scoring import score_trace
    from oro_assets.training.checkpoints import load_policy
    torch.set_num_threads(1)

    policy = load_policy(ckpt, temperature=0.0, max_new_tokens=max_new_tokens)
    t0 = time.perf_counter()
    rollouts = rollout_many(policy, problems, env, n=1, max_steps=max_steps, batch_size=32)
    wall = time.perf_counter() - t0
    n = len(rollouts)
    valid = exact = among = success = 0
    by_difficulty: dict[str, list[bool]] = {}
    by_category: dict[str, list[bool]] = {}
    for r in rollouts:
        steps = r.episode.steps
        if steps and steps[0].calls and steps[0].calls[0].raw_arguments is None:
            valid += 1
        first_find = next((c for s in steps for c in s.calls if c.name == "find_product"), None)
        if first_find is not None and _norm_args(first_find.arguments) == _norm_args(teacher_first_args.get(r.problem_id)):
            exact += 1
        shown = set()
        for s in steps:
            for c in s.calls:
                if c.name == "find_product" and isinstance(c.result, list):
                    shown.update(str(h.get("product_id")) for h in c.result[:5] if isinstance(h, dict))
        rec = r.episode.recommended_ids()
        if rec and all(x in shown for x in rec):
            among += 1
        ok = score_trace(r.problem, rec, catalogue).success
        success += ok
        by_difficulty.setdefault(r.problem.get("difficulty", "?"), []).append(ok)
        by_category.setdefault(r.problem.get("category") or "Product", []).append(ok)
    return {"n": n, "valid_call": valid / n, "exact_search_args": exact / n, "recommended_among_results": among / n,
            "success": success / n, "eval_wall_s": round(wall, 1),
            "success_by_difficulty": {k: f"{sum(v)}/{len(v)}" for k, v in sorted(by_difficulty.items())},
            "success_by_category": {k: f"{sum(v)}/{len(v)}" for k, v in sorted(by_category.items())}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/tiny_bench")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--problems", type=int, default=1500)
    ap.add_argument("--products", type=int, default=6000)
    ap.add_argument("--drills", type=int, default=2000)
    ap.add_argument("--synthetic", type=int, default=2000)
    ap.add_argument("--drill-epochs", type=float, default=1.0)
    ap.add_argument("--traj-epochs", type=float, default=1.0)
    ap.add_argument("--n-eval", type=int, default=100)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--batch", type=int, default=8)
    args = ap.parse_args(argv)

    from oro_assets.arena.env import InProcessEnv
    from oro_assets.arena.episode import SYSTEM_PROMPT
    from oro_assets.arena.generator import build_world
    from oro_assets.arena.policies.agentic import TeacherPolicy
    from oro_assets.arena.problems import problem_ground_truth_ids
    from oro_assets.arena.tools import TOOL_SCHEMAS
    from oro_assets.training.corpus import (
        arena_corpus_texts,
        copy_drill_rows,
        rendered_examples,
        synthetic_product_problems,
    )
    from oro_assets.training.profiles import get_profile, with_overrides
    from oro_assets.training.stages import default_scorer, run_sft, teacher_rows
    from oro_assets.training.tiny_model import build_base_model, build_tokenizer

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    times: dict[str, float] = {}
    t = time.perf_counter()
    world = build_world(args.seed, n_problems=args.problems, n_products=args.products)
    env = InProcessEnv(world.catalogue)
    train, heldout = split_world(world, args.seed)
    eval_set = [p for p in heldout if p["category"] == "Product" and p["difficulty"] in ("easy", "medium")]
    eval_set = eval_set[: args.n_eval]
    exclude = {i for p in heldout for i in problem_ground_truth_ids(p)}
    syn = synthetic_product_problems(world.catalogue, args.synthetic, args.seed, exclude)
    train_prod = [p for p in train if p["category"] == "Product"]
    scorer = default_scorer(world.catalogue)
    everyone = {p["problem_id"]: p for p in world.problems + syn}
    teacher = TeacherPolicy(everyone)
    traj, n_eps = teacher_rows(teacher, train_prod + syn, env, scorer, TOOL_SCHEMAS)
    # teacher's own first search on eval problems: the target for "exact search args"
    first_args = teacher_first_args(TeacherPolicy(everyone), eval_set, env)
    drills = copy_drill_rows(world.catalogue, args.drills, args.seed, SYSTEM_PROMPT, TOOL_SCHEMAS)
    times["data_s"] = time.perf_counter() - t
    print(f"data: {len(train)} train / {len(heldout)} held-out problems, eval {len(eval_set)}, teacher rows "
          f"{len(traj)}/{n_eps}, drills {len(drills)} ({times['data_s']:.1f}s)", flush=True)

    profile = get_profile("tiny")
    t = time.perf_counter()
    boot = build_tokenizer([])
    corpus = arena_corpus_texts(world.catalogue, world.problems + syn, TOOL_SCHEMAS,
                                rendered_examples(boot, traj + drills[:20], profile.view, limit=80))
    base = build_base_model(out / "base", corpus, seed=args.seed, arch=profile.arch)
    times["base_s"] = time.perf_counter() - t
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(base)
    from oro_assets.training.data import sft_example

    lens = [len(tok.apply_chat_template(e["messages"], tools=json.loads(e["tools"]) or None, tokenize=False).split())
            for e in (sft_example(r, profile.view) for r in traj[:50])]
    lens = [len(tok(t)["input_ids"]) for t in [tok.apply_chat_template(e["messages"], tokenize=False)
            for e in (sft_example(r, profile.view) for r in traj[:50])]]
    print(f"vocab {len(tok)}; trajectory tokens mean {sum(lens) / len(lens):.0f} max {max(lens)}", flush=True)

    results = {"base": evaluate(base, eval_set[:8], env, world.catalogue, first_args)}
    print("base", results["base"], flush=True)
    p1 = with_overrides(profile, "sft", num_train_epochs=args.drill_epochs, learning_rate=args.lr,
                        per_device_train_batch_size=args.batch)
    t = time.perf_counter()
    warm = run_sft(p1, drills, base, out / "ckpt", force=True, log=_every(10))
    times["drill_s"] = time.perf_counter() - t
    print(f"drills: {warm.metrics['steps']} steps, loss {warm.metrics['loss_first']:.3f} -> "
          f"{warm.metrics['final_loss']:.3f} in {times['drill_s']:.0f}s", flush=True)
    p2 = with_overrides(profile, "sft", num_train_epochs=args.traj_epochs, learning_rate=args.lr,
                        per_device_train_batch_size=args.batch)
    t = time.perf_counter()
    sft = run_sft(p2, traj, warm.path, out / "ckpt2", force=True, log=_every(10))
    times["traj_s"] = time.perf_counter() - t
    print(f"trajectories: {sft.metrics['steps']} steps, loss {sft.metrics['loss_first']:.3f} -> "
          f"{sft.metrics['final_loss']:.3f} in {times['traj_s']:.0f}s", flush=True)
    results["sft"] = evaluate(sft.path, eval_set, env, world.catalogue, first_args)
    print("sft", results["sft"], flush=True)
    results["times"] = {k: round(v, 1) for k, v in times.items()}
    (out / "results.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    return 0




def rl_prompt_rows(rows: list[dict], limit: int, problems: dict[str, dict] | None = None) -> list[dict]:
    """rl_prompts-shaped rows (one per assistant step) from teacher trajectories, the episodes taken round-robin over
    their categories; ``reward_spec`` is the problem's scoring spec when ``problems`` (id -> problem) has it (then the
    reward's outcome term scores a final recommendation production-strict), else empty."""
    from oro_assets.arena.problems import scoring_spec

    by_cat: dict[str, list[dict]] = {}
    for r in rows:
        by_cat.setdefault(r.get("category") or "Product", []).append(r)
    ordered = [r for group in zip(*by_cat.values(), strict=False) for r in group] if len(by_cat) > 1 else rows
    out = []
    for r in ordered:
        msgs = r["messages"]
        problem = (problems or {}).get(r["problem_id"])
        spec = json.dumps(scoring_spec(problem)) if problem else "{}"
        for i, m in enumerate(msgs):
            if m["role"] == "assistant" and i >= 2:
                out.append({"id": f"rl_{r['id']}_{i}", "problem_id": r["problem_id"], "prompt": msgs[:i],
                            "teacher_next": {"think": m["reasoning_content"] or "", "tool_calls": m["tool_calls"]},
                            "reward_spec": spec, "step": i})
        if len(out) >= limit:
            break
    return out[:limit]


def apply_sets(profile, sets):
    """``stage.field=value`` overrides (value parsed as JSON when possible) on a profile."""
    import dataclasses

    from oro_assets.training.profiles import with_overrides

    for item in sets:
        key, _, raw = item.partition("=")
        stage, _, fld = key.partition(".")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        if stage == "arch":
            profile = dataclasses.replace(profile, arch=dataclasses.replace(profile.arch, **{fld: value}))
        else:
            profile = with_overrides(profile, stage, **{fld: value})
    return profile


def chain(argv=None) -> int:
    """The whole tiny chain with the default tiny profile: base -> sft -> rejection -> teacher -> kto -> dr_grpo, each
    stage timed; Dr. GRPO's share of groups with reward variance, reward first -> last and weights changed; greedy
    success on held-out problems (a world of its own seed: screen on a seed other than main's ORO_SIM_SEED 15).

        .venv/bin/python benchmarks/train_tiny.py chain --seed 101 --out /tmp/c101 --categories Product,Shop,Voucher

    Checkpoints are reused by version, so a second run with other ``--set dr_grpo.*`` values trains Dr. GRPO alone.
    """
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/tiny_chain")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--n-eval", type=int, default=60)
    ap.add_argument("--difficulties", default="easy,medium", help="held-out difficulties evaluated")
    ap.add_argument("--categories", default="Product", help="held-out categories evaluated (comma-separated)")
    ap.add_argument("--eval-stages", default="sft,teacher_sft,kto,dr_grpo", help="stages evaluated greedily")
    ap.add_argument("--n-products", type=int, default=6000, help="catalogue size (the embedded default world: 20000)")
    ap.add_argument("--base-seed", type=int, default=None, help="seed of the tiny base (default: --seed)")
    ap.add_argument("--set", action="append", default=[], metavar="STAGE.FIELD=VALUE",
                    help="override a profile field, e.g. sft.max_steps=120 or arch.copy_pretrain_steps=800")
    args = ap.parse_args(argv)
    from oro_assets.arena.env import InProcessEnv
    from oro_assets.arena.generator import build_world
    from oro_assets.arena.policies.agentic import TeacherPolicy
    from oro_assets.arena.problems import problem_ground_truth_ids
    from oro_assets.arena.tools import TOOL_SCHEMAS
    from oro_assets.training import stages
    from oro_assets.training.profiles import get_profile
    from oro_assets.training.tiny_model import build_base_checkpoint

    out = Path(args.out)
    world = build_world(args.seed, n_problems=1500, n_products=args.n_products)
    env = InProcessEnv(world.catalogue)
    train, heldout = split_world(world, args.seed)
    wanted, cats = args.difficulties.split(","), args.categories.split(",")
    eval_set = [p for p in heldout if p["category"] in cats and p["difficulty"] in wanted]
    eval_set = [p for group in zip(*([p for p in eval_set if p["category"] == c] for c in cats), strict=False)
                for p in group][: args.n_eval] if len(cats) > 1 else eval_set[: args.n_eval]
    exclude = sorted({i for p in heldout for i in problem_ground_truth_ids(p)})
    scorer = stages.default_scorer(world.catalogue)
    teacher = TeacherPolicy({p["problem_id"]: p for p in world.problems})
    sft_rows, _ = stages.teacher_rows(teacher, train, env, scorer, TOOL_SCHEMAS)  # stand-in for the curated corpus
    first_args = teacher_first_args(teacher, eval_set, env)
    profile = apply_sets(get_profile("tiny"), args.set)
    print("profile overrides", args.set, flush=True)
    times, results = {}, {}
    t0 = time.perf_counter()
    t = time.perf_counter()
    base_seed = args.seed if args.base_seed is None else args.base_seed
    base = build_base_checkpoint(profile, out, world.catalogue, world.problems, seed=base_seed)
    times["base"] = time.perf_counter() - t
    log = _every(10)
    t = time.perf_counter()
    sft = stages.run_sft(profile, sft_rows, base, out, catalogue=world.catalogue, seed=args.seed, log=log)
    times["sft"] = time.perf_counter() - t
    t = time.perf_counter()
    rej = stages.run_rejection_sft(profile, sft_rows, train, env, sft.path, out, catalogue=world.catalogue, log=log)
    times["rejection_sft"] = time.perf_counter() - t
    t = time.perf_counter()
    tea = stages.run_teacher_sft(profile, train, env, rej.path, out, catalogue=world.catalogue,
                                 exclude_product_ids=exclude, seed=args.seed, log=log)
    times["teacher_sft"] = time.perf_counter() - t
    kto_rows = [dict(r, label=True) for r in sft_rows[:40]]
    for r in sft_rows[40:80]:
        msgs = [dict(m) for m in r["messages"]]
        for m in msgs:
            if m["role"] == "assistant" and m["tool_calls"] and m["tool_calls"][0]["function"]["name"] == "recommend_product":
                m["tool_calls"] = [{"id": "x", "type": "function",
                                    "function": {"name": "recommend_product", "arguments": '{"product_ids": "0"}'}}]
        kto_rows.append(dict(r, id=r["id"] + "_neg", messages=msgs, label=False))
    t = time.perf_counter()
    kto = stages.run_kto(profile, kto_rows, tea.path, out, log=log)
    times["kto"] = time.perf_counter() - t
    t = time.perf_counter()
    rl = rl_prompt_rows(sft_rows, 4 * (profile.dr_grpo.max_prompts or 64), {p["problem_id"]: p for p in train})
    grpo = stages.run_dr_grpo(profile, rl, kto.path, out, catalogue=world.catalogue, log=log)
    times["dr_grpo"] = time.perf_counter() - t
    times["chain_total"] = time.perf_counter() - t0
    print("times", {k: round(v, 1) for k, v in times.items()}, flush=True)
    m = grpo.metrics
    results["dr_grpo_metrics"] = {k: m.get(k) for k in (
        "groups", "groups_with_reward_variance", "groups_with_reward_variance_share", "reward_mean_first",
        "reward_mean_last", "reward_by_step", "weights_changed", "wall_time_s")}
    results["dr_grpo_learned_nothing"] = grpo.learned_nothing
    print("dr_grpo", results["dr_grpo_metrics"], flush=True)
    results["kto_metrics"] = {k: kto.metrics.get(k) for k in ("desirable", "undesirable", "steps", "loss_first",
                                                               "final_loss", "wall_time_s")}
    results["stage_metrics"] = {name: {k: res.metrics.get(k) for k in ("steps", "n_examples", "rollouts",
                                                                         "rollouts_kept", "teacher_successes",
                                                                         "wall_time_s")}
                                for name, res in (("sft", sft), ("rejection_sft", rej), ("teacher_sft", tea))}
    checkpoints = {"sft": sft, "rejection_sft": rej, "teacher_sft": tea, "kto": kto, "dr_grpo": grpo}
    for name in [s for s in args.eval_stages.split(",") if s]:
        results[name] = evaluate(checkpoints[name].path, eval_set, env, world.catalogue, first_args,
                                 max_new_tokens=160, max_steps=12)
        print(name, results[name], flush=True)
    results["times"] = {k: round(v, 1) for k, v in times.items()}
    results["world_seed"], results["eval_categories"] = args.seed, cats
    (out / "chain_results.json").write_text(json.dumps(results, indent=2))
    print(json.dumps({k: v for k, v in results.items() if k != "dr_grpo_metrics"}, indent=2))
    return 0


def grpo_screen(argv=None) -> int:
    """Dr. GRPO alone from a given checkpoint, on RL prompts of a world of its own seed (the scripted teacher's steps on
    the world's train problems, round-robin over categories, with the problem's scoring spec): the share of groups
    with reward variance, mean reward first -> last quarter of steps, whether the weights changed, wall time.

        .venv/bin/python benchmarks/train_tiny.py grpo --parent /tmp/c101/sft/<version> --seed 101 --out /tmp/g101
    """
    from oro_assets.arena.env import InProcessEnv
    from oro_assets.arena.generator import build_world
    from oro_assets.arena.policies.agentic import TeacherPolicy
    from oro_assets.arena.tools import TOOL_SCHEMAS
    from oro_assets.training import stages
    from oro_assets.training.profiles import get_profile

    ap = argparse.ArgumentParser(prog="train_tiny.py grpo")
    ap.add_argument("--parent", required=True, help="checkpoint dir Dr. GRPO continues")
    ap.add_argument("--out", default="/tmp/tiny_grpo")
    ap.add_argument("--seed", type=int, default=101, help="world seed (not main's ORO_SIM_SEED 15)")
    ap.add_argument("--n-products", type=int, default=6000)
    ap.add_argument("--set", action="append", default=[], metavar="dr_grpo.FIELD=VALUE")
    args = ap.parse_args(argv)
    world = build_world(args.seed, n_problems=1500, n_products=args.n_products)
    env = InProcessEnv(world.catalogue)
    train, _ = split_world(world, args.seed)
    teacher = TeacherPolicy({p["problem_id"]: p for p in world.problems})
    rows, _ = stages.teacher_rows(teacher, train, env, stages.default_scorer(world.catalogue), TOOL_SCHEMAS)
    profile = apply_sets(get_profile("tiny"), args.set)
    rl = rl_prompt_rows(rows, 4 * (profile.dr_grpo.max_prompts or 64), {p["problem_id"]: p for p in train})
    t = time.perf_counter()
    res = stages.run_dr_grpo(profile, rl, args.parent, Path(args.out), catalogue=world.catalogue, log=_every(4),
                             force=True)
    m = res.metrics
    out = {k: m.get(k) for k in ("groups", "groups_with_reward_variance", "groups_with_reward_variance_share",
                                 "reward_mean_first", "reward_mean_last", "reward_by_step", "weights_changed",
                                 "wall_time_s", "steps")}
    out.update({"stage_wall_s": round(time.perf_counter() - t, 1), "world_seed": args.seed, "parent": args.parent,
                "overrides": args.set, "config": {k: v for k, v in json.loads(json.dumps(
                    profile.dr_grpo, default=lambda o: o.__dict__)).items()}})
    print(json.dumps(out, indent=2), flush=True)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "grpo_screen.json").write_text(json.dumps(out, indent=2))
    return 0


def _wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    import math

    if n == 0:
        return 0.0, 0.0
    p = k / n
    den = 1 + z * z / n
    c = (p + z * z / (2 * n)) / den
    hw = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, c - hw), min(1.0, c + hw)


def curated(argv=None) -> int:
    """Curated-only SFT (issue 18) on days the main command curated: the tiny base (built once: the world is the
    same every day) -> ``stages.sft.run_sft`` with the tiny profile (``--set sft.field=value`` overrides) on each
    day's ``sft_dataset`` -> greedy rollouts (30-step limit) on every eval-pool Product problem, production-strict.

        .venv/bin/python benchmarks/train_tiny.py curated --out /tmp/cur --data /tmp/d1/data /tmp/d2/data /tmp/d3/data

    With no ``--set`` it runs the tiny profile's own SFT stage (main's). The README's recipe table: e.g. the old
    whole-drill warm-up is ``--set sft.copy_drill_first_turn_batch=None --set sft.copy_drills=2400``, the base
    without a gap ``--set base.copy_pretrain_gap=0``.
    """
    import ast
    import dataclasses

    import torch

    from oro_assets.agents.rollout import rollout_many
    from oro_assets.arena.catalogue import Catalogue
    from oro_assets.arena.env import InProcessEnv
    from oro_assets.arena.scoring import score_trace
    from oro_assets.training.checkpoints import load_policy
    from oro_assets.training.data import load_rows
    from oro_assets.training.profiles import get_profile, with_overrides
    from oro_assets.training.stages.sft import run_sft
    from oro_assets.training.tiny_model import build_base_checkpoint

    ap = argparse.ArgumentParser(prog="train_tiny.py curated")
    ap.add_argument("--out", default="/tmp/tiny_curated")
    ap.add_argument("--data", nargs="+", required=True, help="data dirs (ORO_DATA_DIR) of curated days")
    ap.add_argument("--set", action="append", default=[], help="sft.<field>=<python literal>")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    profile = get_profile("tiny")
    for item in args.set:
        key, value = item.split("=", 1)
        stage, field = key.split(".", 1)
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            parsed = value
        profile = with_overrides(profile, stage, **{field: parsed})
    out = Path(args.out)
    first = Path(args.data[0])
    catalogue = Catalogue.from_jsonl(first / "arena" / "catalogue.jsonl")
    env = InProcessEnv(catalogue)
    eval_rows = _dev_problems(first / "warehouse" / "eval_problems.jsonl")
    eval_ids = {p["problem_id"] for p in eval_rows}
    train = [p for p in load_rows(first / "arena" / "problems.jsonl") if p["problem_id"] not in eval_ids]
    product = sorted((p for p in eval_rows if p.get("category") == "Product"), key=lambda p: p["problem_id"])
    t = time.perf_counter()
    base = build_base_checkpoint(profile, out, catalogue, train, seed=args.seed)
    print(f"base {base} ({time.perf_counter() - t:.0f}s); {len(product)} eval Product problems", flush=True)

    def greedy(ckpt) -> dict:
        policy = load_policy(ckpt, temperature=0.0, max_new_tokens=160)
        rollouts = rollout_many(policy, product, env, n=1, max_steps=30, batch_size=32)
        ok = [bool(score_trace(r.problem, r.episode.recommended_ids(), catalogue).success) for r in rollouts]
        first_call = sum(1 for r in rollouts if r.episode.steps and r.episode.steps[0].calls)
        lo, hi = _wilson(sum(ok), len(ok))
        return {"n": len(ok), "success": sum(ok), "asr": sum(ok) / max(1, len(ok)), "ci95": [lo, hi],
                "first_turn_tool_call": first_call}

    results = {"config": dataclasses.asdict(profile.sft), "base": greedy(base), "days": {}}
    print("base", results["base"], flush=True)
    for data in args.data:
        t = time.perf_counter()
        res = run_sft(profile, Path(data) / "warehouse" / "sft_dataset.parquet", base, out, catalogue=catalogue,
                      seed=args.seed, log=_every(100))
        day = {"rows_in": res.metrics.get("rows_in"), "rows_kept": res.metrics.get("rows_kept"),
               "rows_dropped": res.metrics.get("rows_dropped"), "final_loss": res.metrics.get("final_loss"),
               "sft_wall_s": round(time.perf_counter() - t, 1), **greedy(res.path)}
        results["days"][data] = day
        print(data, day, flush=True)
    asrs = [d["asr"] for d in results["days"].values()]
    results["mean_asr"] = sum(asrs) / len(asrs)
    results["range"] = [min(asrs), max(asrs)]
    print(f"mean sft Product ASR {100 * results['mean_asr']:.1f}% (range {100 * min(asrs):.1f}-{100 * max(asrs):.1f}); "
          f"base {100 * results['base']['asr']:.1f}%", flush=True)
    (out / "curated_results.json").write_text(json.dumps(results, indent=2, default=str))
    return 0


def probe(argv=None) -> int:
    """Where a main run's chain loses the task: each checkpoint, greedy, on every eval-pool Product problem of a
    main data dir (30-step limit, production-strict): a valid first call, the teacher's exact first search, success.

        .venv/bin/python benchmarks/train_tiny.py probe --data /tmp/oro-days8/2026-11-30/data
    """
    from oro_assets.arena.catalogue import Catalogue
    from oro_assets.arena.env import InProcessEnv
    from oro_assets.arena.policies.agentic import TeacherPolicy
    from oro_assets.training.checkpoints import current_checkpoint, pointer_path

    ap = argparse.ArgumentParser(prog="train_tiny.py probe")
    ap.add_argument("--data", required=True, help="a main run's data dir (ORO_DATA_DIR)")
    ap.add_argument("--stages", nargs="+", default=["base", "sft_warmup", "sft", "rejection_sft", "teacher_sft", "kto"])
    args = ap.parse_args(argv)
    data = Path(args.data)
    catalogue = Catalogue.from_jsonl(data / "arena" / "catalogue.jsonl")
    env = InProcessEnv(catalogue)
    product = sorted((p for p in _dev_problems(data / "warehouse" / "eval_problems.jsonl") if p.get("category") == "Product"),
                     key=lambda p: p["problem_id"])
    first_args = teacher_first_args(TeacherPolicy({p["problem_id"]: p for p in product}), product, env)
    checkpoints = data / "checkpoints"
    results = {}
    for stage in args.stages:
        if pointer_path(checkpoints, stage).exists():
            versions = [current_checkpoint(checkpoints, stage)]
        elif stage == "sft_warmup" and pointer_path(checkpoints, "sft").exists():
            # no pointer of its own, and extra epochs (sft.copy_drill_target_loss) chain several: the sft's parent
            meta = json.loads((Path(current_checkpoint(checkpoints, "sft")) / "oro_checkpoint.json").read_text())
            versions = [Path(meta["parent_path"])]
        else:
            versions = sorted((checkpoints / stage).glob("[0-9a-f]*"))
        if len(versions) != 1:
            print(f"{stage}: {len(versions)} checkpoints and no current.json; skipped", flush=True)
            continue
        results[stage] = evaluate(versions[0], product, env, catalogue, first_args, max_new_tokens=160, max_steps=30)
        print(stage, results[stage], flush=True)
    (data / "reports" / "probe.json").write_text(json.dumps(results, indent=2))
    return 0


def copy_probe(argv=None) -> int:
    """How far each checkpoint copies a span of random words across a gap (copy pre-training's task, held-out draws):
    mean NLL of the copy with exactly 0, 30 and 60 random words between span and copy. On 2026-12-02 (one 10k-trace
    day's world) the base copy-pre-trained without a gap scored 0.007 / 8.7 / 8.6 (a positional trick, not
    induction: ln V is 8.0); with ``copy_pretrain_gap`` 64, 0.20 / 0.05 / 0.10.

        .venv/bin/python benchmarks/train_tiny.py copy --checkpoints /tmp/d/data/checkpoints/base/<version> ...
    """
    import torch

    from oro_assets.training.checkpoints import load_model_and_tokenizer
    from oro_assets.training.losses import labelled_nll
    from oro_assets.training.tiny_model import CopyBatches

    ap = argparse.ArgumentParser(prog="train_tiny.py copy")
    ap.add_argument("--checkpoints", nargs="+", required=True)
    ap.add_argument("--gaps", nargs="+", type=int, default=[0, 30, 60])
    args = ap.parse_args(argv)
    torch.set_num_threads(1)

    for ckpt in args.checkpoints:
        model, tok = load_model_and_tokenizer(ckpt)
        model.eval()
        row = {}
        for gap in args.gaps:
            ids, labels, mask = CopyBatches(tok, batch_size=64, max_span=8, min_gap=gap, max_gap=gap, seed=123).next()
            with torch.no_grad():
                nll, _, targets = labelled_nll(model, labels, input_ids=ids, attention_mask=mask)
            row[f"gap {gap}"] = round(float(nll) / max(1, targets.numel()), 3)
        print(ckpt, row, flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "copy":
        raise SystemExit(copy_probe(sys.argv[2:]))
    if len(sys.argv) > 1 and sys.argv[1] == "probe":
        raise SystemExit(probe(sys.argv[2:]))
    if len(sys.argv) > 1 and sys.argv[1] == "grpo":
        raise SystemExit(grpo_screen(sys.argv[2:]))
    if len(sys.argv) > 1 and sys.argv[1] == "chain":
        raise SystemExit(chain(sys.argv[2:]))
    if len(sys.argv) > 1 and sys.argv[1] == "curated":
        raise SystemExit(curated(sys.argv[2:]))
    raise SystemExit(main())
