"""The curation assets are generated from the declared step list: one multi-asset, ``curation``, with one asset
per table a step writes, each versioned by its step's module (an edit to one step marks only its assets stale);
a selection runs the steps that write it, fused where every table of a step is selected."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from oro_assets.code_version import code_modules
from oro_assets.curation.gates import estimate_tokens
from oro_assets.curation.pipeline import STEPS
from oro_assets.curation.step import Output, RunParams, Step, StepResult, merge_params
from oro_assets.curation.steps.gates import GateConfig, GateStep
from oro_assets.curation.steps.ingest import IngestConfig, IngestStep
from oro_assets.defs.common import DAILY
from oro_assets.defs.curation.assets import curation, curation_asset, fused_runs
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
    assert sorted(k.to_user_string() for k in curation.keys) == sorted(a for names in tables.values() for a in names)
    assert curation.can_subset


def test_each_asset_is_versioned_by_its_step_module():
    versions = {}
    by_key = {k.to_user_string(): v for k, v in curation.code_versions_by_key.items()}
    for step in STEPS:
        modules = code_modules(type(step))
        assert STEP_MODULES[step.name] in modules and "oro_assets.curation.step" in modules
        others = set(STEP_MODULES.values()) - {STEP_MODULES[step.name]}
        assert not others & set(modules), (step.name, others & set(modules))
        assert not [m for m in modules if m.startswith("oro_assets.defs")]
        (version,) = {by_key[out.asset] for out in step.assets}
        versions[step.name] = version
    assert len(set(versions.values())) == len(STEPS)


def test_op_name_resources_and_run_config_are_the_ones_runs_configure():
    assert curation.op.name == "curation"
    assert set(curation.op.required_resource_keys) == {"warehouse", "firehose", "judge", "model_profile"}
    fields = curation.op.config_schema.config_type.fields
    assert set(fields) == {"ingest", "gates"}  # one entry per step with a run config, under the step's name
    configs = {name: {k: f.default_value for k, f in field.config_type.fields.items()} for name, field in fields.items()}
    assert configs == {"ingest": {"workers": 0},
                       "gates": {"reasoning_threshold": 0.7, "token_budget": 14_336, "max_judge_failure_ratio": 0.5}}
    assert all(not field.is_required for field in fields.values())


def _assets(*steps) -> set[str]:
    return {out.asset for step in STEPS if step.name in steps for out in step.assets}


def test_a_selection_runs_its_steps_fused_where_every_table_of_a_step_is_selected():
    names = lambda runs: [[s.name for s in run] for run in runs]  # noqa: E731
    every = _assets(*(s.name for s in STEPS))
    assert names(fused_runs(STEPS, every)) == [[s.name for s in STEPS]]
    # *trace_ledger leaves out the sub-task traces: the gates start from the warehouse, after structural published
    assert names(fused_runs(STEPS, every - {"subtask_traces"})) == [["ingest", "structural"],
                                                                   ["gates", "dedup", "split", "ledger"]]
    assert names(fused_runs(STEPS, {"gated_traces"})) == [["gates"]]
    assert names(fused_runs(STEPS, {"normalized_traces", "curated_traces"})) == [["ingest"], ["dedup"]]
    assert names(fused_runs(STEPS, _assets("gates", "dedup") | {"structural_labels"})) == [["structural"],
                                                                                          ["gates", "dedup"]]
    assert fused_runs(STEPS, set()) == []


def test_the_steps_parameters_merge_and_a_conflict_is_an_error(tmp_path):
    merged = merge_params([RunParams(files={"d": ["a"]}, ingest_workers=2), RunParams(threshold=0.5),
                           RunParams(state_dir=tmp_path, threshold=0.5)])
    assert (merged.files, merged.ingest_workers, merged.threshold, merged.state_dir) == ({"d": ["a"]}, 2, 0.5, tmp_path)
    assert merged.judge is None and merged.judge_concurrency == 1
    with pytest.raises(ValueError, match="RunParams.threshold"):
        merge_params([RunParams(threshold=0.5), RunParams(threshold=0.7)])


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
    asset = curation_asset([_ProbeStep()])
    assert set(asset.op.required_resource_keys) == {"warehouse", "judge"}
    probe = asset.op.config_schema.config_type.fields["probe"]
    assert {k: f.default_value for k, f in probe.config_type.fields.items()} == {"n": 3}
    assert probe.config_type.fields["n"].description == "Added to the source's count."
    warehouse = WarehouseResource(data_dir=str(tmp_path))
    partition = DAILY.get_partition_keys()[0]
    result = dg.materialize([asset], resources={"warehouse": warehouse, "judge": JudgeResource(concurrency=2)},
                            partition_key=partition, run_config={"ops": {"curation": {"config": {"probe": {"n": 5}}}}},
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
