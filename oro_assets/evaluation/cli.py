"""``oro-assets eval``: evaluate a checkpoint, an OpenAI-compatible endpoint or a scripted baseline."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from oro_assets import jsonio


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "eval",
        help="roll out a checkpoint / endpoint / scripted policy on eval problems and report ASR, pass@k",
        description="Production-strict evaluation outside Dagster: n sampled runs + one greedy run per problem, "
                    "trajectories as JSONL, metrics JSON, a markdown report and plots under --out.",
    )
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--checkpoint", help="checkpoint directory (data/checkpoints/<stage>/<version>)")
    who.add_argument("--endpoint", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
    who.add_argument("--scripted", metavar="KIND", help="arena scripted policy kind, e.g. teacher, agentic_compare")
    p.add_argument("--model", help="model name on --endpoint")
    p.add_argument("--problems", required=True, help="eval problems file (eval_problems JSONL, suite JSON, ...)")
    p.add_argument("--pool", default="dev", help="pool of an eval_problems dataset's rows to evaluate (default dev; "
                                                 "the locked test pool is read only by oro-assets main --final-report)")
    p.add_argument("--catalogue", help="catalogue JSONL (default: catalogue.jsonl beside --problems, "
                                       "else the embedded firehose catalogue)")
    p.add_argument("--n", type=int, default=8, help="sampled runs per problem (default 8)")
    p.add_argument("--temperature", type=float, default=0.7, help="sampling temperature of the n runs (default 0.7)")
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--no-greedy", action="store_true", help="skip the extra greedy run per problem")
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--max-steps", type=int, default=30)
    p.add_argument("--timeout-s", type=float, default=300.0)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int, help="evaluate only the first N problems")
    p.add_argument("--stage", help="label in the report (default: from the checkpoint)")
    p.add_argument("--manifest-problems", help="JSON list of training problem ids to check against "
                                               "(default: the checkpoint's lineage manifest)")
    p.add_argument("--no-leak-check", action="store_true", help="report leak violations instead of refusing")
    p.add_argument("--out", help="output folder (default: <data>/reports/eval/<stage>)")
    p.set_defaults(func=_handler)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "eval"


def _catalogue_path(args: argparse.Namespace, settings) -> Path:
    if args.catalogue:
        return Path(args.catalogue)
    beside = Path(args.problems).parent / "catalogue.jsonl"
    if beside.exists():
        return beside
    return settings.embedded_firehose_dir / "catalogue.jsonl"


def _handler(args: argparse.Namespace) -> int:
    from oro_assets.arena.catalogue import Catalogue, CatalogueError
    from oro_assets.arena.problems import ProblemFormatError, load_problems
    from oro_assets.evaluation.checks import LeakError
    from oro_assets.evaluation.heldout import LockedPoolError, require_reader
    from oro_assets.evaluation.report import (
        LeakRefs,
        build_comparison_report,
        evaluate_checkpoint,
        evaluate_scripted,
    )
    from oro_assets.evaluation.rollout import EvalSettings
    from oro_assets.settings import api_key, load_settings

    settings = load_settings()
    if args.n < 0:
        print(f"oro-assets eval: --n must be 0 or more, got {args.n}", file=sys.stderr)
        return 2
    if args.n == 0 and (args.no_greedy or args.scripted):  # scripted agents run no greedy pass
        print("oro-assets eval: nothing to run (--n 0 with --no-greedy or --scripted)", file=sys.stderr)
        return 2
    if args.limit is not None and args.limit < 1:
        print(f"oro-assets eval: --limit must be 1 or more, got {args.limit}", file=sys.stderr)
        return 2
    if args.endpoint and not args.model:
        print("oro-assets eval: --endpoint needs --model", file=sys.stderr)
        return 2
    pool = None
    try:
        problems = load_problems(args.problems)
        # an eval_problems dataset names each row's pool: an ad-hoc evaluation reads dev, never the locked test pool
        if any("pool" in p for p in problems):
            pool = require_reader(args.pool, final_report=False, reader="oro-assets eval")
            problems = [p for p in problems if p.get("pool") == pool]
    except (ProblemFormatError, LockedPoolError) as exc:
        print(f"oro-assets eval: {exc}", file=sys.stderr)
        return 2
    if args.limit is not None:
        problems = problems[: args.limit]
    if not problems:
        print(f"oro-assets eval: no problems in {args.problems}", file=sys.stderr)
        return 2
    cat_path = _catalogue_path(args, settings)
    if not cat_path.exists():
        print(f"oro-assets eval: catalogue {cat_path} not found; pass --catalogue", file=sys.stderr)
        return 2
    try:
        catalogue = Catalogue.from_jsonl(cat_path)
    except CatalogueError as exc:
        print(f"oro-assets eval: {exc}", file=sys.stderr)
        return 2
    manifest = None
    if args.manifest_problems:
        manifest = jsonio.loads(Path(args.manifest_problems).read_text())
    stage = args.stage or (f"scripted:{args.scripted}" if args.scripted else
                           f"endpoint:{args.model}" if args.endpoint else Path(args.checkpoint).parent.name or "checkpoint")
    out = Path(args.out) if args.out else settings.layout.eval_reports / _slug(stage)
    rollout = EvalSettings(n=args.n, greedy=not args.no_greedy, seed=args.seed, max_steps=args.max_steps,
                           timeout_s=args.timeout_s, temperature=args.temperature, top_p=args.top_p,
                           max_new_tokens=args.max_new_tokens, batch_size=args.batch_size)
    leak = LeakRefs(manifest_problems=manifest, enforce=not args.no_leak_check)
    try:
        if args.scripted:
            # scripted agents have no temperature: ASR = mean over the seeded runs, no greedy run
            result = evaluate_scripted(args.scripted, problems, catalogue, stage=stage, n=args.n, seed=args.seed,
                                       settings=rollout.replace(temperature=None),
                                       leak=LeakRefs(manifest_problems=manifest, enforce=not args.no_leak_check,
                                                     problems_by_id={p["problem_id"]: p for p in problems}),
                                       out_dir=out)
        else:
            result = evaluate_checkpoint(args.checkpoint, problems, catalogue, endpoint=args.endpoint, model=args.model,
                                         api_key=api_key() if args.endpoint else None, stage=args.stage,
                                         settings=rollout, leak=leak, out_dir=out)
    except LeakError as exc:
        print(f"oro-assets eval: refused: {exc}", file=sys.stderr)
        return 3
    except (FileNotFoundError, ValueError) as exc:
        print(f"oro-assets eval: {exc}", file=sys.stderr)
        return 2
    if pool is not None:  # recorded as the assets' evaluations record it, so screens compare like with like
        result.config["pool"] = pool
        result.save(out)
    report = build_comparison_report({result.stage: result}, out / "report", title=f"Evaluation: {result.stage}")
    m = result.metrics
    lo, hi = m["asr_ci"]
    pk = " ".join(f"pass@{k}={100 * v:.1f}%" for k, v in m["pass_at_k"].items())
    print(f"{result.stage}: ASR {100 * m['asr']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] on {m['n_problems']} problems "
          f"({m['asr_basis']}); {pk}; GT {100 * m['gt_rate']:.1f}%; rule {m['mean_rule']:.2f}")
    for k, why in (m.get("pass_at_k_unavailable") or {}).items():
        print(f"pass@{k} not reported: {why}")
    for name, violations in result.checks.items():
        if violations:
            print(f"check {name}: {len(violations)} violation(s); first: {violations[0]}")
    print(f"trajectories: {result.trajectories_path}")
    print(f"report: {report.markdown_path}")
    return 0
