"""Problem pool: loading ORO suites, ShoppingBench test JSONL and simulator ``problems.jsonl``.

A problem is a plain dict in the real ORO suite shape plus ``problem_id`` and ``source``
(docs/architecture.md, "Problems"). Loading never mutates the input rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from oro_assets import jsonio

CATEGORIES = ("Product", "Shop", "Voucher")
DIFFICULTIES = ("easy", "medium", "hard", "unknown")
EMBEDDED_DATA_DIR = Path(__file__).resolve().parent / "data"

_SUITE_RE = re.compile(r"problem_suite_(v\d+)", re.IGNORECASE)


class ProblemFormatError(ValueError):
    """A problem file could not be read; the message names the file and the row."""


def embedded_problem_files() -> list[Path]:
    """The real problem files shipped with the package (ORO suites v1-v3, ShoppingBench test)."""
    return sorted((EMBEDDED_DATA_DIR / "oro_suites").glob("*.json")) + sorted(
        (EMBEDDED_DATA_DIR / "shoppingbench").glob("*.jsonl")
    )


def problem_id_for(problem: dict) -> str:
    """The problem's own ``problem_id``, else ``"p_" + sha256(canonical({query, reward}))[:16]``."""
    pid = problem.get("problem_id")
    if isinstance(pid, str) and pid:
        return pid
    return "p_" + jsonio.content_hash({"query": problem.get("query"), "reward": problem.get("reward")})[:16]


def reward_items(problem: dict) -> list[dict]:
    """Reward as a list of product rewards (a Product reward dict becomes ``[it]``)."""
    reward = problem.get("reward")
    if isinstance(reward, dict):
        return [reward]
    if isinstance(reward, list):
        return [r for r in reward if isinstance(r, dict)]
    return []


def problem_ground_truth_ids(problem: dict) -> list[str]:
    return [str(r["product_id"]) for r in reward_items(problem) if r.get("product_id") is not None]


def scoring_spec(problem: dict) -> dict:
    """What production-strict scoring needs of a problem (``score_trace`` accepts it as the problem),
    plus its ground-truth ids in reward order."""
    spec = {"problem_id": problem_id_for(problem), "category": problem.get("category") or "Product",
            "reward": problem.get("reward"), "ground_truth_ids": problem_ground_truth_ids(problem)}
    if isinstance(problem.get("voucher"), dict):
        spec["voucher"] = problem["voucher"]
    return spec


def normalise_problem(raw: dict, source: str, *, keep_embeddings: bool = False) -> dict:
    """Return a new problem dict with ``problem_id``, ``category``, ``difficulty``, ``title``, ``source``."""
    if not isinstance(raw, dict):
        raise ProblemFormatError(f"problem is {type(raw).__name__}, expected an object")
    if not isinstance(raw.get("query"), str) or not raw["query"].strip():
        raise ProblemFormatError("problem has no 'query' string")
    if not isinstance(raw.get("reward"), dict | list) or not reward_items(raw):
        raise ProblemFormatError("problem has no 'reward' (object or non-empty list)")
    out: dict[str, Any] = {"problem_id": problem_id_for(raw)}
    for key, value in raw.items():
        if key == "reward_title_embeddings" and not keep_embeddings:
            continue
        if key != "problem_id":
            out[key] = value
    category = raw.get("category") or ("Product" if isinstance(raw["reward"], dict) else "Shop")
    if category not in CATEGORIES:
        raise ProblemFormatError(f"unknown category {category!r}")
    out["category"] = category
    difficulty = raw.get("difficulty") or "unknown"
    out["difficulty"] = difficulty if difficulty in DIFFICULTIES else "unknown"
    out.setdefault("title", raw.get("title") or category)
    out["source"] = raw.get("source") or source
    return out


def _source_for(path: Path) -> str:
    m = _SUITE_RE.search(path.name)
    if m:
        return f"oro_suite_{m.group(1).lower()}"
    if "shoppingbench" in path.name.lower():
        return "shoppingbench_test"
    return path.stem


def _rows_of(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if not stripped:
        return []
    if stripped[0] == "[":
        try:
            data = jsonio.loads(text)
        except jsonio.JSONDecodeError as exc:
            raise ProblemFormatError(f"{path}: not valid JSON: {exc}") from exc
        return data
    if stripped[0] == "{" and path.suffix == ".json":
        try:
            data = jsonio.loads(text)
        except jsonio.JSONDecodeError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("problems"), list):
            return data["problems"]
    rows = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(jsonio.loads(line))
        except jsonio.JSONDecodeError as exc:
            raise ProblemFormatError(f"{path}:{n}: not valid JSON: {exc}") from exc
    return rows


def load_problem_file(path: str | Path, *, keep_embeddings: bool = False) -> list[dict]:
    path = Path(path)
    source = _source_for(path)
    out = []
    for n, raw in enumerate(_rows_of(path), start=1):
        try:
            out.append(normalise_problem(raw, source, keep_embeddings=keep_embeddings))
        except ProblemFormatError as exc:
            raise ProblemFormatError(f"{path}: problem {n}: {exc}") from exc
    return out


def load_problems(paths: Iterable[str | Path] | str | Path, *, keep_embeddings: bool = False) -> list[dict]:
    """Load problems from files or folders (a folder = its ``*.json``/``*.jsonl`` files, sorted).

    Auto-detects an ORO suite JSON list, ShoppingBench JSONL and simulator ``problems.jsonl``.
    Duplicate ``problem_id`` values keep the first occurrence.
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    files: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            files.extend(sorted(f for f in p.iterdir() if f.suffix in (".json", ".jsonl") and f.is_file()))
        elif p.is_file():
            files.append(p)
        else:
            raise ProblemFormatError(f"{p}: no such problem file or folder")
    seen: set[str] = set()
    out: list[dict] = []
    for f in files:
        for prob in load_problem_file(f, keep_embeddings=keep_embeddings):
            if prob["problem_id"] in seen:
                continue
            seen.add(prob["problem_id"])
            out.append(prob)
    return out


def write_problems_jsonl(problems: Iterable[dict], path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for prob in problems:
            fh.write(jsonio.dumps(prob) + "\n")
    tmp.replace(path)
