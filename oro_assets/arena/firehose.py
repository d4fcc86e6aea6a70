"""Simulated SN15 firehose: one day of raw miner trajectories, byte-identical for a seed and date.

Layout written under ``out_dir`` (docs/architecture.md, "Raw firehose records"):
``<date>/part-NNNNN.jsonl.gz`` (gzip, mtime 0), ``problems.jsonl``, ``catalogue.jsonl`` (the world,
built from the seed only, so every day shares one problem pool), ``_truth/<date>.jsonl`` and
``_truth/problems.jsonl``. The pipeline never reads ``_truth/``.

Every trace is a pure function of ``(seed, date, index)``; parts are produced by worker
processes (fork) and the output does not depend on how many workers ran.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gzip
import hashlib
import multiprocessing
import os
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oro_assets import jsonio
from oro_assets.arena import recorder
from oro_assets.arena.env import InProcessEnv
from oro_assets.arena.episode import SYSTEM_PROMPT, Episode, SimClock, run_episode
from oro_assets.arena.generator import World, build_world, variant_group_rows
from oro_assets.arena.policies.broken import apply_render_defect, truncate_line
from oro_assets.arena.population import (
    DEFAULT_SHARES,
    KIND_INFO,
    KindSampler,
    Miner,
    build_miners,
    make_policy,
    validate_shares,
)
from oro_assets.arena.scoring import format_score, score_trace
from oro_assets.arena.tools import TOOL_SCHEMAS
from oro_assets.toolcalls import RECOMMEND_PRODUCT

FORMATS = ("oro_envelope", "dialogue_only", "shoppingbench_rollout", "openai_messages")
DEFAULT_FORMAT_SHARES: dict[str, float] = {"oro_envelope": 0.8, "dialogue_only": 0.1, "shoppingbench_rollout": 0.1}
#: Which of ORO's recorders writes a day's ORO records (arena/recorder.py): all a6b1cf3 by default; a
#: dump from ORO's later ShoppingBench era holds ``later`` records, and a mix holds both on one day.
DEFAULT_RECORDER_SHARES: dict[str, float] = {recorder.ERA_A6B1CF3: 1.0}
PART_SIZE = 5000
DEFAULT_N_PROBLEMS = 1500
DEFAULT_N_PRODUCTS = 20000
PROBLEMS_PER_DAY = 300
EXPORT_META_SHARE = 0.7  # envelopes from a back-end export (with metadata); the rest are bare sandbox lines
REASONING_SHARE = 0.4  # exported envelopes that carry a recorded reasoning score
DUPLICATE_SHARE = 0.002  # byte-identical re-deliveries of the previous line
GZIP_LEVEL = 1  # speed over size: the simulator writes ~20 KB per trace
JUDGE_MODELS = ("gpt-4.1-mini", "claude-haiku-4-5")


@dataclass
class SimSummary:
    date: str
    n_traces: int
    out_dir: str
    parts: list[str]
    kinds: dict[str, int]
    formats: dict[str, int]
    structural: dict[str, int]
    success_rate: float
    seconds: float
    extra: dict = field(default_factory=dict)


class CachedEnv:
    """Memoises search and view results per arguments (the simulator repeats them a lot).

    Results are shared objects: callers must not mutate them (the episode loop does not)."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self._find: dict[tuple, Any] = {}
        self._view: dict[str, Any] = {}
        self._raw: dict[str, Any] = {}

    def find_product(self, q: str, page: int = 1, shop_id: str | None = None, price: str | None = None,
                     sort: str = "default", service: str | None = None) -> list[dict]:
        key = (q, page, shop_id, price, sort, service)
        hit = self._find.get(key)
        if hit is None:
            try:
                hit = ("ok", self.env.find_product(q=q, page=page, shop_id=shop_id, price=price, sort=sort,
                                                   service=service))
            except (ValueError, TypeError) as exc:
                hit = ("err", exc)
            self._find[key] = hit
        if hit[0] == "err":
            raise hit[1]
        return hit[1]

    def view_product_information(self, product_ids: str) -> list[dict]:
        hit = self._view.get(product_ids)
        if hit is None:
            try:
                hit = ("ok", self.env.view_product_information(product_ids))
            except (ValueError, TypeError) as exc:
                hit = ("err", exc)
            self._view[product_ids] = hit
        if hit[0] == "err":
            raise hit[1]
        return hit[1]

    def get_product_raw(self, product_id: str) -> dict | None:
        if product_id not in self._raw:
            self._raw[product_id] = self.env.get_product_raw(product_id)
        return self._raw[product_id]


# ------------------------------------------------------------------------------------------ context


@dataclass
class _DayContext:
    seed: int
    date: str
    n_traces: int
    world: World
    day_problems: list[dict]
    sampler: KindSampler
    miners: dict[str, list[Miner]]
    formats: list[tuple[str, float]]
    day_start_ms: int
    env: CachedEnv
    score_cache: dict = field(default_factory=dict)
    eras: list[tuple[str, float]] = field(default_factory=lambda: _cum(DEFAULT_RECORDER_SHARES))


_CTX: _DayContext | None = None  # set in the parent before forking workers


def _day_start_ms(date: str) -> int:
    try:
        d = dt.date.fromisoformat(date)
    except ValueError:
        raise ValueError(f"date must be YYYY-MM-DD, got {date!r}") from None
    return int(dt.datetime(d.year, d.month, d.day, tzinfo=dt.UTC).timestamp() * 1000)


def _int_seed(*parts: object) -> int:
    return int.from_bytes(hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).digest(), "big")


def _uuid(*parts: object) -> str:
    h = hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=16).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _cum(shares: dict[str, float]) -> list[tuple[str, float]]:
    acc, out = 0.0, []
    for k in sorted(shares):
        acc += shares[k]
        out.append((k, acc))
    return out


def _pick(table: list[tuple[str, float]], u: float) -> str:
    for k, c in table:
        if u < c:
            return k
    return table[-1][0]


# ------------------------------------------------------------------------------------------ rendering


def _rollout_steps(ep: Episode, dialogue: list[dict]) -> list[dict]:
    """ShoppingBench rollout: each step carries ``prompt`` and results in ``message.obs``."""
    prompt = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": ep.query}]
    out = []
    for step in dialogue:
        comp = step.get("completion")
        if isinstance(comp, dict) and isinstance(comp.get("message"), dict):
            msg = comp["message"]
            calls, obs = [], []
            for c in msg.get("tool_call") or []:  # ShoppingBench keeps results in obs, not in the call
                calls.append({k: v for k, v in c.items() if k != "result"})
                if "result" in c:
                    obs.append({"tool_call_id": c.get("tool_call_id"), "results": c["result"]})
            comp = {**comp, "message": {"think": msg.get("think", ""), "tool_call": calls,
                                        "response": msg.get("response", ""), "obs": obs}}
        extra = {k: v for k, v in (step.get("extra_info") or {}).items() if k != "proxy_calls"}
        out.append({"prompt": prompt, "completion": comp, "extra_info": extra})
    return out


_GATE_TEXT = {
    0.1: "Gate 1 failed: no inference call with at least 30 completion tokens.",
    0.3: "Gate 2 failed: the thinking restates the request without analysing tool results.",
    0.5: "Gate 3 failed: the thinking discusses results but cites no specific datum.",
    0.7: "Gate 4 failed: no step weighs two candidates with a reason.",
    0.9: "All gates passed: the thinking compares candidates using tool data.",
}


def _simulate_one(ctx: _DayContext, i: int) -> tuple[bytes, dict]:
    rng = random.Random(_int_seed(ctx.seed, ctx.date, i))
    kind = ctx.sampler.draw(rng.random())
    problem = ctx.day_problems[rng.randrange(len(ctx.day_problems))]
    miners = ctx.miners[kind]
    miner = miners[rng.randrange(len(miners))]
    version = miner.agent_versions[rng.randrange(len(miner.agent_versions))]
    fmt = _pick(ctx.formats, rng.random())
    start = ctx.day_start_ms + int((i + rng.random()) * 86_400_000 / max(1, ctx.n_traces))
    policy = make_policy(kind, problem, skill=miner.skill, seed=rng.getrandbits(32), model=miner.model)

    def durations(event: str, info: dict) -> float:
        if event == "inference":
            return 350.0 + 22.0 * float(info.get("completion_tokens") or 0) + rng.random() * 900.0
        if event == "search":
            return 60.0 + rng.random() * 240.0
        if event == "overhead":
            return 5.0 + rng.random() * 30.0
        return 1.0 + rng.random() * 3.0

    ep = run_episode(policy, problem, ctx.env, clock=SimClock(start), step_clock=durations, tools=TOOL_SCHEMAS,
                     answer_shape=miner.answer_shape, answer_style=miner.answer_style,
                     auto_recommend=miner.auto_recommend)
    defect = getattr(policy, "render_defect", None)
    agent_steps = apply_render_defect(defect, ep.agent_steps(), rng)
    model_calls = _model_calls(ep, getattr(policy, "structural", KIND_INFO[kind][1]))
    era = _era(ctx, i)
    envelope = ep.to_oro_envelope(agent_steps, era=era)
    dialogue = envelope["dialogue"]
    recommended = ep.recommended_ids()
    key = (problem["problem_id"], tuple(recommended))
    scored = ctx.score_cache.get(key)
    if scored is None:
        sr = score_trace(problem, recommended, ctx.world.catalogue)
        scored = (sr.gt, round(sr.rule, 4), sr.success)
        ctx.score_cache[key] = scored
    gt, rule, solved = scored
    success = bool(solved and envelope["status"] == "SUCCESS")
    ts_ok = [isinstance(s.get("extra_info", {}).get("timestamp"), int) for s in dialogue or []]
    designed = float(getattr(policy, "designed_gate", KIND_INFO[kind][0]))
    structural = getattr(policy, "structural", KIND_INFO[kind][1])
    if fmt == "shoppingbench_rollout" and structural != "agentic":
        fmt = "oro_envelope"  # ShoppingBench's own loop is a model rollout: code-driven harnesses never write one

    if fmt == "oro_envelope":
        record: Any = {k: v for k, v in envelope.items() if k != "dialogue"}
        if rng.random() < EXPORT_META_SHARE:  # a back-end export adds metadata; the sandbox line has none
            record.update({
                "eval_run_id": _uuid(ctx.seed, ctx.date, miner.hotkey, version),
                "agent_version_id": version,
                "miner_hotkey": miner.hotkey,
                "race_id": _uuid(ctx.seed, "race", ctx.date),
                "suite_version": problem.get("source", "simulator") + "-v" + str(1 + _int_seed(problem["problem_id"]) % 3),
                "category": problem.get("category"),
                "query": problem["query"],
                "recorded_at": _iso(ep.ended_ms),
                "score": {"gt": gt, "rule": rule, "format": format_score(ts_ok), "success": success},
            })
            if rng.random() < REASONING_SHARE:
                recorded = designed
                if rng.random() < 0.1:  # the production judge is not perfectly consistent
                    recorded = min(0.9, max(0.1, round(designed + rng.choice((-0.2, 0.2)), 1)))
                record["reasoning"] = {"score": recorded, "explanation": _GATE_TEXT[recorded],
                                       "model": JUDGE_MODELS[rng.randrange(len(JUDGE_MODELS))]}
        record["dialogue"] = dialogue
    elif fmt == "dialogue_only":
        record = dialogue or []  # the per-problem S3 payload: the dialogue array alone
    elif fmt == "shoppingbench_rollout":
        record = _rollout_steps(ep, dialogue or [])
    else:
        record = {"problem_id": problem["problem_id"], "query": problem["query"], "messages": ep.to_messages(),
                  "tools": TOOL_SCHEMAS}
    line = jsonio.dumps_bytes(record)
    if defect == "truncated_line":
        line = truncate_line(line, rng)
    grounded = _grounded(ep, recommended)
    truth = {
        "problem_id": problem["problem_id"],
        "policy_kind": kind,
        "designed_gate": designed,
        "structural": structural,
        "success": success,
        "format": fmt,
        "defect": kind.removeprefix("broken_") if kind.startswith("broken_") else None,
        "status": ep.status,
        "grounded": grounded,
        "miner_hotkey": miner.hotkey,
        "skill": miner.skill,
        "answer_shape": miner.answer_shape,
        "bodies": _bodies(dialogue),
        "recorder_era": era,
        "auto_recommended": any(st.code_made for st in ep.steps),
        "model_calls": model_calls if dialogue is not None else None,
    }
    return line, truth


def _era(ctx: _DayContext, i: int) -> str:
    """The recorder era of trace ``i``, from its own stream: a day of one era draws nothing, so
    a6b1cf3-only days stay byte-identical to those written before eras existed."""
    if len(ctx.eras) == 1:
        return ctx.eras[0][0]
    return _pick(ctx.eras, random.Random(_int_seed(ctx.seed, ctx.date, i, "era")).random())


def _model_calls(ep: Episode, structural: str) -> list[bool | None]:
    """Per step: did the model itself produce the step's calls (None: the step has none)?"""
    return [None if not st.calls else (structural == "agentic" and not st.code_made) for st in ep.steps]


def _bodies(dialogue: list[dict] | None) -> str:
    """``dropped`` when ORO's log dropped any inference body of the run (over 2,000 characters)."""
    if not dialogue:
        return "none"
    for step in dialogue:
        extra = step.get("extra_info") if isinstance(step, dict) else None
        for call in (extra or {}).get("proxy_calls") or ():
            if "/inference/" in str(call.get("path")) and call.get("response_truncated"):
                return "dropped"
    return "kept"


def _grounded(ep: Episode, recommended: list[str]) -> bool | None:
    """Did every recommended id appear in a tool result before the recommendation?"""
    if not recommended:
        return None
    seen: set[str] = set()
    for step in ep.steps:
        for call in step.calls:
            if call.name == RECOMMEND_PRODUCT:
                return all(r in seen for r in recommended)
            res = call.result
            if isinstance(res, list):
                seen.update(str(r.get("product_id")) for r in res if isinstance(r, dict))
    return all(r in seen for r in recommended)


def _run_part(args: tuple[int, int, int, str]) -> tuple[str, list[bytes], dict[str, dict[str, int]]]:
    part_no, lo, hi, day_dir = args
    ctx = _CTX
    assert ctx is not None
    name = f"part-{part_no:05d}.jsonl.gz"
    path = Path(day_dir) / name
    tmp = path.with_name(name + ".tmp")
    truth_lines: list[bytes] = []
    counts: dict[str, dict[str, int]] = {"kinds": {}, "formats": {}, "structural": {}, "success": {}, "eras": {}}
    prev: bytes | None = None
    prev_truth: dict = {}
    prev_key = ""
    line_no = 0
    with tmp.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                              compresslevel=GZIP_LEVEL) as gz:
        for i in range(lo, hi):
            dup_rng = random.Random(_int_seed(ctx.seed, ctx.date, i, "dup"))
            if prev is not None and dup_rng.random() < DUPLICATE_SHARE:
                line, truth = prev, dict(prev_truth, duplicate_of=prev_key)
            else:
                line, truth = _simulate_one(ctx, i)
            line_no += 1
            gz.write(line + b"\n")
            key = f"{name}:{line_no}"
            row = {"line_key": key, "raw_sha256": hashlib.sha256(line).hexdigest(), **truth,
                   "variant_group": ctx.world.variant_groups.get(truth["problem_id"])}
            truth_lines.append(jsonio.dumps_bytes(row))
            if "duplicate_of" not in truth:
                prev, prev_truth, prev_key = line, truth, key
            for bucket, value in (("kinds", truth["policy_kind"]), ("formats", truth["format"]),
                                  ("structural", truth["structural"]), ("success", str(truth["success"])),
                                  ("eras", truth["recorder_era"])):
                counts[bucket][value] = counts[bucket].get(value, 0) + 1
    tmp.replace(path)
    return name, truth_lines, counts


def default_world(seed: int) -> World:
    return build_world(seed, DEFAULT_N_PROBLEMS, DEFAULT_N_PRODUCTS)


def _write_atomic(path: Path, lines: list[bytes]) -> None:
    """Write ``path`` whole or not at all: into a uniquely named temporary file in the same directory,
    then ``os.replace`` (two writers of the same file, e.g. ``arena_world`` and ingest, never share a
    temporary file; the last rename wins and readers see one complete file)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # as a plain open() would leave it (mkstemp makes it 0600)
        with os.fdopen(fd, "wb") as fh:
            for line in lines:
                fh.write(line + b"\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_world(world: World, out_dir: str | Path) -> None:
    """``problems.jsonl``, ``catalogue.jsonl`` and ``_truth/problems.jsonl`` (skipped when identical)."""
    out = Path(out_dir)
    (out / "_truth").mkdir(parents=True, exist_ok=True)
    for path, rows in ((out / "problems.jsonl", world.problems),
                       (out / "_truth" / "problems.jsonl", variant_group_rows(world)),
                       (out / "catalogue.jsonl", world.catalogue.products)):
        lines = [jsonio.dumps_bytes(r) for r in rows]
        if path.exists() and path.stat().st_size == sum(len(x) + 1 for x in lines):
            digest = hashlib.sha256(b"".join(x + b"\n" for x in lines)).hexdigest()
            if hashlib.sha256(path.read_bytes()).hexdigest() == digest:
                continue
        _write_atomic(path, lines)


def simulate_day(
    date: str,
    n_traces: int,
    out_dir: str | Path,
    *,
    seed: int,
    world: World | None = None,
    format_shares: dict[str, float] | None = None,
    policy_shares: dict[str, float] | None = None,
    part_size: int = PART_SIZE,
    workers: int | None = None,
    problems_per_day: int = PROBLEMS_PER_DAY,
    n_miners: int = 40,
    recorder_shares: dict[str, float] | None = None,
) -> SimSummary:
    """Write one simulated day under ``out_dir`` and return what was written.

    ``recorder_shares``: share of ORO records per recorder era (default all ``a6b1cf3``; e.g.
    ``{"a6b1cf3": 0.5, "later": 0.5}`` puts both eras on one day). Same ``seed`` and ``date`` (and the
    same options) give byte-identical files."""
    global _CTX
    t0 = time.perf_counter()
    day_start = _day_start_ms(date)
    if n_traces < 0:
        raise ValueError("n_traces must be >= 0")
    if part_size < 1:
        raise ValueError("part_size must be >= 1")
    fshares = validate_format_shares(format_shares or DEFAULT_FORMAT_SHARES)
    pshares = validate_shares(policy_shares or DEFAULT_SHARES)
    eshares = validate_recorder_shares(recorder_shares or DEFAULT_RECORDER_SHARES)
    world = world if world is not None else default_world(seed)
    out = Path(out_dir)
    day_dir = out / date
    day_dir.mkdir(parents=True, exist_ok=True)
    for stale in day_dir.glob("part-*.jsonl.gz"):  # a re-run replaces the whole day
        stale.unlink()
    write_world(world, out)

    day_rng = random.Random(_int_seed(seed, "day", date))
    k = min(len(world.problems), max(1, problems_per_day))
    day_problems = day_rng.sample(world.problems, k)
    _CTX = _DayContext(
        seed=seed, date=date, n_traces=n_traces, world=world, day_problems=day_problems,
        sampler=KindSampler(pshares), miners=build_miners(seed, pshares, n_miners), formats=_cum(fshares),
        day_start_ms=day_start, env=CachedEnv(InProcessEnv(world.catalogue)), eras=_cum(eshares),
    )
    _ = world.catalogue.index  # build the BM25 index once, before forking
    jobs = [(n, lo, min(n_traces, lo + part_size), str(day_dir))
            for n, lo in enumerate(range(0, n_traces, part_size))]
    n_workers = workers if workers is not None else min(2, os.cpu_count() or 1)
    try:
        if n_workers > 1 and len(jobs) > 1:
            with multiprocessing.get_context("fork").Pool(min(n_workers, len(jobs))) as pool:
                results = pool.map(_run_part, jobs, chunksize=1)
                # let the workers exit on their own: the context's terminate() signals them, and a worker forked
                # from a Dagster step runs the step's interrupt handler and prints a traceback
                pool.close()
                pool.join()
        else:
            results = [_run_part(j) for j in jobs]
    finally:
        _CTX = None
    truth_lines: list[bytes] = []
    totals: dict[str, dict[str, int]] = {"kinds": {}, "formats": {}, "structural": {}, "success": {}, "eras": {}}
    for _name, lines, counts in results:
        truth_lines.extend(lines)
        for bucket, c in counts.items():
            for k2, v in c.items():
                totals[bucket][k2] = totals[bucket].get(k2, 0) + v
    _write_atomic(out / "_truth" / f"{date}.jsonl", truth_lines)
    n_ok = totals["success"].get("True", 0)
    return SimSummary(
        date=date, n_traces=n_traces, out_dir=str(out), parts=[r[0] for r in results],
        kinds=dict(sorted(totals["kinds"].items())), formats=dict(sorted(totals["formats"].items())),
        structural=dict(sorted(totals["structural"].items())),
        success_rate=round(n_ok / n_traces, 4) if n_traces else 0.0, seconds=round(time.perf_counter() - t0, 2),
        extra={"problems_per_day": k, "pool_size": len(world.problems), "catalogue_size": len(world.catalogue),
               "recorder_eras": dict(sorted(totals["eras"].items()))},
    )


def _normalised_shares(shares: dict[str, float], known: tuple[str, ...] | list[str], what: str) -> dict[str, float]:
    """``shares`` normalised to 1; unknown names and negative or all-zero shares refused in one line."""
    unknown = sorted(set(shares) - set(known))
    if unknown:
        raise ValueError(f"unknown {what}(s) {', '.join(unknown)}; known: {', '.join(known)}")
    if any(v < 0 for v in shares.values()) or sum(shares.values()) <= 0:
        raise ValueError(f"{what} shares must be >= 0 and not all 0")
    total = sum(shares.values())
    return {k: v / total for k, v in shares.items() if v > 0}


def validate_format_shares(shares: dict[str, float]) -> dict[str, float]:
    return _normalised_shares(shares, FORMATS, "format")


def validate_recorder_shares(shares: dict[str, float]) -> dict[str, float]:
    """Recorder-era shares normalised to 1 (unknown eras and negative or all-zero shares refused)."""
    return _normalised_shares(shares, recorder.ERAS, "recorder era")
