"""One curation step (in the style of datatrove's ``PipelineStep``) and the one runner of a sequence.

A step declares its name, the stage its rejections are filed under, the asset it reads, the tables it
writes (:class:`Output`, each with its Arrow schema) and ``process(rows) -> StepResult(kept,
rejected, outputs, stats)``. :class:`Step` does the rest once for every step: it cuts the input into
batches of exactly ``batch_rows`` rows, counts what each batch saw, kept and rejected (and refuses a
batch where a row was neither kept nor rejected), times it, writes the kept rows, the further outputs
and the rejections (``rejections_<stage>``) through the store, and merges the per-batch stats of a
partition. A step also declares where a run over the warehouse gets its parameters: the resources it
reads (``resources``, by name), its run config (``Config``, a dataclass) and ``run_params``, from which
the wiring generates the asset's resources and config. The step objects are declarations, shared by
every run: what a run needs to remember (a judge and its counts, a registry and its lock) is the value
``open_run`` returns, kept by the runner for that run only (``ctx.run``), and what a run found is
written into its :class:`StepReport`. :func:`run_steps` drives a sequence over a store: the first step
reads its input from the store, every later step is fed the kept rows of the one before it, batch by
batch; nothing is published before the whole run succeeded. The assets run one step each over the
warehouse; tests and benchmarks run several over a :class:`~oro_assets.curation.store.MemoryStore`.
Both go through this code, with the same batches, so they give the same rows.
"""

from __future__ import annotations

import gc
import logging
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import pyarrow as pa

from oro_assets.curation.schemas import REJECTIONS_SCHEMA
from oro_assets.curation.store import Store
from oro_assets.reasons import Stage
from oro_assets.storage import conform, table_rows


class Markdown(str):
    """A metadata value to show as Markdown."""


class MarkdownTable(list):
    """A metadata value (a list of row dicts) to show as a Markdown table."""


@dataclass(frozen=True)
class Output:
    """A table a step writes: the asset, its declared schema, and how the asset describes itself."""

    asset: str
    schema: pa.Schema
    description: str
    preview: tuple[str, ...] = ()


@dataclass(frozen=True)
class CheckSpec:
    """A check a step runs on one of its outputs after every run (``blocking``: stops downstream)."""

    name: str
    asset: str
    description: str
    blocking: bool = False


@dataclass
class CheckOutcome:
    name: str
    asset: str
    passed: bool
    metadata: dict[str, Any] = field(default_factory=dict)
    warn: bool = False  # a failure is a warning, not an error


@dataclass
class StepResult:
    """What ``process`` made of one batch: kept rows (for the next step and the ``kept`` output),
    ledger-shaped rejections, rows of further outputs by asset, and this batch's stats."""

    kept: list[dict]
    rejected: list[dict]
    outputs: dict[str, list[dict]] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunParams:
    """Everything a run of the steps may need; a step reads only its own fields (None: its default)."""

    judge: Any = None
    judge_concurrency: int = 1
    threshold: float | None = None
    token_budget: int | None = None
    count_tokens: Any = None
    token_counter_name: str | None = None
    max_judge_failure_ratio: float | None = None  # None: never refuse
    min_agentic_richness: float | None = None  # None: the richness gate is off
    near_threshold: float | None = None
    registry: Any = None  # a curation.clusters.Registry; None: load (and save) the one under state_dir
    state_dir: Path | None = None
    pool_problems: list[dict] | tuple = ()
    files: dict[str, list[str]] = field(default_factory=dict)  # firehose part files per partition
    ingest_workers: int = 1
    temp_dir: Path | None = None  # where DuckDB spills


def merge_params(parts: Iterable[RunParams]) -> RunParams:
    """One run's parameters from each of its steps' (each step sets its own fields): a field keeps its default unless
    a step set it; two steps setting one field to different values is a ValueError."""
    merged, default = RunParams(), RunParams()
    for part in parts:
        for f in fields(RunParams):
            value = getattr(part, f.name)
            if value == getattr(default, f.name):
                continue
            if getattr(merged, f.name) not in (value, getattr(default, f.name)):
                raise ValueError(f"the steps of one run set RunParams.{f.name} to different values")
            setattr(merged, f.name, value)
    return merged


@dataclass
class StepReport:
    """One step's run: merged stats per partition, run-wide facts, seconds spent in ``process`` and,
    for the first step of a run, in ``read`` (its input read batch by batch, e.g. ingest's parsing and
    normalising): wall seconds, and the running thread's CPU seconds (``cpu_``: what the step cost on
    a shared machine, where wall time also counts the others' work)."""

    step: str
    partitions: list[str]
    stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    run: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    read_seconds: float = 0.0
    cpu_seconds: float = 0.0
    read_cpu_seconds: float = 0.0


class RunRefused(RuntimeError):
    """A step refused its run before anything was published (``metadata``: what it measured)."""

    def __init__(self, message: str, metadata: dict[str, Any] | None = None):
        super().__init__(message)
        self.metadata = metadata or {}


class PartitionContext:
    """What a step's hooks get for one partition of a run: the store, the partition, the run's
    params, the step's own state for this run (``run``: what its ``open_run`` returned), whether
    later steps are fed by this one, and writers that publish with the run."""

    def __init__(self, store: Store, partition: str, params: RunParams, stack: ExitStack,
                 write: set[str] | None, fused: bool, run: Any = None):
        self.store, self.partition, self.params, self.run = store, partition, params, run
        self.fused = fused  # the next step of this run is fed this step's kept rows (and reads them)
        self._stack, self._write = stack, write
        self.opened: list[Any] = []  # the writers opened for this partition (sealed when the step is done with it)

    def selected(self, asset: str) -> bool:
        return self._write is None or asset in self._write

    def writer(self, asset: str, schema: pa.Schema, undeclared: str = "error", selected: bool | None = None):
        """A writer of ``asset``'s partition published when the run succeeds (discards when not selected)."""
        if not (self.selected(asset) if selected is None else selected):
            return _Discard()
        writer = self._stack.enter_context(self.store.writer(asset, self.partition, schema, undeclared))
        self.opened.append(writer)
        return writer


def merge_counts(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Batch stats combined: integers summed, dicts merged key by key, lists concatenated, any other
    value (a threshold, a name) taken from the first batch."""
    out: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if key not in out:
                out[key] = merge_counts([value]) if isinstance(value, dict) else (
                    list(value) if isinstance(value, list) else value)
            elif isinstance(value, bool) or not isinstance(value, int | dict | list):
                continue
            elif isinstance(value, dict):
                out[key] = merge_counts([out[key], value])
            else:
                out[key] = out[key] + value
    return out


def totals(report: StepReport) -> tuple[int, dict[str, int]]:
    """(kept, rejected by reason) over the partitions of a step's run."""
    kept, rejected = 0, {}
    for stats in report.stats.values():
        kept += stats.get("kept", 0)
        for k, v in stats.get("rejected", {}).items():
            rejected[k] = rejected.get(k, 0) + v
    return kept, dict(sorted(rejected.items()))


class _Discard:
    rows = 0

    def write(self, rows: list[dict] | pa.Table) -> None:
        self.rows += len(rows) if isinstance(rows, list) else rows.num_rows


#: Rows per batch a step reads its input table in, whatever its ``batch_rows``. Decoding whole dialogues
#: from Parquet 5,000 rows at a time (the dedup step's batches) held ~190 MiB more at its peak than
#: 1,000 at a time re-cut into the same 5,000-row batches (a later-era 100k day: the job peaked at
#: ~1 GiB in ``curated_traces``; docs/experiments.md, issue 33, session 19).
READ_ROWS = 1000


class Step:
    """Base of every curation step. Subclasses set the class attributes and ``process``; the hooks
    (``open_run``, ``begin``, ``read``, ``finish``, ``before_publish``, ``close_run``, ``release``)
    are optional. A step object holds no run state: one object serves any number of runs, at once."""

    name: str = ""
    stage: Stage | None = None  # rejections are filed under it (``rejections_<stage>``)
    input: str = ""  # the asset read when the step starts a run
    kept: Output | None = None  # where kept rows are written (None: only passed on)
    outputs: tuple[Output, ...] = ()  # further tables, from StepResult.outputs
    own: tuple[Output, ...] = ()  # tables the step writes itself, in its hooks
    deps: tuple[str, ...] = ()  # other assets the step reads
    checks: tuple[CheckSpec, ...] = ()
    kinds: tuple[str, ...] = ("python", "parquet")
    batch_rows: int = 1000
    chained: bool = False  # each table it writes is made from the ones before it (drawn as lineage)
    completes_partition: bool = False  # a partition is complete once this step wrote it
    # whether ``process`` reads the rows it is fed: a step that does not (the ledger, one query over the
    # day's tables) spares the step before it converting its kept table back into rows
    reads_rows: bool = True
    # where a run's parameters come from (the wiring generates the asset's resources and run config from these)
    resources: tuple[str, ...] = ()  # named sources :meth:`run_params` reads, besides the warehouse
    Config: type | None = None  # a dataclass of per-run settings (``field(metadata={"help": ...})``)

    # ---- declarations
    @property
    def rejections(self) -> str | None:
        return f"rejections_{self.stage}" if self.stage is not None else None

    @property
    def tables(self) -> tuple[Output, ...]:
        """The tables the runner writes from ``process``'s results (besides the rejections)."""
        return ((self.kept,) if self.kept is not None else ()) + self.outputs

    @property
    def assets(self) -> tuple[Output, ...]:
        """Every table the step writes (the wiring makes one asset of each), the one it is known by first."""
        return self.own + self.tables

    @property
    def primary(self) -> str:
        return self.assets[0].asset

    # ---- hooks
    def run_params(self, sources: Mapping[str, Any], config: Any, partitions: list[str],
                   log: logging.Logger) -> RunParams:
        """The parameters of a run over the warehouse: ``sources`` holds ``warehouse`` and each of
        :attr:`resources` by name, ``config`` is a :attr:`Config` (None without one)."""
        return RunParams()

    def open_run(self, store: Store, params: RunParams) -> Any:
        """Once per run, before the first partition: this run's state (``ctx.run``; given back to
        ``before_publish``, ``close_run`` and ``release``), e.g. a loaded registry or a counting judge."""
        return None

    def begin(self, ctx: PartitionContext) -> Any:
        """Per partition, before its first batch: returns the state ``process`` gets."""
        return None

    def read(self, ctx: PartitionContext, state: Any) -> Iterable[list[dict]]:
        """The input rows when the step starts a run (any batch sizes: the runner re-cuts them into
        ``batch_rows``), read in batches of at most :data:`READ_ROWS`."""
        for batch in ctx.store.batches(self.input, ctx.partition, min(self.batch_rows, READ_ROWS)):
            yield batch.to_pylist()

    def process(self, rows: list[dict], state: Any) -> StepResult:
        raise NotImplementedError

    def finish(self, ctx: PartitionContext, state: Any, stats: dict[str, Any]) -> dict[str, Any]:
        """Per partition, after its last batch: the partition's stats (``stats``: the merged batches)."""
        return stats

    def merge(self, parts: list[dict[str, Any]]) -> dict[str, Any]:
        return merge_counts(parts)

    def before_publish(self, run: Any, report: StepReport, params: RunParams) -> None:
        """Raise (:class:`RunRefused`) to refuse the run: nothing it wrote is published. Run-wide
        facts that ``outcomes`` and ``metadata`` read go into ``report.run``."""

    def close_run(self, run: Any, store: Store, params: RunParams, report: StepReport) -> None:
        """Once per run, after everything was published (save shared state)."""

    def release(self, run: Any) -> None:
        """After every run whose ``open_run`` returned, successful or not (release what it took)."""

    def outcomes(self, store: Store, report: StepReport) -> list[CheckOutcome]:
        """The results of ``checks`` for a finished run (from the report alone)."""
        return []

    def metadata(self, store: Store, report: StepReport, asset: str) -> dict[str, Any]:
        """What an output's materialisation reports (from the report alone; :class:`Markdown` for Markdown)."""
        return {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


class _Running:
    """One step inside a run: its run state, and its writers, state, buffer and counts for the
    current partition."""

    def __init__(self, step: Step, report: StepReport):
        self.step, self.report = step, report
        self.opened, self.run = False, None
        self.buffer: list[dict] = []
        self.writers: dict[str, Any] = {}
        self.state: Any = None
        self.parts: list[dict[str, Any]] = []
        self.ctx: PartitionContext | None = None

    def process(self, rows: list[dict]) -> list[dict]:
        step = self.step
        t0, c0 = time.perf_counter(), time.thread_time()
        result = step.process(rows, self.state)
        self.report.seconds += time.perf_counter() - t0
        self.report.cpu_seconds += time.thread_time() - c0
        if len(result.kept) + len(result.rejected) != len(rows):
            raise RuntimeError(f"step {step.name}: {len(rows)} rows in, {len(result.kept)} kept and "
                               f"{len(result.rejected)} rejected: every row must be kept or rejected")
        rejected = Counter(str(r["reason"]) for r in result.rejected)
        self.parts.append({**result.stats, "seen": len(rows), "kept": len(result.kept),
                           "rejected": dict(sorted(rejected.items()))})
        kept = result.kept
        if step.kept is not None:
            table = conform(kept, step.kept.schema)
            self.writers[step.kept.asset].write(table)
            # the next step gets what a reader of the written table gets (nothing to convert for a last step; rows that
            # already are what it reads back are copied, not decoded again: storage.table_rows)
            kept = table_rows(kept, table) if self.ctx is not None and self.ctx.fused else []
        for out in step.outputs:
            self.writers[out.asset].write(result.outputs.get(out.asset, []))
        if step.rejections is not None:
            self.writers[step.rejections].write(result.rejected)
        return kept


def run_steps(steps: list[Step], store: Store, partitions: list[str], params: RunParams | None = None,
              write: set[str] | None = None) -> dict[str, StepReport]:
    """Run ``steps`` in order over ``partitions``: the first reads its input from ``store``, each later
    one is fed the kept rows of the one before, in batches of its own ``batch_rows``. ``write``: the
    tables to write (None: all; the rest are computed and discarded; a step's rejections go with its
    first table). Everything is published when the last partition succeeded (an exception, or a
    step's ``before_publish`` refusing, publishes nothing); then each step's ``close_run`` runs."""
    params = params or RunParams()
    running = [_Running(s, StepReport(s.name, list(partitions))) for s in steps]
    try:
        with paced_collector():
            return _run(running, store, partitions, params, write)
    finally:
        for r in running:
            if r.opened:
                r.step.release(r.run)


#: Container allocations between young-generation collections while steps run (CPython's default:
#: 700). A batch allocates millions of short-lived objects (parsed records and JSON columns, row
#: dicts) that reference counting frees; every 700 the collector walked the live ones (the batch
#: being built) and found nothing to collect (benchmarks/curation_chain.py's ``gc``: 20-40 us per
#: record). Cyclic garbage waits at most this many allocations longer.
YOUNG_COLLECTION_EVERY = 50_000


@contextmanager
def paced_collector(young: int = YOUNG_COLLECTION_EVERY) -> Iterator[None]:
    """The collector's young-generation threshold raised to ``young`` for the block (never lowered,
    and left alone while collection is off: threshold 0); the previous thresholds restored after."""
    before = gc.get_threshold()
    if 0 < before[0] < young:
        gc.set_threshold(young, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _run(running: list[_Running], store: Store, partitions: list[str], params: RunParams,
         write: set[str] | None) -> dict[str, StepReport]:
    for r in running:
        r.run, r.opened = r.step.open_run(store, params), True
    with ExitStack() as stack:
        for partition in partitions:
            for i, r in enumerate(running):
                fused = i + 1 < len(running) and running[i + 1].step.reads_rows
                r.ctx = ctx = PartitionContext(store, partition, params, stack, write, fused=fused, run=r.run)
                r.writers, r.parts, r.buffer = {}, [], []
                for out in r.step.tables:
                    r.writers[out.asset] = ctx.writer(out.asset, out.schema)
                if r.step.rejections is not None:
                    r.writers[r.step.rejections] = ctx.writer(r.step.rejections, REJECTIONS_SCHEMA, "drop",
                                                              selected=ctx.selected(r.step.primary))
                r.state = r.step.begin(ctx)
            _drive(running, partition)
        for r in running:
            r.step.before_publish(r.run, r.report, params)
    for r in running:
        r.step.close_run(r.run, store, params, r.report)
    return {r.step.name: r.report for r in running}


def _drive(running: list[_Running], partition: str) -> None:
    def push(i: int, rows: list[dict]) -> None:
        if i == len(running) or not rows:
            return
        r = running[i]
        r.buffer.extend(rows)
        size = r.step.batch_rows
        while len(r.buffer) >= size:
            batch, r.buffer = r.buffer[:size], r.buffer[size:]
            push(i + 1, r.process(batch))

    first = running[0]
    batches = _batches(first.step.read(first.ctx, first.state))
    while True:
        t0, c0 = time.perf_counter(), time.thread_time()
        rows = next(batches, None)
        first.report.read_seconds += time.perf_counter() - t0
        first.report.read_cpu_seconds += time.thread_time() - c0
        if rows is None:
            break
        push(0, rows)
    for i, r in enumerate(running):
        if r.buffer:
            batch, r.buffer = r.buffer, []
            push(i + 1, r.process(batch))
        stats = r.step.merge(r.parts) if r.parts else {"seen": 0, "kept": 0, "rejected": {}}
        r.report.stats[partition] = r.step.finish(r.ctx, r.state, stats)
        for writer in r.ctx.opened:  # done with the partition: the later steps of the run may read its tables
            writer.seal()


def _batches(rows: Iterable[list[dict]]) -> Iterator[list[dict]]:
    for batch in rows:
        if batch:
            yield batch
