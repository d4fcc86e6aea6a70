"""Curation chain throughput and memory against two baselines measured in the same run (issue 5).

Chain: the pipeline's declared steps (``oro_assets.curation.pipeline.STEPS``: ingest → structural →
gates → dedup → split → ledger) run fused in memory by the one runner the assets use
(``curation.step.run_steps``; ``pipeline.curate_files``): each step gets the kept rows of the one
before in its own batches (1,000 rows; dedup 5,000 with a cross-batch ``DedupIndex``), exactly the
batches the assets cut, so the chain and the Dagster job compute the same rows. Judge: the rule judge
behind the project's SQLite ``CachedJudge``, kept beside the cached day: the first run of a day is
``cold`` (every unscored trace judged), later runs ``warm``, as the report says. The in-memory store
keeps only the columns later steps and the ledger read (``KEEP_COLUMNS``); the other tables are
conformed to their schemas, counted and dropped, so memory stays near a batch plus the day's small
tables. ``process_us_per_record`` splits the steps' own wall time (ingest's reading, parsing and
normalising happen in its ``read``: ``ingest_read``), ``process_cpu_us_per_record`` the same in the
chain thread's CPU time (the figure to read on a shared machine); ``cpu_us_per_record.rule_judge`` is
the rule judge's CPU (the calls the cache could not answer, inside ``gates``).

Baselines, over the same decompressed lines:
* ``orjson``: merely ``orjson.loads`` of every line;
* ``naive``: per-record ``json.loads`` plus a per-record datasketch MinHash of the query
  (both from ``benchmarks/ingest_throughput.py``);
* with msgspec installed (the dev extras): ``msgspec.json`` untyped, and typed into Structs of the ORO
  shapes with their bodies decoded (``msgspec_typed``) or left as ``Raw`` (``msgspec_typed_raw_bodies``,
  the bound of a decoder that never builds the bodies), beside ``orjson`` in the same run.

Records come from ``oro_assets.arena.firehose.simulate_day`` (~21 KB each), generated once per
(``--traces``, ``--seed``) and cached under ``--cache`` (default ``/tmp/chain-bench``). Every
measured run happens in a forked child, so ``peak_rss_mib`` (``ru_maxrss``) is that run's own.
Wall and CPU time are both reported; on a shared machine the CPU figure is the steadier one.
``cpu_us_per_record`` is the chain's CPU per input record (``gc``: the part the cyclic garbage
collector took, with ``gc_collections`` per generation).
``--rounds N`` repeats ``orjson``, the cold chain, the warm chain and the naive loop N times, alternating their
order, and reads the ratios and targets from the median of each round's own ratios (``paired``): on a shared
machine a run's CPU drifts by tens of percent between minutes, so a ratio of two single runs reads the drift.
``--rss-only`` skips the baselines (the 300k / 1M memory-slope runs; with ``--input gz`` the day is
never decompressed to disk). ``--by-size`` also regroups the same day's lines into record-size
buckets (``SIZE_EDGES``) and measures both baselines and the chain on each: the ratio against the
naive loop depends on record size, because its per-record MinHash is a fixed cost while parsing,
hashing and normalising grow with the bytes. Leak clustering of problems is benchmarked by
``benchmarks/clustering.py``.

    python benchmarks/curation_chain.py                      # 20,000 traces
    python benchmarks/curation_chain.py --rounds 3 --later-traces 10000   # the targets' reading: rounds' medians
    python benchmarks/curation_chain.py --traces 100000 --json /tmp/chain100k.json
    python benchmarks/curation_chain.py --traces 100000 --by-size --json /tmp/chain100k.json
    python benchmarks/curation_chain.py --traces 100000 --by-size --edges 5000,10000   # 7.4 KB class
    python benchmarks/curation_chain.py --traces 1000000 --rss-only --input gz
    python benchmarks/curation_chain.py --traces 30000 --later-share 1 --rss-only --input gz   # later-era day
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest_throughput import decode_baseline, decompress, measure_in_child, naive_baseline, orjson_baseline  # noqa: E402
from report import cpu_model, emit  # noqa: E402

DATE = "2026-03-01"


def day_root(cache: Path, n: int, seed: int, later_share: float = 0.0) -> Path:
    return cache / (f"s{seed}_n{n}" + (f"_later{later_share:g}" if later_share else ""))


def generate(cache: Path, n: int, seed: int, plain: bool = True, later_share: float = 0.0) -> tuple[list[str], list[str]]:
    """(gzip parts, plain parts) of a simulated day, generated on first use and reused after
    (``plain=False``: the gzip parts only, e.g. for a 1M-trace memory run). ``later_share``: share of
    ORO records written by ORO's later recorder (whole bodies and the requests' messages, ~3.5x larger)."""
    root = day_root(cache, n, seed, later_share)
    done = root / "_generated"
    if not done.exists():
        from oro_assets.arena.firehose import simulate_day

        t0 = time.perf_counter()
        shares = {"a6b1cf3": 1.0 - later_share, "later": later_share} if later_share else None
        simulate_day(DATE, n, root, seed=seed, workers=max(1, min(2, os.cpu_count() or 1)), recorder_shares=shares)
        print(f"simulated {n} traces in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
        done.write_text("ok\n")
    gz = sorted(str(p) for p in (root / DATE).glob("part-*.jsonl.gz"))
    plain_dir = root / "plain"
    if not plain:
        return gz, []
    if not (plain_dir / "_complete").exists():
        decompress(gz, plain_dir)
        (plain_dir / "_complete").write_text("ok\n")
    return gz, sorted(str(p) for p in plain_dir.glob("part-*.jsonl"))


#: Record-size bucket edges in bytes. The issue's baselines were measured on 7.4 KB ORO records; the
#: simulated day is bimodal (short 4-20 KB and long 32-50 KB traces, 21.6 KB mean), and the naive
#: loop's per-record MinHash is a fixed cost, so the ratio against it depends on record size.
SIZE_EDGES = (8_000, 16_000, 32_000)


def _bucket_name(edges: tuple[int, ...], i: int) -> str:
    lo = edges[i - 1] // 1000 if i else 0
    return f"le{edges[i] // 1000}KB" if i < len(edges) else f"gt{lo}KB"


def split_by_size(plain: list[str], root: Path, edges: tuple[int, ...] = SIZE_EDGES) -> dict[str, str]:
    """The day's lines regrouped by byte size into one file per bucket (same lines, same order)."""
    out = root / ("by_size" if edges == SIZE_EDGES else "by_size_" + "_".join(map(str, edges)))
    names = [_bucket_name(edges, i) for i in range(len(edges) + 1)]
    paths = {name: out / f"{name}.jsonl" for name in names}
    if not (out / "_complete").exists():
        out.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as stack:
            handles = [stack.enter_context(open(paths[name], "wb")) for name in names]
            for f in plain:
                with open(f, "rb") as fh:
                    for line in fh:
                        i = next((k for k, edge in enumerate(edges) if len(line) <= edge), len(edges))
                        handles[i].write(line)
        (out / "_complete").write_text("ok\n")
    return {name: str(path) for name, path in paths.items() if path.stat().st_size}


def _judge(work: Path):
    from oro_assets.judge.cache import CachedJudge, JudgeCache
    from oro_assets.judge.rule import RuleJudge

    work.mkdir(parents=True, exist_ok=True)
    class CountedRuleJudge(RuleJudge):  # counts the calls the cache could not answer, and their CPU time
        misses = 0
        cpu_s = 0.0

        def judge(self, trace: dict):
            self.misses += 1
            t0 = time.process_time()
            try:
                return super().judge(trace)
            finally:
                self.cpu_s += time.process_time() - t0

    return CachedJudge(CountedRuleJudge(), JudgeCache(work / "judge_cache.sqlite"))


#: what the in-memory store keeps of each table: the columns later steps and the ledger read (a
#: benchmark day must not hold every normalised dialogue); the rest is written and counted, not kept
KEEP_COLUMNS = {
    "normalized_traces": ["trace_id", "partition", "source_file", "line_no", "raw_sha256", "format"],
    "structural_labels": ["trace_id", "kept", "eval_run_id", "validator_score"],
    "split_traces": ["trace_id", "partition", "source_file", "line_no", "raw_sha256", "format", "cluster_id", "pool"],
}
DISCARD = {"subtask_traces", "gated_traces", "curated_traces"}


def profile_counter(world: Path, cache_dir: Path):
    """The token counter the job's gates use by default (the tiny profile's tokenizer over the arena
    world, built cold into ``cache_dir``), for a chain that counts tokens as production does."""
    from oro_assets.training.profiles import get_profile
    from oro_assets.training.token_count import profile_token_counter

    counter, why = profile_token_counter(get_profile("tiny"), world / "catalogue.jsonl", world / "problems.jsonl",
                                         cache_dir=cache_dir)
    if counter is None:
        raise SystemExit(f"no tiny tokenizer: {why}")
    return counter


LEDGER_COLUMNS = ["trace_id", "source_file", "line_no", "fate", "stage", "reason", "detail", "pool"]


def warm_up() -> None:
    """The imports and one-time tables a chain run uses, paid before anything is timed (measured runs are forked after
    this, or run in this process after it)."""
    from oro_assets.curation import dedup, gates, pipeline, structural  # noqa: F401
    from oro_assets.judge import rule  # noqa: F401
    from oro_assets.traces.ingest import iter_normalized  # noqa: F401
    from oro_assets.traces.schema import default_tools_json

    default_tools_json()
    # pyarrow imports pandas on the first ``Table.from_pylist`` (~0.2 s, once per process): paid here
    import pyarrow as pa

    pa.Table.from_pylist([{"a": 1}], schema=pa.schema([("a", pa.int64())]))
    # Import-time objects are long-lived: keep them out of the collector's full passes, as a
    # long-running worker would (``gc.freeze``); every measured run is forked after this alike.
    gc.freeze()


def clear_text_caches(*modules) -> None:
    """Empty every ``functools`` cache of ``modules`` (the per-text caches of the judge, the structural filter and
    dedup), as a fresh process starts: a cold pass in a process that already ran one."""
    for module in modules:
        for name in dir(module):
            if hasattr(getattr(module, name), "cache_clear"):
                getattr(module, name).cache_clear()


def ledger_bytes(ledger) -> bytes:
    """The ledger's verdict columns as JSON lines, in the ledger's order (source file names reduced to their
    base names, so days cached under different folders compare): what must stay byte-identical."""
    import orjson

    rows = ledger.select(LEDGER_COLUMNS).to_pylist()
    for r in rows:
        if r["source_file"]:
            r["source_file"] = os.path.basename(r["source_file"])
    return b"".join(orjson.dumps(r) + b"\n" for r in rows)


class _GcTime:
    """A ``gc.callbacks`` hook: the collector's CPU time and its collections per generation. Objects kept
    alive across a batch (parsed columns held for later steps) cost the chain here: they are promoted
    and make the full collections more frequent (docs/experiments.md, issue 33, session 12)."""

    def __init__(self) -> None:
        self.seconds, self.collections, self._start = 0.0, [0, 0, 0], 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            self.seconds += time.process_time() - self._start
            self.collections[info["generation"]] += 1


def chain(files: list[str], work: Path, batch: int | None = None, count_tokens=None,
          ledger_out: Path | None = None) -> dict:
    """The pipeline's steps (``oro_assets.curation.pipeline.STEPS``: ingest → structural → gates → dedup →
    split → ledger) over the day in memory, fused batch by batch, exactly as the assets run them one by
    one (same batches, same rows); a fresh leak-cluster registry, no problem pool."""
    from oro_assets.curation.clusters import Registry
    from oro_assets.curation.pipeline import STEPS, curate_files
    from oro_assets.curation.store import MemoryStore

    if batch is not None:  # rows per batch of the row-wise steps (dedup keeps its own, larger batches)
        for step in STEPS:
            if step.name in ("ingest", "structural", "gates"):
                step.batch_rows = batch
    judge = _judge(work)
    store = MemoryStore(columns=KEEP_COLUMNS, discard=DISCARD, spill_dir=work / "duckdb_spill")
    collector = _GcTime()
    gc.callbacks.append(collector)
    t0 = time.process_time()
    try:
        if callable(count_tokens) and not hasattr(count_tokens, "count"):  # a factory: build it inside the run
            count_tokens = count_tokens()
        store, reports = curate_files(files, DATE, store=store, judge=judge, registry=Registry(),
                                      count_tokens=count_tokens)
        cpu_total = time.process_time() - t0
    finally:
        gc.callbacks.remove(collector)
    judge.cache.close()
    ledger = store.table("trace_ledger", DATE)
    import hashlib

    data = ledger_bytes(ledger)
    digest = hashlib.sha256(data).hexdigest()
    if ledger_out is not None:
        ledger_out.parent.mkdir(parents=True, exist_ok=True)
        ledger_out.write_bytes(data)
    reasons = Counter(r for r in ledger.column("reason").to_pylist() if r)
    n = ledger.num_rows
    gates = reports["gates"].stats[DATE]
    # wall seconds per input record inside each step's ``process``, and in the first step's ``read``
    # (ingest's reading, parsing, normalising and Arrow batches: ``ingest_read``)
    steps = {name: round(1e6 * r.seconds / max(1, n), 1) for name, r in reports.items()}
    steps["ingest_read"] = round(1e6 * reports["ingest"].read_seconds / max(1, n), 1)
    # the same split in the chain thread's CPU (steady on a shared machine, where wall time is not)
    steps_cpu = {name: round(1e6 * r.cpu_seconds / max(1, n), 1) for name, r in reports.items()}
    steps_cpu["ingest_read"] = round(1e6 * reports["ingest"].read_cpu_seconds / max(1, n), 1)
    return {"records": n, "kept": ledger.column("fate").to_pylist().count("kept"), "judge_calls": gates["judge_calls"],
            "reasons": dict(sorted(reasons.items())), "judge_computed": judge.inner.misses,
            "cpu_us_per_record": {"total": round(1e6 * cpu_total / max(1, n), 1),
                                  "gc": round(1e6 * collector.seconds / max(1, n), 1),
                                  # the rule judge itself (the cache's misses; inside gates)
                                  "rule_judge": round(1e6 * judge.inner.cpu_s / max(1, n), 1)},
            "gc_collections": collector.collections, "process_us_per_record": steps,
            "process_cpu_us_per_record": steps_cpu,
            "ledger_sha256": digest}


def _rates(r: dict, nbytes: int) -> dict:
    r = dict(r)
    r["records_per_s_wall"] = round(r["records"] / r["wall_s"])
    r["records_per_s_cpu"] = round(r["records"] / r["cpu_s"]) if r["cpu_s"] else None
    r["mb_per_s_wall"] = round(nbytes / r["wall_s"] / 1e6, 1)
    for k in ("wall_s", "cpu_s", "peak_rss_mib"):
        r[k] = round(r[k], 2)
    return r


def msgspec_baseline(files: list[str]) -> dict:
    """``msgspec.json.decode`` of every line (untyped): the native decoder beside ``orjson.loads``."""
    import msgspec

    return decode_baseline(files, msgspec.json.Decoder().decode, msgspec.DecodeError)


def _typed_decoder(raw_bodies: bool):
    """A msgspec decoder of the ORO shapes into typed Structs (envelope, step, completion, message,
    tool call, extra_info, proxy call) holding every field the normaliser reads, each optional
    (``UNSET`` when absent, as the normaliser tells absent from null); everything else is skipped
    unread. ``raw_bodies``: tool results, proxy bodies and request payloads left as undecoded
    ``msgspec.Raw`` (the bound of a normaliser that never decodes them; ours re-encodes them and
    reads their product ids). A record of another shape fails validation: the lenient path
    (``orjson.loads``) reads it, as the normaliser's fallback would."""
    from typing import Any

    import msgspec
    from msgspec import UNSET, Raw, UnsetType, defstruct

    body = (Raw, Raw(b"null")) if raw_bodies else (Any, UNSET)

    def struct(name: str, *fields: str | tuple) -> type:  # a field: its name (Any), or (name, type, default)
        return defstruct(name, [(f, Any, UNSET) if isinstance(f, str) else f for f in fields])

    call = struct("Call", "name", "parameters", "arguments", "tool_call_id", ("result", *body))
    message = struct("Message", "think", ("tool_call", list[call] | None | UnsetType, UNSET), "tool_calls",
                     "response", "obs")
    completion = struct("Completion", ("message", message | None | UnsetType, UNSET), "content", "reasoning_content")
    proxy_call = struct("ProxyCall", "kind", "path", "timestamp", "status_code", ("json_data", *body), "params",
                        ("response", *body), "response_truncated", "response_length", "result_product_ids")
    extra_info = struct("ExtraInfo", "query", "problem_id", ("proxy_calls", list[proxy_call] | None | UnsetType, UNSET),
                        "timestamp", "execution_time")
    step = struct("Step", ("completion", completion | None | UnsetType, UNSET),
                  ("message", message | None | UnsetType, UNSET),
                  ("extra_info", extra_info | None | UnsetType, UNSET), "prompt")
    envelope = struct("Envelope", ("dialogue", list[step] | None | UnsetType, UNSET), "problem_id", "status", "error",
                      "query", "tools", "eval_run_id", "agent_version_id", "miner_hotkey", "race_id", "suite_version",
                      "category", "recorded_at", "score", "reasoning", "execution_time", "inference_failure_count",
                      "inference_total")
    return msgspec.json.Decoder(envelope | list[step]), msgspec.ValidationError


def msgspec_typed_baseline(files: list[str], raw_bodies: bool = False) -> dict:
    """Typed ``msgspec`` decoding of every line into the ORO Structs (:func:`_typed_decoder`), lines
    of another shape read by ``orjson.loads`` (counted as ``fallback``): what a native normaliser's
    decode step would cost beside ``orjson.loads``."""
    import msgspec
    import orjson

    decoder, invalid = _typed_decoder(raw_bodies)
    fallback = 0

    def decode(line: bytes):
        nonlocal fallback
        try:
            return decoder.decode(line)
        except invalid:  # another shape (ValidationError): the lenient path
            fallback += 1
            try:
                return orjson.loads(line)
            except orjson.JSONDecodeError as e:
                raise msgspec.DecodeError(str(e)) from e

    return {**decode_baseline(files, decode, msgspec.DecodeError), "fallback": fallback}


def _empty_judge_cache(work: Path) -> None:
    for name in ("judge_cache.sqlite", "judge_cache.sqlite-wal", "judge_cache.sqlite-shm"):
        (work / name).unlink(missing_ok=True)


#: per round: the run's name in ``runs`` -> its key in the round's row
_ROUND_RUNS = {"orjson_loads": "orjson", "naive_json_minhash": "naive", "chain": "chain", "chain_warm": "chain_warm"}


def paired_rounds(rounds: list[dict]) -> dict:
    """Each round's same-minutes ratios (``orjson`` and ``naive`` CPU seconds over the chain's, cold and warm) and
    their median and range over the rounds: the figure a target is read from. A run's CPU on a shared machine
    moves by tens of percent from minute to minute (one loop of ``orjson.loads`` read 65-106 us a line in three
    consecutive passes), so a ratio of two single runs minutes apart reads that drift."""
    rows = []
    for r in rounds:
        row = dict(r)
        row["chain_vs_orjson_cpu"] = round(r["orjson"] / r["chain"], 3)
        row["chain_vs_naive_cpu"] = round(r["naive"] / r["chain"], 2)
        if "chain_warm" in r:
            row["chain_warm_vs_orjson_cpu"] = round(r["orjson"] / r["chain_warm"], 3)
            row["chain_warm_vs_naive_cpu"] = round(r["naive"] / r["chain_warm"], 2)
        rows.append(row)
    keys = [k for k in rows[0] if k.startswith("chain_") and k.endswith("_cpu")]
    return {"rounds": rows,
            "median": {k: statistics.median(row[k] for row in rows) for k in keys},
            "range": {k: [min(row[k] for row in rows), max(row[k] for row in rows)] for k in keys}}


def measure(plain: list[str], chain_files: list[str], work: Path, batch: int | None,
            baselines: bool, cold: bool = True, warm: bool = True, ledger_out: Path | None = None,
            rounds: int = 1) -> dict:
    """The baselines (unless ``baselines`` is false) and the chain over the same lines, with ratios:
    ``chain`` on a cold judge cache (the day's cache removed first, unless ``cold`` is false) and
    ``chain_warm`` right after on the cache the first run filled (unless ``warm`` is false).
    ``rounds`` > 1 (with the baselines and a cold chain): that many rounds of ``orjson``, the cold chain, the warm
    chain and the naive loop, alternating their order (the first round is the runs above, the second reversed, ...);
    ``ratios`` are then the medians of the rounds' own ratios (``paired``), and every cold chain's ledger must
    be the first's."""
    nbytes = sum(os.path.getsize(p) for p in plain or chain_files)
    runs: dict[str, dict] = {}
    if baselines:
        runs["orjson_loads"] = measure_in_child(lambda: orjson_baseline(plain))
        runs["naive_json_minhash"] = measure_in_child(lambda: naive_baseline(plain))
        with contextlib.suppress(ImportError):
            import msgspec  # noqa: F401

            runs["msgspec_decode"] = measure_in_child(lambda: msgspec_baseline(plain))
            runs["msgspec_typed"] = measure_in_child(lambda: msgspec_typed_baseline(plain))
            runs["msgspec_typed_raw_bodies"] = measure_in_child(lambda: msgspec_typed_baseline(plain, True))
    if cold:
        _empty_judge_cache(work)
    runs["chain"] = measure_in_child(lambda: chain(chain_files, work, batch, ledger_out=ledger_out))
    if warm:
        runs["chain_warm"] = measure_in_child(lambda: chain(chain_files, work, batch))
    paired = None
    if baselines and cold and rounds > 1:
        measures = {"orjson_loads": lambda: orjson_baseline(plain), "naive_json_minhash": lambda: naive_baseline(plain),
                    "chain": lambda: chain(chain_files, work, batch), "chain_warm": lambda: chain(chain_files, work, batch)}
        order = [k for k in _ROUND_RUNS if k in runs]
        cpu_rounds = [{_ROUND_RUNS[k]: runs[k]["cpu_s"] for k in order}]
        for i in range(1, rounds):
            row = {}
            for k in (order[::-1] if i % 2 else order):
                if k == "chain":
                    _empty_judge_cache(work)
                r = measure_in_child(measures[k])
                if k == "chain" and r["ledger_sha256"] != runs["chain"]["ledger_sha256"]:
                    raise SystemExit(f"round {i + 1}: the cold chain's ledger differs from the first round's")
                row[_ROUND_RUNS[k]] = r["cpu_s"]
                print(f"round {i + 1}: {k} cpu {r['cpu_s']:.2f} s", file=sys.stderr)
            cpu_rounds.append(row)
        paired = paired_rounds([{k: round(v, 3) for k, v in r.items()} for r in cpu_rounds])
    n = runs["chain"]["records"]
    computed = runs["chain"].get("judge_computed", 0)
    # warm: every judge call answered from the cache (a judge version change empties it in effect)
    judge_cache = "warm" if computed == 0 else f"cold: {computed} of {runs['chain']['judge_calls']} calls judged"
    report: dict = {"judge_cache": judge_cache, "records": n, "bytes": nbytes,
                    "bytes_per_record": round(nbytes / max(1, n)),
                    "runs": {k: _rates(v, nbytes) for k, v in runs.items()}}
    if baselines:
        c, o, nv = (report["runs"][k] for k in ("chain", "orjson_loads", "naive_json_minhash"))
        report["ratios"] = {
            "chain_vs_orjson_wall": round(c["records_per_s_wall"] / o["records_per_s_wall"], 3),
            "chain_vs_orjson_cpu": round(c["records_per_s_cpu"] / o["records_per_s_cpu"], 3),
            "chain_vs_naive_wall": round(c["records_per_s_wall"] / nv["records_per_s_wall"], 2),
            "chain_vs_naive_cpu": round(c["records_per_s_cpu"] / nv["records_per_s_cpu"], 2),
        }
        if "chain_warm" in report["runs"]:
            w = report["runs"]["chain_warm"]
            report["ratios"]["chain_warm_vs_orjson_cpu"] = round(w["records_per_s_cpu"] / o["records_per_s_cpu"], 3)
            report["ratios"]["chain_warm_vs_naive_cpu"] = round(w["records_per_s_cpu"] / nv["records_per_s_cpu"], 2)
        if paired is not None:  # the rounds' CPU medians (the first round's own ratios are in ``paired.rounds``)
            report["paired"] = paired
            report["ratios"] = {k: v for k, v in report["ratios"].items() if not k.endswith("_wall")}
            report["ratios"].update(paired["median"])
        if "msgspec_decode" in report["runs"]:
            m = report["runs"]["msgspec_decode"]
            report["ratios"]["msgspec_vs_orjson_cpu"] = round(m["records_per_s_cpu"] / o["records_per_s_cpu"], 3)
            for k in ("msgspec_typed", "msgspec_typed_raw_bodies"):
                r = report["runs"][k]
                report["ratios"][f"{k}_vs_orjson_cpu"] = round(r["records_per_s_cpu"] / o["records_per_s_cpu"], 3)
        # per core: the chain's CPU throughput (all its processes) against the one-core baselines
        report["targets"] = {
            "vs_orjson_ge_0.25": report["ratios"]["chain_vs_orjson_cpu"] >= 0.25,
            "vs_naive_ge_2": report["ratios"]["chain_vs_naive_cpu"] >= 2,
        }
        if "chain_warm_vs_orjson_cpu" in report["ratios"]:
            report["targets"]["warm_vs_orjson_ge_0.5"] = report["ratios"]["chain_warm_vs_orjson_cpu"] >= 0.5
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=20000, help="simulated traces (default 20000)")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--batch", type=int, default=None,
                    help="rows per batch of ingest, structural and gates (default: the steps' own, 1000)")
    ap.add_argument("--cache", default="/tmp/chain-bench", help="where generated days are kept")
    ap.add_argument("--input", choices=("plain", "gz"), default="plain",
                    help="chain input: decompressed .jsonl (default; same bytes as the baselines) or .jsonl.gz")
    ap.add_argument("--rss-only", action="store_true", help="run only the chain (memory-slope runs)")
    ap.add_argument("--by-size", action="store_true",
                    help="also measure baselines and chain per record-size bucket of the same day")
    ap.add_argument("--edges", default=",".join(map(str, SIZE_EDGES)),
                    help="--by-size bucket edges in bytes (default %(default)s; 5000,10000 isolates the "
                         "issue's 7.4 KB record class as le10KB)")
    ap.add_argument("--later-share", type=float, default=0.0,
                    help="share of ORO records from ORO's later recorder (whole bodies; default 0: a6b1cf3 only)")
    ap.add_argument("--later-traces", type=int, default=0,
                    help="also measure a later-era day (every ORO record from the later recorder) of this many "
                         "traces in the same run, beside the first day (default 0: none)")
    ap.add_argument("--no-warm", action="store_true", help="skip the warm-cache run")
    ap.add_argument("--rounds", type=int, default=1,
                    help="rounds of orjson, cold chain, warm chain and naive loop, alternating order; the ratios "
                         "and targets are then the medians of the rounds' own (default 1)")
    ap.add_argument("--ledger-dir", help="write each day's ledger (fate, stage, reason, detail, pool) here")
    ap.add_argument("--ledger-check", help="compare each day's ledger byte for byte with the one saved here "
                                           "(by --ledger-dir); exit 1 when one differs")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)

    cache = Path(args.cache)
    t0 = time.perf_counter()
    need_plain = args.input == "plain" or not args.rss_only or args.by_size
    gz, plain = generate(cache, args.traces, args.seed, plain=need_plain, later_share=args.later_share)
    warm_up()
    later = (generate(cache, args.later_traces, args.seed, later_share=1.0)[1]
             if args.later_traces else [])
    root = day_root(cache, args.traces, args.seed, args.later_share)
    edges = tuple(sorted(int(e) for e in args.edges.split(",") if e.strip()))
    buckets = split_by_size(plain, root, edges) if args.by_size else {}
    print(f"data: {len(gz)} parts ready in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    work = root / "work"
    chain_files = plain if args.input == "plain" else gz
    ledger_dir = Path(args.ledger_dir) if args.ledger_dir else None

    def ledger_path(r: Path) -> Path | None:
        return ledger_dir / f"{r.name}.ledger.jsonl" if ledger_dir else None

    day = measure(plain, chain_files, work, args.batch, baselines=not args.rss_only, warm=not args.no_warm,
                  ledger_out=ledger_path(root), rounds=args.rounds)
    report: dict = {"traces": args.traces, "seed": args.seed, "later_share": args.later_share, "batch": args.batch,
                    "input": args.input,
                    "cpus": os.cpu_count(), "cpu_model": cpu_model(), "loadavg_1m": round(os.getloadavg()[0], 2),
                    **day}
    days = {root.name: day}
    if later:
        later_root = day_root(cache, args.later_traces, args.seed, 1.0)
        report["later_era"] = days[later_root.name] = measure(
            later, later, later_root / "work", args.batch, baselines=not args.rss_only, warm=not args.no_warm,
            ledger_out=ledger_path(later_root), rounds=args.rounds)
        report["later_era"]["traces"] = args.later_traces
    failed = False
    if args.ledger_check:
        import hashlib

        report["ledger_identical"] = {}
        for name, d in days.items():
            saved = Path(args.ledger_check) / f"{name}.ledger.jsonl"
            same = saved.exists() and hashlib.sha256(saved.read_bytes()).hexdigest() == d["runs"]["chain"]["ledger_sha256"]
            report["ledger_identical"][name] = same
            failed = failed or not same
    if buckets:
        # same lines regrouped by size; the judge cache is the day's (warm after the run above)
        report["by_size"] = {name: measure([path], [path], work, args.batch, baselines=True)
                             for name, path in buckets.items()}
    emit(report, args.json)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
