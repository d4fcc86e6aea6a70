"""The curation assets are generated from the declared step list: one asset per table a step writes,
each versioned by its step's module (an edit to one step marks only its assets stale)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq

from oro_assets.code_version import code_modules
from oro_assets.curation.gates import estimate_tokens
from oro_assets.curation.pipeline import STEPS
from oro_assets.curation.step import Output, RunParams, Step, StepResult
from oro_assets.curation.steps.gates import GateConfig, GateStep
from oro_assets.curation.steps.ingest import IngestConfig, IngestStep
from oro_assets.defs.common import DAILY
from oro_assets.defs.curation.assets import CURATION_ASSETS, step_asset
from oro_assets.defs.judge.resources import JudgeResource
from oro_assets.defs.resources import WarehouseResource

STEP_MODULES = {"ingest": "oro_assets.curation.steps.ingest", "structural": "oro_assets.curation.steps.structural",
                "gates": "oro_assets.curation.steps.gates", "dedup": "oro_assets.curation.steps.dedup",
                "split": "oro_assets.curation.steps.split", "ledger": "oro_assets.curation.steps.ledger"}


def test_the_pipeline_is_the_declared_order():
    assert [s.name for s in STEPS] == ["ingest", "structural", "gates", "dedup", "split", "ledger"]


def test_one_asset_per_table_and_subsettable():
    tables = {s.name: [o.asset for o in s.assets] for s in STEPS}
    assert tables == {"ingest": ["raw_traces", "normalized_traces"], "structural": ["structural_labels", "subtask_traces"],
                      "gates": ["gated_traces"], "dedup": ["curated_traces"], "split": ["split_traces"],
                      "ledger": ["trace_ledger"]}
    for step, asset in zip(STEPS, CURATION_ASSETS, strict=True):
        assert sorted(k.to_user_string() for k in asset.keys) == sorted(tables[step.name])
        assert asset.can_subset


def test_each_asset_is_versioned_by_its_step_module():
    versions = {}
    for step, asset in zip(STEPS, CURATION_ASSETS, strict=True):
        modules = code_modules(type(step))
        assert STEP_MODULES[step.name] in modules and "oro_assets.curation.step" in modules
        others = set(STEP_MODULES.values()) - {STEP_MODULES[step.name]}
        assert not others & set(modules), (step.name, others & set(modules))
        assert not [m for m in modules if m.startswith("oro_assets.defs")]
        (version,) = set(asset.code_versions_by_key.values())
        versions[step.name] = version
    assert len(set(versions.values())) == len(STEPS)


def _config_defaults(asset) -> dict:
    schema = asset.op.config_schema
    fields = getattr(schema.config_type, "fields", {}) if schema is not None else {}
    return {name: field.default_value for name, field in fields.items()}


def test_op_names_resources_and_run_config_are_the_ones_runs_configure():
    assets = {step.name: asset for step, asset in zip(STEPS, CURATION_ASSETS, strict=True)}
    assert {name: asset.op.name for name, asset in assets.items()} == {
        "ingest": "ingest", "structural": "structural", "gates": "gated_traces", "dedup": "curated_traces",
        "split": "split_traces", "ledger": "trace_ledger"}
    assert {name: set(asset.op.required_resource_keys) for name, asset in assets.items()} == {
        "ingest": {"warehouse", "firehose"}, "structural": {"warehouse"},
        "gates": {"warehouse", "judge", "model_profile"}, "dedup": {"warehouse"}, "split": {"warehouse"},
        "ledger": {"warehouse"}}
    configs = {name: _config_defaults(asset) for name, asset in assets.items() if _config_defaults(asset)}
    assert configs == {"ingest": {"workers": 0},
                       "gates": {"reasoning_threshold": 0.7, "token_budget": 14_336, "max_judge_failure_ratio": 0.5}}


@dataclass(frozen=True)
class _ProbeConfig:
    n: int = field(default=3, metadata={"help": "Added to the source's count."})


class _ProbeStep(Step):
    """A step the wiring has never seen: its resources, run config and parameters are declared here alone."""

    name = "probe"
    input = "firehose"
    kept = Output("probe_rows", pa.schema([("n", pa.int64())]), "n from the run's parameters")
    resources = ("judge",)
    Config = _ProbeConfig

    def run_params(self, sources, config: _ProbeConfig, partitions, log) -> RunParams:
        return RunParams(judge_concurrency=config.n + sources["judge"].concurrency)

    def read(self, ctx, state):
        yield [{"n": ctx.params.judge_concurrency}]

    def process(self, rows: list[dict], state) -> StepResult:
        return StepResult(rows, [])


def test_a_step_is_wired_from_its_declaration_alone(tmp_path):
    asset = step_asset(_ProbeStep())
    assert set(asset.op.required_resource_keys) == {"warehouse", "judge"}
    assert _config_defaults(asset) == {"n": 3}
    assert asset.op.config_schema.config_type.fields["n"].description == "Added to the source's count."
    warehouse = WarehouseResource(data_dir=str(tmp_path))
    partition = DAILY.get_partition_keys()[0]
    result = dg.materialize([asset], resources={"warehouse": warehouse, "judge": JudgeResource(concurrency=2)},
                            partition_key=partition, run_config={"ops": {"probe_rows": {"config": {"n": 5}}}},
                            instance=dg.DagsterInstance.ephemeral())
    assert result.success
    assert pq.read_table(warehouse.warehouse.path("probe_rows", partition)).to_pylist() == [{"n": 7}]


class _Source:
    def __init__(self, **attrs):
        self.__dict__.update(attrs)


def test_run_params_of_ingest_and_gates_from_their_sources(caplog):
    log = logging.getLogger("test_step_assets")
    firehose = _Source(ingest_workers=4, root=lambda: "/day", partition_files=lambda p: [f"/day/{p}.jsonl"])
    ingest = IngestStep().run_params({"firehose": firehose}, IngestConfig(), ["2026-01-02"], log)
    assert (ingest.files, ingest.ingest_workers) == ({"2026-01-02": ["/day/2026-01-02.jsonl"]}, 4)
    assert IngestStep().run_params({"firehose": firehose}, IngestConfig(workers=2), [], log).ingest_workers == 2

    judge = _Source(concurrency=3, min_agentic_richness=-1.0, build=lambda: "a judge")
    profile = _Source(token_counter=lambda data_dir: (None, "byte estimate (no tokenizer)"))
    sources = {"warehouse": _Source(data_dir="/data"), "judge": judge, "model_profile": profile}
    with caplog.at_level(logging.WARNING, logger="test_step_assets"):
        gates = GateStep().run_params(sources, GateConfig(reasoning_threshold=0.5), [], log)
    assert (gates.judge, gates.judge_concurrency, gates.threshold, gates.token_budget) == ("a judge", 3, 0.5, 14_336)
    assert gates.count_tokens is estimate_tokens and gates.token_counter_name == "byte estimate (no tokenizer)"
    assert gates.min_agentic_richness is None and gates.max_judge_failure_ratio == 0.5
    assert "byte estimate (no tokenizer)" in caplog.text
