"""One place that reads the environment. Every part of oro-assets takes its configuration from here.

Bad values fail at start with :class:`SettingsError`, whose message is one line naming the
variable and the accepted values.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path

from oro_assets.layout import DataLayout

MODEL_PROFILES = ("tiny", "qwen3-4b")
#: The paper's model: where the qwen3-4b profile's weights come from unless ORO_QWEN3_4B_PATH says otherwise.
QWEN3_4B_DEFAULT = "Qwen/Qwen3-4B"
JUDGE_KINDS = ("rule", "llm")

# name -> (default shown in docs, description). The README's configuration table is generated
# from / checked against this mapping by a test, so documentation cannot drift.
ENV_VARS: dict[str, tuple[str, str]] = {
    "ORO_DATA_DIR": ("./data", "Data root: warehouse Parquet, DuckDB views, MLflow store, checkpoints, reports, Dagster home."),
    "ORO_FIREHOSE_DIR": ("unset (embedded simulator)", "Real firehose root: raw traces are read from `<dir>/<YYYY-MM-DD>/*.jsonl[.gz]` (any fsspec URL, e.g. `s3://bucket/firehose`)."),
    "ORO_PROBLEMS": ("`problems.jsonl` beside the firehose days, else the embedded pool", "Problem files (ORO suite JSON, ShoppingBench JSONL, simulator `problems.jsonl`) or a folder of them; comma-separated."),
    "ORO_PARTITIONS_START": ("2026-01-01", "First daily partition (YYYY-MM-DD)."),
    "ORO_MODEL_PROFILE": ("tiny", "Model profile: `tiny` (CPU, locally built Qwen3-architecture model) or `qwen3-4b`."),
    "ORO_QWEN3_4B_PATH": (QWEN3_4B_DEFAULT, "Local path or hub id of the Qwen3-4B weights (qwen3-4b profile only)."),
    "ORO_SIM_TRACES_PER_DAY": ("10000", "Traces the embedded simulator writes for one day."),
    "ORO_SIM_LATER_RECORDER_SHARE": ("0", "Share (0..1) of the embedded simulator's ORO records written by ORO's later recorder (whole bodies and the requests' messages) instead of a6b1cf3's: both eras on one day."),
    "ORO_SIM_SEED": ("15", "Seed of the embedded simulator (problem pool, catalogue, population)."),
    "ORO_JUDGE": ("rule", "Reasoning judge: `rule` (offline, deterministic) or `llm` (OpenAI-compatible endpoint)."),
    "ORO_JUDGE_BASE_URL": ("unset", "Base URL of an OpenAI-compatible endpoint for the LLM judge (and teacher), e.g. `http://127.0.0.1:8000/v1`."),
    "ORO_JUDGE_MODEL": ("unset", "Judge model name; comma-separated list = primary then fallbacks."),
    "ORO_JUDGE_CONCURRENCY": ("8", "Requests the LLM judge keeps in flight at once while gating (verdicts do not depend on it; the rule judge runs one at a time)."),
    "OPENAI_API_KEY": ("unset", "API key for the judge / teacher endpoint. Read from the environment only; never logged."),
    "ORO_TEACHER_BASE_URL": ("unset", "OpenAI-compatible endpoint of the teacher model for teacher-SFT; unset = the arena's strongest scripted agent."),
    "ORO_TEACHER_MODEL": ("unset", "Teacher model name on that endpoint."),
    "MLFLOW_TRACKING_URI": ("sqlite:///<data>/mlflow/mlflow.db", "MLflow tracking store; artifacts go under `<data>/mlflow/artifacts`."),
    "ORO_SCHEDULE_HOUR": ("2", "UTC hour at which the daily schedule materialises yesterday's partition (0-23)."),
    "ORO_RETRAIN_MIN_NEW_ROWS": ("0 (off)", "Retrain automatically once this many new curated SFT rows arrived since the last checkpoint; 0 disables."),
    "ORO_MIN_AGENTIC_RICHNESS": ("unset (off)", "Gate: reject a structurally kept trace whose ORO `agentic_richness` (share of catalogue dispatches the latest inference answer named next) is below this value in 0..1, reason `low_agentic_richness`; traces where it is not computable pass."),
    "ORO_INGEST_WORKERS": ("1", "Processes that read and normalise a day's part files in parallel (same output as one)."),
    "ORO_ARROW_MEMORY_POOL": ("system (unless `ARROW_DEFAULT_MEMORY_POOL` is set)", "Arrow's allocator in oro-assets processes: `system` (malloc), `jemalloc` or `mimalloc` (pyarrow's own default here, whose 2 MB pages the kernel zeroes at each first touch: on malloc the a6b1cf3-era curation chain took 4% less CPU and 15% less memory, the Dagster `curation_job` ~50-120 MiB more; `benchmarks/arrow_pool.py`, `job_vs_chain.py`). Read once, when `oro_assets.storage` is imported."),
    "ORO_NATIVE": ("1 (on)", "Native (C) kernels of the curation chain where the install built them (`oro_assets/native.py`); `0` runs their Python references instead (same verdicts)."),
}


class SettingsError(ValueError):
    """A configuration value is invalid. The message is one line for the user."""


def _env(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def _int(name: str, default: int, lo: int, hi: int) -> int:
    raw = _env(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not an integer; accepted: {lo}..{hi}") from None
    if not lo <= value <= hi:
        raise SettingsError(f"{name}={value} is out of range; accepted: {lo}..{hi}")
    return value


def _fraction(name: str) -> float | None:
    raw = _env(name)
    if raw is None or raw.lower() == "off":
        return None
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not a number; accepted: 0..1 or off") from None
    if not 0.0 <= value <= 1.0:
        raise SettingsError(f"{name}={value} is out of range; accepted: 0..1 or off")
    return value


def _choice(name: str, default: str, accepted: tuple[str, ...]) -> str:
    raw = _env(name) or default
    if raw not in accepted:
        raise SettingsError(f"{name}={raw!r} is not a known value; accepted: {', '.join(accepted)}")
    return raw


def _is_remote(url: str) -> bool:
    return "://" in url and not url.startswith("file://")


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    firehose_dir: str | None
    problems: tuple[str, ...]
    partitions_start: str
    model_profile: str
    qwen3_4b_path: str
    sim_traces_per_day: int
    sim_seed: int
    judge: str
    judge_base_url: str | None
    judge_models: tuple[str, ...]
    teacher_base_url: str | None
    teacher_model: str | None
    mlflow_tracking_uri: str
    schedule_hour: int
    retrain_min_new_rows: int
    ingest_workers: int = 1
    native: bool = True
    arrow_memory_pool: str | None = "system"
    judge_concurrency: int = 8
    min_agentic_richness: float | None = None
    sim_later_recorder_share: float = 0.0
    extra: dict[str, str] = field(default_factory=dict)

    # ---- derived locations (oro_assets.layout names every path under the data dir) ----
    @property
    def layout(self) -> DataLayout:
        return DataLayout(self.data_dir)

    @property
    def warehouse_dir(self) -> Path:
        return self.layout.warehouse

    @property
    def duckdb_path(self) -> Path:
        return self.layout.duckdb

    @property
    def embedded_firehose_dir(self) -> Path:
        return self.layout.firehose

    @property
    def mlflow_dir(self) -> Path:
        return self.layout.mlflow

    @property
    def checkpoints_dir(self) -> Path:
        return self.layout.checkpoints

    @property
    def reports_dir(self) -> Path:
        return self.layout.reports

    @property
    def dagster_home(self) -> Path:
        return self.layout.dagster_home

    @property
    def state_dir(self) -> Path:
        """Persistent non-partitioned state: judge cache, leak-cluster registry."""
        return self.layout.state

    @property
    def uses_embedded_firehose(self) -> bool:
        return self.firehose_dir is None

    @property
    def firehose_root(self) -> str:
        return self.firehose_dir if self.firehose_dir is not None else str(self.embedded_firehose_dir)


def partitions_start() -> str:
    """ORO_PARTITIONS_START, validated: the first daily partition is part of the asset graph's definition,
    so it is read (alone) when the code location loads; everything a run uses comes from resources."""
    start = _env("ORO_PARTITIONS_START") or "2026-01-01"
    try:
        dt.date.fromisoformat(start)
    except ValueError:
        raise SettingsError(f"ORO_PARTITIONS_START={start!r} is not a date; accepted: YYYY-MM-DD") from None
    return start


def schedule_hour() -> int:
    """ORO_SCHEDULE_HOUR, validated: the daily schedule's cron is part of its definition (read at load)."""
    return _int("ORO_SCHEDULE_HOUR", 2, 0, 23)


def native_kernels() -> bool:
    """ORO_NATIVE, validated: whether the native kernels may run (read once, when ``oro_assets.native`` is
    imported; the kernels equal their Python references, so it changes speed only)."""
    raw = (_env("ORO_NATIVE") or "1").lower()
    if raw not in _ON + _OFF:
        raise SettingsError(f"ORO_NATIVE={raw!r} is not a switch; accepted: {', '.join(_ON + _OFF)}")
    return raw in _ON


ARROW_MEMORY_POOLS = ("system", "jemalloc", "mimalloc")


def arrow_memory_pool() -> str | None:
    """ORO_ARROW_MEMORY_POOL, validated: the Arrow allocator oro-assets sets for its process (read once, when
    ``oro_assets.storage`` is imported), or None to leave Arrow's own choice: ``ARROW_DEFAULT_MEMORY_POOL`` set and
    this variable not."""
    raw = _env("ORO_ARROW_MEMORY_POOL")
    if raw is None:
        return None if _env("ARROW_DEFAULT_MEMORY_POOL") else "system"
    if raw.lower() not in ARROW_MEMORY_POOLS:
        raise SettingsError(f"ORO_ARROW_MEMORY_POOL={raw!r} is not an Arrow allocator; accepted: "
                            f"{', '.join(ARROW_MEMORY_POOLS)}")
    return raw.lower()


_ON = ("1", "on", "true", "yes")
_OFF = ("0", "off", "false", "no")


def load_settings() -> Settings:
    """Read and validate every ORO_* variable. Raises SettingsError with one clear line."""
    data_dir = Path(_env("ORO_DATA_DIR") or "./data").expanduser().resolve()
    if data_dir.exists() and not data_dir.is_dir():
        raise SettingsError(f"ORO_DATA_DIR={data_dir} exists and is not a directory; accepted: a writable directory path")

    firehose_dir = _env("ORO_FIREHOSE_DIR")
    if firehose_dir is not None and not _is_remote(firehose_dir):
        path = Path(firehose_dir.removeprefix("file://")).expanduser().resolve()
        if not path.is_dir() or not os.access(path, os.R_OK | os.X_OK):
            raise SettingsError(
                f"ORO_FIREHOSE_DIR={firehose_dir} is not a readable directory; accepted: a directory of YYYY-MM-DD/ day folders or an fsspec URL"
            )
        firehose_dir = str(path)

    problems_raw = _env("ORO_PROBLEMS")
    problems: tuple[str, ...] = ()
    if problems_raw:
        problems = tuple(p.strip() for p in problems_raw.split(",") if p.strip())
        for p in problems:
            if not _is_remote(p) and not Path(p).expanduser().exists():
                raise SettingsError(f"ORO_PROBLEMS entry {p!r} does not exist; accepted: problem files (.json/.jsonl) or folders, comma-separated")
        problems = tuple(p if _is_remote(p) else str(Path(p).expanduser().resolve()) for p in problems)

    start = partitions_start()

    judge_models = tuple(m.strip() for m in (_env("ORO_JUDGE_MODEL") or "").split(",") if m.strip())
    judge = _choice("ORO_JUDGE", "rule", JUDGE_KINDS)
    judge_base_url = _env("ORO_JUDGE_BASE_URL")
    if judge == "llm" and (judge_base_url is None or not judge_models):
        raise SettingsError("ORO_JUDGE=llm needs ORO_JUDGE_BASE_URL and ORO_JUDGE_MODEL; accepted: an http(s) URL and a model name")
    if judge_base_url is not None and not judge_base_url.startswith(("http://", "https://")):
        raise SettingsError(f"ORO_JUDGE_BASE_URL={judge_base_url!r} is not an http(s) URL; accepted: http://host:port/v1")

    data_uri = f"sqlite:///{DataLayout(data_dir).mlflow_db}"
    return Settings(
        data_dir=data_dir,
        firehose_dir=firehose_dir,
        problems=problems,
        partitions_start=start,
        model_profile=_choice("ORO_MODEL_PROFILE", "tiny", MODEL_PROFILES),
        qwen3_4b_path=_env("ORO_QWEN3_4B_PATH") or QWEN3_4B_DEFAULT,
        sim_traces_per_day=_int("ORO_SIM_TRACES_PER_DAY", 10000, 1, 10_000_000),
        sim_seed=_int("ORO_SIM_SEED", 15, 0, 2**31 - 1),
        judge=judge,
        judge_base_url=judge_base_url,
        judge_models=judge_models,
        teacher_base_url=_env("ORO_TEACHER_BASE_URL"),
        teacher_model=_env("ORO_TEACHER_MODEL"),
        mlflow_tracking_uri=_env("MLFLOW_TRACKING_URI") or data_uri,
        schedule_hour=schedule_hour(),
        retrain_min_new_rows=_int("ORO_RETRAIN_MIN_NEW_ROWS", 0, 0, 10**9),
        ingest_workers=_int("ORO_INGEST_WORKERS", 1, 1, 256),
        native=native_kernels(),
        arrow_memory_pool=arrow_memory_pool(),
        judge_concurrency=_int("ORO_JUDGE_CONCURRENCY", 8, 1, 256),
        min_agentic_richness=_fraction("ORO_MIN_AGENTIC_RICHNESS"),
        sim_later_recorder_share=_fraction("ORO_SIM_LATER_RECORDER_SHARE") or 0.0,
    )


def api_key() -> str | None:
    """The judge/teacher API key. Only ever read here; never stored on Settings so it cannot be logged."""
    return _env("OPENAI_API_KEY")
