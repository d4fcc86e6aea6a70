"""The qwen3-4b profile, every stage: SFT, rejection re-SFT, teacher-SFT, KTO, Dr. GRPO and an evaluation, each a
few steps at the profile's real code path (LoRA on all linear layers, bf16, gradient checkpointing non-reentrant,
length-grouped batches, SDPA / FlashAttention-2, rollouts in the rollout engine).

    python scripts/gpu_qwen3_4b_check.py [--steps 3] [--fast-paths both] [--long-steps 2] [--out /tmp/gpu_check]  # GPU
    python scripts/gpu_qwen3_4b_check.py --smoke      # the same stages on the CPU at toy shapes (a test runs it)

Uses the real weights when ``ORO_QWEN3_4B_PATH`` (or the default hub id) is loadable, else a randomly initialised
stand-in with Qwen3-4B's architecture (same shapes, LoRA targets and memory; ``--smoke``: a tiny Qwen3 built
locally) and the locally built word-level tokenizer. Per stage: wall time, training tokens/s, rollout episodes/s,
peak GPU memory; ``--fast-paths both`` runs every stage again with them off (random batch order instead of
length-grouped, the evaluation on padded ``generate`` calls) for the side-by-side figures. vLLM is optional: without it one line says so and nothing else changes.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QWEN3_4B_SHAPES = dict(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36, num_attention_heads=32,
                       num_key_value_heads=8, head_dim=128, max_position_embeddings=40960, vocab_size=151936,
                       rope_theta=1_000_000.0, tie_word_embeddings=True)


SMOKE_SHAPES = dict(QWEN3_4B_SHAPES, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=None)


def stand_in(out: Path, corpus: list[str], shapes: dict, device: str) -> Path:
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from oro_assets.training.tiny_model import build_tokenizer

    tok = build_tokenizer(corpus)
    shapes = dict(shapes, vocab_size=shapes["vocab_size"] or len(tok))  # real vocab: real embedding memory
    rope_theta = shapes.pop("rope_theta")
    cfg = Qwen3Config(**shapes, eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"), pad_token_id=tok.pad_token_id)
    cfg.rope_parameters = {"rope_type": "default", "rope_theta": rope_theta}
    with torch.device(device):
        model = Qwen3ForCausalLM(cfg).to(torch.bfloat16 if device == "cuda" else torch.float32)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def vllm_line() -> str:
    if importlib.util.find_spec("vllm") is None:
        return "vllm: not installed - skipped (optional extra on a GPU machine; the rollout engine serves every stage)"
    return "vllm: installed - not used by this check (the rollout engine's figures are the ones recorded)"


def stage_profile(profile, smoke: bool, steps: int, fast: bool, new_tokens: int = 512):
    """The qwen3-4b profile with every stage cut to ``steps`` steps (and toy lengths with ``smoke``)."""
    from oro_assets.training.profiles import with_overrides

    p = dataclasses.replace(profile, length_grouped=profile.length_grouped and fast)
    length = 2048 if smoke else profile.sft.max_length
    p = with_overrides(p, "sft", max_steps=steps, per_device_train_batch_size=2, gradient_accumulation_steps=1,
                       max_length=length)
    p = with_overrides(p, "rejection_sft", max_steps=steps, per_device_train_batch_size=2,
                       gradient_accumulation_steps=1, max_length=length, k=2, max_problems=4,
                       max_new_tokens=48 if smoke else new_tokens, max_steps_per_episode=4)
    p = with_overrides(p, "teacher_sft", max_steps=steps, per_device_train_batch_size=2,
                       gradient_accumulation_steps=1, max_length=length, max_problems=8)
    p = with_overrides(p, "kto", max_steps=steps, per_device_train_batch_size=2, gradient_accumulation_steps=1,
                       max_length=length, max_examples=8)
    return with_overrides(p, "dr_grpo", max_steps=max(1, steps // 2), per_device_train_batch_size=4,
                          gradient_accumulation_steps=1, num_generations=4,
                          max_completion_length=48 if smoke else 256)


def run_stages(profile, base, rows, train, heldout, world, env, out: Path, *, smoke: bool, steps: int,
               fast: bool, cuda: bool, new_tokens: int = 512) -> dict:
    import torch

    from oro_assets.evaluation.report import LeakRefs, evaluate_checkpoint
    from oro_assets.evaluation.rollout import EvalSettings
    from oro_assets.training import stages

    p = stage_profile(profile, smoke, steps, fast, new_tokens)
    report: dict = {}
    quiet = lambda msg: None  # noqa: E731

    def measure(name: str, fn):
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        res = fn()
        wall = time.perf_counter() - t0
        m = getattr(res, "metrics", {}) or {}
        row = {"wall_s": round(wall, 1), "steps": m.get("steps"), "tokens_per_s": m.get("tokens_per_s"),
               "peak_mem_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None,
               "loss": m.get("final_loss")}
        if "rollouts" in m:
            row["rollout_episodes_per_s"] = round(m["rollouts"] / max(m.get("rollout_wall_time_s") or 1e-9, 1e-9), 2)
        report[name] = row
        print(f"{name} ({'fast paths on' if fast else 'fast paths off'}): {json.dumps(row)}", flush=True)
        return res

    root = out / ("ckpt" if fast else "ckpt_slow")
    rollout_engine = fast  # the evaluation's rollouts: the engine, or padded generate calls
    sft = measure("sft", lambda: stages.run_sft(p, rows, base, root, catalogue=world.catalogue, log=quiet, force=True))
    rej = measure("rejection_sft", lambda: stages.run_rejection_sft(
        p, rows, train, env, sft.path, root, catalogue=world.catalogue, log=quiet, force=True))
    tea = measure("teacher_sft", lambda: stages.run_teacher_sft(
        p, train, env, rej.path, root, catalogue=world.catalogue, log=quiet, force=True))
    kto_rows = [dict(r, label=True) for r in rows[:4]]
    for r in rows[4:8]:
        msgs = [dict(m) for m in r["messages"]]
        for m in msgs:
            if m["role"] == "assistant" and m.get("tool_calls") and \
                    m["tool_calls"][0]["function"]["name"] == "recommend_product":
                m["tool_calls"] = [{"id": "x", "type": "function",
                                    "function": {"name": "recommend_product", "arguments": '{"product_ids": "0"}'}}]
        kto_rows.append(dict(r, id=r["id"] + "_neg", messages=msgs, label=False))
    kto = measure("kto", lambda: stages.run_kto(p, kto_rows, tea.path, root, log=quiet, force=True))
    rl = []
    for r in rows[:8]:
        msgs = r["messages"]
        i = next(i for i, m in enumerate(msgs) if m["role"] == "assistant")
        rl.append({"id": f"{r['id']}_{i}", "problem_id": r["problem_id"], "prompt": msgs[:i],
                   "teacher_next": {"think": msgs[i].get("reasoning_content") or "", "tool_calls": msgs[i]["tool_calls"]},
                   "reward_spec": "{}", "step": i})
    grpo = measure("dr_grpo", lambda: stages.run_dr_grpo(p, rl, kto.path, root, catalogue=world.catalogue, log=quiet,
                                                         force=True))
    report["dr_grpo"]["learned_nothing"] = grpo.learned_nothing
    settings = EvalSettings(n=2, temperature=0.7, max_new_tokens=48 if smoke else new_tokens, max_steps=6,
                            engine=rollout_engine, device="cuda" if cuda else None)
    t0 = time.perf_counter()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    ev = evaluate_checkpoint(grpo.path, heldout, world.catalogue, stage="dr_grpo", settings=settings,
                             leak=LeakRefs(enforce=False))
    wall = time.perf_counter() - t0
    episodes = len(heldout) * (settings.n + 1)
    report["evaluation"] = {"wall_s": round(wall, 1), "episodes": episodes, "episodes_per_s": round(episodes / wall, 2),
                            "asr": ev.metrics.get("asr"), "outcomes": ev.metrics.get("outcome_counts"),
                            "peak_mem_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None}
    print(f"evaluation ({'fast paths on' if fast else 'fast paths off'}): {json.dumps(report['evaluation'])}",
          flush=True)
    return report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/gpu_check")
    ap.add_argument("--steps", type=int, default=3, help="training steps per stage (Dr. GRPO: half)")
    ap.add_argument("--problems", type=int, default=48)
    ap.add_argument("--eval-problems", type=int, default=4)
    ap.add_argument("--fast-paths", choices=("on", "off", "both"), default="on")
    ap.add_argument("--long-steps", type=int, default=2, help="SFT steps on one max_length dialogue (GPU only; 0: skip)")
    ap.add_argument("--new-tokens", type=int, default=512,
                    help="generation budget per turn of the rejection and evaluation rollouts")
    ap.add_argument("--smoke", action="store_true", help="toy shapes on the CPU: checks the script, not the GPU")
    args = ap.parse_args(argv)

    import torch

    if not args.smoke and not torch.cuda.is_available():
        print("no CUDA GPU: this script needs one (or --smoke)", file=sys.stderr)
        return 2
    from oro_assets.arena.env import InProcessEnv
    from oro_assets.arena.generator import build_world
    from oro_assets.arena.policies.agentic import TeacherPolicy
    from oro_assets.arena.tools import TOOL_SCHEMAS
    from oro_assets.settings import load_settings
    from oro_assets.training.corpus import arena_corpus_texts
    from oro_assets.training.profiles import get_profile
    from oro_assets.training.stages import default_scorer, teacher_rows
    from oro_assets.training.stages.common import attention_implementation

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    profile = get_profile("qwen3-4b", load_settings())
    if args.smoke:
        profile = dataclasses.replace(profile, model_source=str(out / "no-such-weights"), use_cpu=True, bf16=False,
                                      dtype="float32")
    cuda = torch.cuda.is_available() and not args.smoke
    print(vllm_line(), flush=True)
    world = build_world(3, n_problems=args.problems, n_products=3000)
    env = InProcessEnv(world.catalogue)
    product = [p for p in world.problems if p.get("category") == "Product"]
    heldout = product[-args.eval_problems:]
    held_ids = {p["problem_id"] for p in heldout}
    train = [p for p in world.problems if p["problem_id"] not in held_ids]
    rows, _ = teacher_rows(TeacherPolicy({p["problem_id"]: p for p in world.problems}), train, env,
                           default_scorer(world.catalogue), TOOL_SCHEMAS)
    base: str | Path = profile.model_source
    try:
        from transformers import AutoConfig

        AutoConfig.from_pretrained(str(base))
        weights = "real"
    except Exception:
        base = stand_in(out / "standin", arena_corpus_texts(world.catalogue, world.problems, TOOL_SCHEMAS),
                        SMOKE_SHAPES if args.smoke else QWEN3_4B_SHAPES, "cuda" if cuda else "cpu")
        weights = "stand-in (random init, " + ("toy shapes)" if args.smoke else "Qwen3-4B shapes)")
    report = {"weights": weights, "base": str(base), "device": "cuda" if cuda else "cpu",
              "attention": attention_implementation(), "gradient_checkpointing": profile.gradient_checkpointing,
              "lora": dataclasses.asdict(profile.lora) if profile.lora else None, "vllm": vllm_line(), "runs": {}}
    if args.long_steps and not args.smoke:  # the paper's context: one dialogue as long as max_length (14,336)
        from oro_assets.training.profiles import with_overrides
        from oro_assets.training.stages import run_sft

        turns = [m for m in rows[0]["messages"] if m["role"] in ("assistant", "tool")]
        head = [m for m in rows[0]["messages"] if m["role"] not in ("assistant", "tool")]
        long_row = dict(rows[0], id="long", messages=head + turns * 60)
        torch.cuda.reset_peak_memory_stats()
        lp = with_overrides(profile, "sft", max_steps=args.long_steps, per_device_train_batch_size=1,
                            gradient_accumulation_steps=1)
        t0 = time.perf_counter()
        long = run_sft(lp, [long_row] * args.long_steps, base, out / "ckpt_long", force=True)
        report["sft_long_context"] = {"steps": long.metrics["steps"], "tokens": long.metrics["tokens"],
                                      "max_length": lp.sft.max_length, "tokens_per_s": long.metrics["tokens_per_s"],
                                      "wall_s": round(time.perf_counter() - t0, 1),
                                      "peak_mem_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)}
        print(f"sft_long_context: {json.dumps(report['sft_long_context'])}", flush=True)
    modes = {"on": [True], "off": [False], "both": [True, False]}[args.fast_paths]
    for fast in modes:
        report["runs"]["fast_paths_on" if fast else "fast_paths_off"] = run_stages(
            profile, base, rows, train, heldout, world, env, out, smoke=args.smoke, steps=args.steps, fast=fast,
            cuda=cuda, new_tokens=args.new_tokens)
    print(json.dumps(report, indent=2))
    (out / "gpu_report.json").write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
