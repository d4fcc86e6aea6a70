"""Whether ``torch.compile`` makes a tiny-profile training step faster on this CPU (issue 30: main within 20 minutes).

Loads a checkpoint's model (e.g. a main run's ``sft``), and in a fresh process per mode (``eager``, ``compile``:
``torch.compile(model, dynamic=True)``, inductor's C++ kernels) trains batches of 8 random sequences at several
lengths (forward with half the positions labelled, backward, AdamW), 2 threads. Reported per mode: the first two
steps' wall (compilation included) and, per length, ms a step and tokens a second over ``--steps`` steps;
``compile_speedup``: eager ms ÷ compiled ms a step, per length (above 1, compiling pays).

    .venv/bin/python benchmarks/compile_step.py --checkpoint <data>/checkpoints/sft/<version>/model [--json out.json]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import emit, print_result, run_fresh  # noqa: E402

LENGTHS = (600, 900, 1024, 450)
BATCH = 8


def measure(checkpoint: str, mode: str, steps: int, threads: int = 2) -> dict:
    """One mode's timings, in this process."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    torch.set_num_threads(threads)
    model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32)
    model.train()
    vocab = model.config.vocab_size
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    forward = torch.compile(model, dynamic=True) if mode == "compile" else model

    def step(length: int) -> None:
        ids = torch.randint(0, vocab, (BATCH, length))
        labels = ids.clone()
        labels[:, : length // 2] = -100
        forward(input_ids=ids, labels=labels).loss.backward()
        opt.step()
        opt.zero_grad()

    t0 = time.perf_counter()
    for length in (512, 700):
        step(length)
    out: dict = {"mode": mode, "first_steps_s": round(time.perf_counter() - t0, 2), "per_length": {}}
    for length in LENGTHS:
        t = time.perf_counter()
        for _ in range(steps):
            step(length)
        dt = time.perf_counter() - t
        out["per_length"][str(length)] = {"ms_per_step": round(1000 * dt / steps, 1),
                                          "tokens_per_s": round(BATCH * length * steps / dt)}
    return out


def compile_speedup(runs: list[dict]) -> dict[str, float]:
    """Per length both modes ran: eager ms / compiled ms a step (above 1, compiling pays)."""
    by_mode = {r["mode"]: r["per_length"] for r in runs}
    eager, compiled = by_mode["eager"], by_mode["compile"]
    return {length: round(eager[length]["ms_per_step"] / compiled[length]["ms_per_step"], 2)
            for length in eager if length in compiled}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", required=True, help="a checkpoint's model folder")
    ap.add_argument("--steps", type=int, default=5, help="timed steps per length")
    ap.add_argument("--modes", nargs="+", default=["eager", "compile"], choices=["eager", "compile"])
    ap.add_argument("--json", help="write the result here")
    ap.add_argument("--_run", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._run:  # the child: one mode, its result on a RESULT line
        print_result(measure(args.checkpoint, args._run, args.steps))
        return 0
    runs = [run_fresh([__file__, "--checkpoint", args.checkpoint, "--steps", str(args.steps), "--_run", mode], mode)
            for mode in args.modes]
    result = {"checkpoint": args.checkpoint, "batch": BATCH, "runs": runs}
    if {r["mode"] for r in runs} == {"eager", "compile"}:
        result["compile_speedup"] = compile_speedup(runs)
    emit(result, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
