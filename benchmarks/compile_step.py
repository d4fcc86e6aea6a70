"""Whether ``torch.compile`` makes a tiny-profile training step faster on this CPU (issue 30: main within 20 minutes).

Loads a checkpoint's model (e.g. a main run's ``sft``), and in a fresh process per mode (``eager``, ``compile``:
``torch.compile(model, dynamic=True)``, inductor's C++ kernels) trains batches of 8 random sequences at several
lengths (forward with half the positions labelled, backward, AdamW), 2 threads. Reported per mode: the first two
steps' wall (compilation included) and, per length, ms a step and tokens a second over ``--steps`` steps;
``compile_speedup``: eager ms ÷ compiled ms a step, per length (above 1, compiling pays). ``--rounds N`` runs both
modes N times, alternating which goes first, and reads the figure from the median (and range) of every round's
per-length speedups: this machine's speed drifts by tens of percent between minutes (docs/measurements.md).

    .venv/bin/python benchmarks/compile_step.py --checkpoint <data>/checkpoints/sft/<version>/model --rounds 3 [--json out.json]
"""

from __future__ import annotations

import argparse
import statistics
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


def summary(rounds: list[dict[str, float]]) -> dict:
    """The median and range of every per-length speedup of every round."""
    values = [v for r in rounds for v in r.values()]
    return {"median": round(statistics.median(values), 3), "range": [min(values), max(values)]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", required=True, help="a checkpoint's model folder")
    ap.add_argument("--steps", type=int, default=5, help="timed steps per length")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of both modes, alternating which goes first")
    ap.add_argument("--json", help="write the result here")
    ap.add_argument("--_run", choices=["eager", "compile"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._run:  # the child: one mode, its result on a RESULT line
        print_result(measure(args.checkpoint, args._run, args.steps))
        return 0
    rounds = []
    for i in range(args.rounds):
        modes = ("eager", "compile") if i % 2 == 0 else ("compile", "eager")
        runs = [run_fresh([__file__, "--checkpoint", args.checkpoint, "--steps", str(args.steps), "--_run", mode],
                          mode) for mode in modes]
        rounds.append({"runs": runs, "compile_speedup": compile_speedup(runs)})
        print(f"round {i + 1}: {rounds[-1]['compile_speedup']}", file=sys.stderr, flush=True)
    result = {"checkpoint": args.checkpoint, "batch": BATCH, "rounds": rounds,
              "compile_speedup": summary([r["compile_speedup"] for r in rounds])}
    emit(result, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
