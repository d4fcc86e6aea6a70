"""GPU check of the qwen3-4b profile: a handful of LoRA SFT and Dr. GRPO steps, memory and tokens/s.

    python scripts/gpu_qwen3_4b_check.py [--sft-steps 5] [--grpo-steps 2] [--out /tmp/gpu_check]
    python scripts/gpu_qwen3_4b_check.py --smoke      # same code path on the CPU with toy shapes

Uses the real weights when ``ORO_QWEN3_4B_PATH`` (or the default hub id) is loadable, else a
randomly initialised stand-in with Qwen3-4B's architecture (same shapes, same LoRA targets, same
memory) and the locally built word-level tokenizer. Needs one CUDA GPU; not used by CPU tests.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QWEN3_4B_SHAPES = dict(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36, num_attention_heads=32,
                       num_key_value_heads=8, head_dim=128, max_position_embeddings=40960, vocab_size=151936,
                       rope_theta=1_000_000.0, tie_word_embeddings=True)


SMOKE_SHAPES = dict(QWEN3_4B_SHAPES, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                    num_attention_heads=2, num_key_value_heads=1, head_dim=32, vocab_size=None)


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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/gpu_check")
    ap.add_argument("--sft-steps", type=int, default=5)
    ap.add_argument("--grpo-steps", type=int, default=2)
    ap.add_argument("--problems", type=int, default=64)
    ap.add_argument("--long-steps", type=int, default=2, help="SFT steps on one max_length dialogue (0: skip)")
    ap.add_argument("--smoke", action="store_true", help="toy shapes on the CPU: checks the script, not the GPU")
    args = ap.parse_args(argv)

    import torch

    if not args.smoke and not torch.cuda.is_available():
        print("no CUDA GPU: this script needs one", file=sys.stderr)
        return 2
    from oro_assets.arena.env import InProcessEnv
    from oro_assets.arena.generator import build_world
    from oro_assets.arena.policies.agentic import TeacherPolicy
    from oro_assets.arena.tools import TOOL_SCHEMAS
    from oro_assets.settings import load_settings
    from oro_assets.training.corpus import arena_corpus_texts
    from oro_assets.training.profiles import get_profile, with_overrides
    from oro_assets.training.stages import default_scorer, run_dr_grpo, run_sft, teacher_rows

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = load_settings()
    profile = get_profile("qwen3-4b", settings)
    if args.smoke:
        profile = dataclasses.replace(profile, model_source=str(out / "no-such-weights"), use_cpu=True, bf16=False,
                                      dtype="float32")
    cuda = torch.cuda.is_available() and not args.smoke
    peak_gib = (lambda: round(torch.cuda.max_memory_allocated() / 2**30, 2)) if cuda else (lambda: None)
    reset_peak = torch.cuda.reset_peak_memory_stats if cuda else (lambda: None)
    world = build_world(3, n_problems=args.problems, n_products=3000)
    env = InProcessEnv(world.catalogue)
    rows, _ = teacher_rows(TeacherPolicy({p["problem_id"]: p for p in world.problems}), world.problems, env,
                           default_scorer(world.catalogue), TOOL_SCHEMAS)
    base: str | Path = profile.model_source
    try:
        from transformers import AutoConfig

        AutoConfig.from_pretrained(str(base))
        weights = "real"
    except Exception:
        base = stand_in(out / "standin", arena_corpus_texts(world.catalogue, world.problems, TOOL_SCHEMAS),
                        SMOKE_SHAPES if args.smoke else QWEN3_4B_SHAPES, "cuda" if cuda else "cpu")
        weights = "stand-in (random init, Qwen3-4B shapes)"
    report = {"weights": weights, "base": str(base), "profile": dataclasses.asdict(profile.sft)}

    reset_peak()
    p = with_overrides(profile, "sft", max_steps=args.sft_steps, per_device_train_batch_size=1,
                       gradient_accumulation_steps=1)
    t0 = time.perf_counter()
    sft = run_sft(p, rows, base, out / "ckpt", force=True)
    report["sft"] = {"steps": sft.metrics["steps"], "tokens": sft.metrics["tokens"],
                     "tokens_per_s": sft.metrics["tokens_per_s"], "wall_s": round(time.perf_counter() - t0, 1),
                     "peak_mem_gib": peak_gib(),
                     "loss": [h["loss"] for h in sft.metrics["history"]]}
    print(json.dumps(report["sft"]), flush=True)

    rl = []
    for r in rows[:16]:
        msgs = r["messages"]
        for i, m in enumerate(msgs):
            if m["role"] == "assistant" and i >= 2:
                rl.append({"id": f"{r['id']}_{i}", "problem_id": r["problem_id"], "prompt": msgs[:i],
                           "teacher_next": {"think": m.get("reasoning_content") or "", "tool_calls": m["tool_calls"]},
                           "reward_spec": "{}", "step": i})
                break
    reset_peak()
    g = with_overrides(profile, "dr_grpo", max_steps=args.grpo_steps, per_device_train_batch_size=4,
                       gradient_accumulation_steps=1, num_generations=4, max_completion_length=256)
    t0 = time.perf_counter()
    grpo = run_dr_grpo(g, rl, sft.path, out / "ckpt", force=True)
    report["dr_grpo"] = {"steps": grpo.metrics["steps"], "wall_s": round(time.perf_counter() - t0, 1),
                         "peak_mem_gib": peak_gib(),
                         "learned_nothing": grpo.learned_nothing, "reward_mean": grpo.metrics.get("reward_mean")}
    print(json.dumps(report["dr_grpo"]), flush=True)

    # The paper's context: one dialogue as long as max_length (14,336), turns repeated until it is.
    if args.long_steps:
        turns = [m for m in rows[0]["messages"] if m["role"] in ("assistant", "tool")]
        head = [m for m in rows[0]["messages"] if m["role"] not in ("assistant", "tool")]
        long_row = dict(rows[0], id="long", messages=head + turns * 60)
        reset_peak()
        lp = with_overrides(profile, "sft", max_steps=args.long_steps, per_device_train_batch_size=1,
                            gradient_accumulation_steps=1)
        t0 = time.perf_counter()
        long = run_sft(lp, [long_row] * args.long_steps, base, out / "ckpt_long", force=True)
        report["sft_long_context"] = {"steps": long.metrics["steps"], "tokens": long.metrics["tokens"],
                                      "max_length": lp.sft.max_length, "tokens_per_s": long.metrics["tokens_per_s"],
                                      "wall_s": round(time.perf_counter() - t0, 1), "peak_mem_gib": peak_gib()}
    print(json.dumps(report, indent=2))
    (out / "gpu_report.json").write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
