"""CLI: ``oro-assets arena serve`` and ``oro-assets score`` (wired by ``oro_assets/cli.py``)."""

from __future__ import annotations

import argparse
import gzip
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from oro_assets import jsonio
from oro_assets.arena.catalogue import Catalogue, CatalogueError
from oro_assets.arena.problems import ProblemFormatError, embedded_problem_files, load_problems
from oro_assets.arena.scoring import last_recommended_ids, score_trace
from oro_assets.arena.similarity import ORO_TITLE_THRESHOLD, TitleSimilarity, make_similarity


def register(subparsers: Any) -> None:
    arena = subparsers.add_parser("arena", help="embedded arena (catalogue search server)")
    arena_sub = arena.add_subparsers(dest="arena_command", required=True)
    serve = arena_sub.add_parser("serve", help="serve the embedded catalogue on ShoppingBench's search endpoints")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    serve.add_argument("--catalogue", help="catalogue JSONL; default: built around the embedded real problems")
    serve.add_argument("--seed", type=int, default=15, help="seed of the default catalogue")
    serve.set_defaults(func=_serve)

    score = subparsers.add_parser("score", help="production-strict scores of traces, one JSON line per trace")
    score.add_argument("--problems", required=True, nargs="+", help="problem files or folders")
    score.add_argument("--catalogue", required=True, help="catalogue JSONL")
    score.add_argument("--traces", required=True, help="traces JSONL (.gz ok): ORO envelopes, dialogue arrays, "
                       "ShoppingBench rollouts or canonical OpenAI rows")
    score.add_argument("--title-threshold", type=float, default=ORO_TITLE_THRESHOLD,
                       help="title similarity threshold (0.7 ORO, 0.5 ShoppingBench)")
    score.add_argument("--similarity", default="lexical",
                       help="'lexical' (default) or 'embedding:<local model path>' (e.g. Qwen3-Embedding-0.6B)")
    score.set_defaults(func=_score)


def _serve(args: argparse.Namespace) -> int:
    from oro_assets.arena.generator import build_catalogue_for_problems
    from oro_assets.arena.server import serve

    try:
        if args.catalogue:
            catalogue = Catalogue.from_jsonl(args.catalogue)
        else:
            catalogue = build_catalogue_for_problems(load_problems(embedded_problem_files()), seed=args.seed)
    except (OSError, CatalogueError, ProblemFormatError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    def announce(url: str) -> None:
        print(f"serving {len(catalogue)} products on {url} (Ctrl-C stops)", file=sys.stderr, flush=True)

    serve(catalogue, args.host, args.port, announce=announce)
    return 0


def _open_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        for n, line in enumerate(fh, start=1):
            if line.strip():
                yield n, line


def trace_view(record: Any) -> dict:
    """problem_id / query / steps-or-messages / status / per-step timestamp validity of one raw record."""
    view: dict[str, Any] = {"problem_id": None, "query": None, "items": [], "status": None, "timestamps_ok": None}
    steps: list | None = None
    if isinstance(record, list):  # dialogue-only payload
        steps = record
    elif isinstance(record, dict):
        view["problem_id"] = record.get("problem_id")
        view["query"] = record.get("query")
        view["status"] = record.get("status")
        if isinstance(record.get("messages"), list):
            msgs = record["messages"]
            view["items"] = msgs
            if view["query"] is None:
                view["query"] = next((m.get("content") for m in msgs if isinstance(m, dict) and m.get("role") == "user"), None)
            return view
        if isinstance(record.get("dialogue"), list):
            steps = record["dialogue"]
        elif isinstance(record.get("steps"), list):
            steps = record["steps"]
        elif "dialogue" in record:
            steps = []
    if steps is None:
        raise ValueError("unrecognised trace record (expected an envelope, a dialogue array or messages)")
    view["items"] = [s for s in steps if isinstance(s, dict)]
    ts_ok = []
    for s in view["items"]:
        extra = s.get("extra_info") if isinstance(s.get("extra_info"), dict) else {}
        view["problem_id"] = view["problem_id"] or extra.get("problem_id")
        view["query"] = view["query"] or extra.get("query")
        ts = extra.get("timestamp")
        ts_ok.append(isinstance(ts, int | float) and not isinstance(ts, bool) and ts > 0)
    view["timestamps_ok"] = ts_ok
    return view


def score_records(problems: list[dict], catalogue: Catalogue, lines: Iterator[tuple[int, bytes]],
                  title_threshold: float = ORO_TITLE_THRESHOLD, similarity: TitleSimilarity | None = None,
                  ) -> Iterator[dict]:
    by_id = {p["problem_id"]: p for p in problems}
    by_query: dict[str, dict] = {}
    for p in problems:
        by_query.setdefault(p["query"], p)
    for n, line in lines:
        try:
            view = trace_view(jsonio.loads(line))
        except (jsonio.JSONDecodeError, ValueError) as exc:
            yield {"line": n, "error": f"unreadable trace: {exc}"}
            continue
        problem = by_id.get(view["problem_id"]) or by_query.get(view["query"] or "")
        if problem is None:
            yield {"line": n, "problem_id": view["problem_id"], "error": "no matching problem (by id or query)"}
            continue
        res = score_trace(problem, last_recommended_ids(view["items"]), catalogue,
                          title_threshold=title_threshold, similarity=similarity,
                          timestamps_ok=view["timestamps_ok"])
        success = res.success and view["status"] not in ("failed", "timed_out")
        row: dict[str, Any] = {
            "line": n, "problem_id": res.problem_id, "category": res.category, "status": view["status"],
            "recommended": res.recommended, "gt": res.gt, "rule": res.rule,
            "items": [{"product_id": it.product_id, "score": it.score, "exact": it.exact,
                       "fields": {f: it.fields[f] for f in it.checked}} for it in res.items],
        }
        if res.shop is not None:
            row["shop"] = res.shop
        if res.budget is not None:
            row["budget"] = res.budget
            row["total_price"] = res.total_price
        row["format"] = res.format
        row["success"] = success
        yield row


def _score(args: argparse.Namespace) -> int:
    try:
        problems = load_problems(args.problems)
        catalogue = Catalogue.from_jsonl(args.catalogue)
        traces = Path(args.traces)
        if not traces.is_file():
            raise OSError(f"{traces}: no such traces file")
        sim = make_similarity(args.similarity)
        for row in score_records(problems, catalogue, _open_lines(traces), args.title_threshold, sim):
            sys.stdout.write(jsonio.dumps(row) + "\n")
    except (OSError, CatalogueError, ProblemFormatError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry (``python -m oro_assets.arena.cli``) until the lead wires ``register``."""
    parser = argparse.ArgumentParser(prog="oro-assets")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
