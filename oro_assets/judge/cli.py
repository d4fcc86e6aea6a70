"""``oro-assets judge --traces FILE [--judge rule|llm] [--cache PATH]``: one JSON line per trace.

FILE is JSONL (or .jsonl.gz) of canonical normalised rows; raw firehose records (ORO envelope, dialogue-only,
ShoppingBench rollout, OpenAI messages) are normalised on the fly. A line that cannot be read
prints a JSON line with ``error`` and the run exits 1 after judging every other line.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import sys
from pathlib import Path

from oro_assets import jsonio


def register(subparsers) -> None:
    parser = subparsers.add_parser("judge", help="Score the reasoning of traces (one JSON line per trace).",
                                   description=__doc__.splitlines()[0])
    parser.add_argument("--traces", required=True, type=Path, help="JSONL of canonical normalised traces or raw records")
    parser.add_argument("--judge", choices=("rule", "llm"), default=None, help="default: ORO_JUDGE (rule)")
    parser.add_argument("--cache", type=Path, default=None, help="SQLite judge cache file (optional)")
    parser.set_defaults(func=run)


def _canonical(obj: object, path: Path, line_no: int, raw: bytes) -> dict:
    if isinstance(obj, dict) and "messages" in obj and "steps" in obj:
        return obj
    from oro_assets.traces.normalize import normalize_record  # raw record: normalise it first

    return normalize_record(obj, provenance={"source_file": str(path), "line_no": line_no, "partition": "",
                                             "raw_sha256": hashlib.sha256(raw).hexdigest()})


def run(args: argparse.Namespace) -> int:
    from oro_assets.judge.base import JudgeStats, unavailable
    from oro_assets.judge.factory import make_judge
    from oro_assets.settings import load_settings

    judge = make_judge(load_settings(), kind=args.judge, cache_path=args.cache)
    if not args.traces.is_file():
        print(f"oro-assets judge: {args.traces} is not a file", file=sys.stderr)
        return 1
    stats = JudgeStats()
    bad = 0
    opener = gzip.open if args.traces.suffix == ".gz" else open
    with opener(args.traces, "rb") as fh:
        for line_no, raw in enumerate(fh, start=1):
            raw = raw.rstrip(b"\r\n")
            if not raw.strip():
                continue
            try:
                row = _canonical(jsonio.loads(raw), args.traces, line_no, raw)
            except Exception as exc:  # noqa: BLE001 - report the line and carry on
                bad += 1
                print(jsonio.dumps({"line_no": line_no, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}))
                continue
            try:
                result = judge.judge(row)
            except Exception as exc:  # noqa: BLE001 - a trace the judge cannot read is unavailable
                result = unavailable(f"judging raised {type(exc).__name__}: {str(exc)[:200]}", judge.judge_id,
                                     judge.judge_version)
            stats.add(result)
            print(jsonio.dumps({"line_no": line_no, "trace_id": row.get("trace_id"), "score": result.score,
                                "gate": result.gate, "available": result.available,
                                "explanation": result.explanation, "judge_id": result.judge_id,
                                "judge_version": result.judge_version, "cached": result.cached}))
    print(jsonio.dumps({"summary": stats.as_metadata(), "unreadable_lines": bad}), file=sys.stderr)
    return 1 if bad else 0
