"""The curation assets are generated from the declared step list: one asset per table a step writes,
each versioned by its step's module (an edit to one step marks only its assets stale)."""

from __future__ import annotations

from oro_assets.code_version import code_modules
from oro_assets.curation.pipeline import STEPS
from oro_assets.defs.curation.assets import CURATION_ASSETS

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
