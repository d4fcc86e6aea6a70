"""Whether tiny training gives the same weights on another x86 CPU type, with and without kernel pinning (issue 30).

Checkpoints are bit for bit the same on one CPU type (sessions 37-38), but main trained other weights on a Zen 3
EPYC (AVX2) than on a Zen 4 EPYC (AVX-512) from the same code and inputs (session 42), so a README figure measured on
one type is not reproduced on the other. torch picks its own vector kernels by the CPU (``ATEN_CPU_CAPABILITY``),
MKL its GEMM code path (``MKL_CBWR``: conditional numerical reproducibility) and oneDNN its ISA
(``ONEDNN_MAX_CPU_ISA``). Each variant below pins them (or not) before torch is imported, in a fresh process, and
trains the tiny profile's architecture for ``--steps`` steps of copy pre-training (``tiny_model.build_base_model``:
forward, backward, AdamW; the kernels every stage's training and rollouts use) on a fixed corpus and seed, on 2
threads. Reported per variant: the weights' sha256, the loss after the last step, the wall time (median of
``--repeats``) and the machine (``oro_assets.machine``). Run it on each CPU type and compare:

    .venv/bin/python benchmarks/cpu_reproducibility.py --json benchmarks/results/cpu_reproducibility_<machine>.json
    .venv/bin/python benchmarks/cpu_reproducibility.py --compare benchmarks/results/cpu_reproducibility_<other>.json

``--compare`` says, per variant, whether this machine's weights are the other machine's (exit 1 when a variant
that both ran differs: the variant does not make training portable between the two).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import emit, print_result, run_fresh  # noqa: E402

#: variant -> the environment it pins before torch is imported
VARIANTS: dict[str, dict[str, str]] = {
    "default": {},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "compatible": {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41"},
}
CORPUS = [f"find {color} {item} under {price} dollars from shop {shop}"
          for color in ("red", "blue", "green", "black") for item in ("shoes", "lamp", "kettle", "jacket")
          for price in (20, 45, 90) for shop in ("north", "south")]


def _train(out: str, steps: int) -> None:
    sys.path.insert(0, str(ROOT))
    import torch

    from oro_assets.machine import machine_signature
    from oro_assets.training.profiles import TinyArch
    from oro_assets.training.tiny_model import build_base_model

    arch = TinyArch(copy_pretrain_steps=steps, copy_pretrain_gap=64)
    t0 = time.perf_counter()
    path = build_base_model(out, CORPUS, seed=0, arch=arch, threads=2)
    wall = time.perf_counter() - t0
    digest = hashlib.sha256((path / "model.safetensors").read_bytes()).hexdigest()
    print_result({"weights_sha256": digest, "wall_s": round(wall, 2), "kernels": torch.backends.cpu.get_cpu_capability(),
                  "machine": machine_signature(with_torch=False)["key"]})


def run_variant(name: str, steps: int, tmp: Path) -> dict:
    env = {**{k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR",
                                                               "ONEDNN_MAX_CPU_ISA")}, **VARIANTS[name]}
    tmp.mkdir(parents=True, exist_ok=True)
    out = tmp / name
    return run_fresh([__file__, "_train", str(out), str(steps)], f"variant {name}", env=env, cwd=tmp)


def compare(mine: dict, other: dict) -> dict[str, bool]:
    """Per variant both ran: whether the weights are the same."""
    return {name: mine["variants"][name]["weights_sha256"] == other["variants"][name]["weights_sha256"]
            for name in mine["variants"] if name in other.get("variants", {})}


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:2] == ["_train"]:
        _train(sys.argv[2], int(sys.argv[3]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=60, help="copy pre-training steps (default 60)")
    ap.add_argument("--repeats", type=int, default=2, help="runs of each variant, alternating (default 2)")
    ap.add_argument("--variants", nargs="+", default=["default", "avx2"], choices=list(VARIANTS),
                    help="default: default avx2 (compatible, torch's scalar kernels and MKL's SSE path, took minutes "
                         "for what default did in seconds)")
    ap.add_argument("--compare", type=Path, help="another machine's --json: same weights per variant?")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    runs: dict[str, list[dict]] = {name: [] for name in args.variants}
    with tempfile.TemporaryDirectory(prefix="cpu_repro.") as tmp:
        for rep in range(args.repeats):
            for name in (args.variants if rep % 2 == 0 else args.variants[::-1]):
                runs[name].append(run_variant(name, args.steps, Path(tmp) / f"r{rep}"))
                print(name, runs[name][-1], file=sys.stderr, flush=True)
    variants = {}
    for name, rs in runs.items():
        digests = {r["weights_sha256"] for r in rs}
        variants[name] = {"env": VARIANTS[name], "weights_sha256": rs[0]["weights_sha256"],
                          "repeatable": len(digests) == 1, "kernels": rs[0]["kernels"],
                          "median_wall_s": statistics.median(r["wall_s"] for r in rs)}
    report = {"machine": runs[args.variants[0]][0]["machine"], "steps": args.steps, "variants": variants}
    base = variants.get("default")
    if base:
        report["same_as_default_here"] = {n: v["weights_sha256"] == base["weights_sha256"] for n, v in variants.items()}
        report["wall_vs_default"] = {n: round(v["median_wall_s"] / base["median_wall_s"], 2) for n, v in variants.items()}
    failed = False
    if args.compare:
        other = json.loads(args.compare.read_text())
        report["compared_with"] = other.get("machine")
        report["same_weights_as_other_machine"] = same = compare(report, other)
        failed = not all(same.values())
    emit(report, str(args.json) if args.json else None)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
