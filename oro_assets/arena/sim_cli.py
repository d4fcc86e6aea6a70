"""``oro-assets simulate``: write one simulated firehose day."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import Any

from oro_assets import jsonio


def _date(text: str) -> str:
    try:
        return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD, got {text!r}") from None


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return n


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="write one day of the simulated SN15 firehose (gzip JSONL parts, problem pool, catalogue, truth)",
    )
    p.add_argument("--date", required=True, type=_date, help="partition date YYYY-MM-DD")
    p.add_argument("--traces", required=True, type=_positive, help="number of traces for the day")
    p.add_argument("--out", required=True, help="firehose root directory")
    p.add_argument("--seed", type=int, default=15, help="seed of the world and the population (default 15)")
    p.add_argument("--workers", type=int, default=None, help="worker processes (default: min(2, CPUs))")
    p.add_argument("--part-size", type=int, default=5000, help="lines per part file (default 5000)")
    p.set_defaults(func=_run, needs_settings=False)


def _run(args: argparse.Namespace) -> int:
    from oro_assets.arena.firehose import simulate_day

    try:
        summary = simulate_day(args.date, args.traces, args.out, seed=args.seed, workers=args.workers,
                               part_size=args.part_size)
    except (ValueError, OSError) as exc:
        print(f"oro-assets simulate: {exc}", file=sys.stderr)
        return 2
    print(jsonio.stdlib_dumps({
        "date": summary.date, "traces": summary.n_traces, "parts": summary.parts, "seconds": summary.seconds,
        "kinds": summary.kinds, "formats": summary.formats, "structural": summary.structural,
        "success_rate": summary.success_rate, "out": summary.out_dir,
    }))
    return 0
