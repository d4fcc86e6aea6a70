"""Shared parts of the benchmarks: the report as indented JSON on stdout and, when asked, in a file; the
environment of a child that must run this tree's code; a measurement run in a fresh interpreter."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

RESULT = "RESULT "


def cpu_model() -> str:
    """The machine (``oro_assets.machine.machine_key``: CPU model, family and model number, widest vector flags), so
    results from different machines are not read as one: a baseline's speed moves with the machine while the chain's
    may not (session 37: `orjson` a third slower), and this project's boxes all call themselves "AMD EPYC" while
    some are Zen 3 (AVX2) and some Zen 4 (AVX-512; session 42)."""
    from oro_assets.machine import machine_key, machine_signature

    return machine_key(machine_signature(with_torch=False))


def emit(report: dict, json_path: str | None = None) -> None:
    """Print ``report`` as JSON and also write it to ``json_path`` when one is given; a report that does not name its
    machine gets ``machine`` (:func:`cpu_model`), so no figure is saved without the machine that measured it."""
    if isinstance(report, dict) and "machine" not in report:
        report = {"machine": cpu_model(), **report}
    text = json.dumps(report, indent=2)
    print(text)
    if json_path:
        Path(json_path).write_text(text + "\n")


def tree_env(root: Path) -> dict[str, str]:
    """The environment with ``root``'s package first on ``PYTHONPATH``: a console script (``oro-assets``) would
    otherwise import the checkout the venv's editable install points at, so a clone run beside the main checkout
    would measure the main checkout's code."""
    path = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def print_result(result: dict) -> None:
    """A fresh process's measurement, as :func:`run_fresh` reads it back (the last such line of its stdout)."""
    print(RESULT + json.dumps(result), flush=True)


def run_fresh(args: list[str], what: str, env: dict[str, str] | None = None, cwd: str | Path | None = None) -> dict:
    """``python <args>`` in a fresh interpreter (nothing imported or warmed by this one): the result it printed with
    :func:`print_result`; exits naming ``what`` with the child's stderr when it fails or prints none."""
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT)]
    if proc.returncode != 0 or not lines:
        sys.exit(f"{what} failed:\n{proc.stderr[-4000:]}")
    return json.loads(lines[-1][len(RESULT):])


def day_ab_args(description: str, passes: int, argv: list[str] | None = None, passes_flag: str = "--passes",
                only: tuple[str, ...] = ()) -> argparse.Namespace:
    """The arguments every paired A/B benchmark over a simulated day takes: the day (traces, seed, share of
    later-era records, cache dir), the passes of each side and where to write the JSON; with ``only``, an ``--only``
    naming the one group of kernels to switch (default None: every group)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--traces", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--later-share", type=float, default=0.0)
    ap.add_argument("--cache", default="/tmp/chain-bench")
    ap.add_argument(passes_flag, type=int, default=passes, help="passes of each side")
    ap.add_argument("--json")
    if only:
        ap.add_argument("--only", choices=only, help="switch only this group of kernels (default: every group)")
    return ap.parse_args(argv)


def require_kernels() -> None:
    """An A/B of the native kernels against their references measures nothing without the built extension."""
    from oro_assets import native

    if native.kernels is None:
        raise SystemExit(f"the native kernels are not in use: {native.why}")
