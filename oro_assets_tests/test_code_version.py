"""``code_version`` follows the code an asset runs: the module of the function and the package modules it
imports, transitively. Editing a helper changes the version; editing an unrelated module does not."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from oro_assets.defs.common import code_modules, code_version

REPO = Path(__file__).resolve().parents[1]


def write_package(root: Path, name: str) -> Path:
    """A tiny package: ``asset.compute`` calls ``helper.double`` (which calls ``deep.base``), imports ``lazy``
    inside its body, and never touches ``unrelated``; ``defs.wiring`` imports ``asset`` like Dagster wiring."""
    pkg = root / name
    (pkg / "defs").mkdir(parents=True)
    files = {
        "__init__.py": '"""A throw-away package."""\n',
        "asset.py": f"""
            from {name}.helper import double


            def compute(x):
                from .lazy import shift

                return shift(double(x))
            """,
        "helper.py": """
            from . import deep


            def double(x):
                return 2 * deep.base(x)
            """,
        "deep.py": "def base(x):\n    return x\n",
        "lazy.py": "def shift(x):\n    return x + 1\n",
        "unrelated.py": f"import {name}.asset\n\n\ndef other():\n    return 0\n",
        "defs/__init__.py": "",
        "defs/wiring.py": f"from {name}.asset import compute\n\nASSET = compute\n",
    }
    for rel, text in files.items():
        (pkg / rel).write_text(textwrap.dedent(text).lstrip())
    return pkg


@pytest.fixture
def package(tmp_path, monkeypatch):
    name = f"cvpkg_{uuid.uuid4().hex[:8]}"
    pkg = write_package(tmp_path, name)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield name, pkg
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def reload_all(name: str) -> object:
    for module in sorted((m for m in sys.modules if m.startswith(name + ".")), reverse=True):
        importlib.reload(sys.modules[module])
    return importlib.import_module(f"{name}.asset")


def test_editing_a_helper_changes_the_version_and_an_unrelated_module_does_not(package):
    name, pkg = package
    asset = importlib.import_module(f"{name}.asset")
    importlib.import_module(f"{name}.unrelated")
    assert asset.compute(3) == 7
    first = code_version(asset.compute)

    edit(pkg / "helper.py", "2 * deep.base(x)", "3 * deep.base(x)")  # the asset function's own source is unchanged
    asset = reload_all(name)
    assert asset.compute(3) == 10
    second = code_version(asset.compute)
    assert second != first, "editing a helper the asset calls left its code version unchanged"

    edit(pkg / "unrelated.py", "return 0", "return 1")
    edit(pkg / "defs" / "wiring.py", "ASSET = compute", "ASSET = compute  # wiring only")
    reload_all(name)
    assert code_version(asset.compute) == second, "an unrelated module changed the version"

    edit(pkg / "deep.py", "return x", "return x * 1")  # two imports away
    assert code_version(reload_all(name).compute) not in (first, second)
    third = code_version(asset.compute)

    edit(pkg / "lazy.py", "x + 1", "x + 2")  # imported inside the function body
    assert code_version(reload_all(name).compute) != third
    assert code_modules(asset.compute) == [name, f"{name}.asset", f"{name}.deep", f"{name}.helper", f"{name}.lazy"]


def test_the_version_is_deterministic_and_does_not_depend_on_where_the_code_lives(package, tmp_path):
    name, pkg = package
    probe = (f"import sys; sys.path.insert(0, sys.argv[1]); from oro_assets.defs.common import code_version; "
             f"import {name}.asset as a; print(code_version(a.compute))")
    other = tmp_path / "elsewhere"
    shutil.copytree(pkg, other / name)
    versions = {
        subprocess.run([sys.executable, "-c", probe, str(where)], capture_output=True, text=True, check=True,
                       cwd=REPO).stdout.strip()
        for where in (pkg.parent, other)
    }
    asset = importlib.import_module(f"{name}.asset")
    assert versions == {code_version(asset.compute)}


def test_a_wiring_module_is_followed_only_when_it_is_given(package):
    name, _pkg = package
    wiring = importlib.import_module(f"{name}.defs.wiring")
    assert f"{name}.defs.wiring" not in code_modules(wiring.compute)
    modules = code_modules(wiring)
    assert f"{name}.defs.wiring" in modules and f"{name}.helper" in modules


def test_the_real_assets_follow_their_domain_code_not_the_wiring():
    from oro_assets.curation.ledger import LEDGER_ROWS_SQL, write_ledger
    from oro_assets.training import pipes_entry, stages

    modules = code_modules(pipes_entry.run_stage)
    assert {"oro_assets.training.stages", "oro_assets.training.profiles", "oro_assets.settings"} <= set(modules)
    assert not [m for m in modules if m.startswith("oro_assets.defs")]
    assert code_version(stages.run_sft) != code_version(stages.run_kto)  # one module per stage
    assert code_version(write_ledger, LEDGER_ROWS_SQL) != code_version(write_ledger)
    assert code_version(stages.run_sft) == code_version(stages.run_sft)


def test_a_value_is_versioned_by_itself_not_by_its_module():
    from oro_assets.training.profiles import TrainArgs

    assert code_version(TrainArgs(max_steps=1)) != code_version(TrainArgs(max_steps=2))
    assert code_version("select 1") != code_version("select 2")
    assert code_modules(TrainArgs(max_steps=1)) == []
    assert "oro_assets.training.stages.train_args" in code_modules(TrainArgs)


# --- the training chain: a stage is versioned by its own module, not by its siblings ------------------------------

STAGE_MODULE = "oro_assets.training.stages.{}"


def _versions_with_edited(monkeypatch, module: str | None) -> tuple[dict[str, str], dict[str, str]]:
    """(chain versions, each stage's own checkpoint code version) with ``module``'s source hash changed, as an
    edit of that file would change it."""
    import oro_assets.code_version as cv
    from oro_assets.training.chain import stage_code_versions
    from oro_assets.training.stages.lifecycle import training_code_version

    real = cv._source_digest
    monkeypatch.setattr(cv, "_source_digest", lambda name: "edited" if name == module else real(name))
    stages = ("base", "sft", "rejection_sft", "teacher_sft", "kto", "dr_grpo")
    return stage_code_versions(), {s: training_code_version(s) for s in stages}


@pytest.mark.parametrize(("edited", "reversioned"), [
    ("dr_grpo", {"dr_grpo"}),
    ("kto", {"kto", "dr_grpo"}),
    ("teacher_sft", {"teacher_sft", "kto", "dr_grpo"}),
    # the scaffold arm runs the sft module from the base: it moves with both
    ("sft", {"sft", "scaffold", "rejection_sft", "teacher_sft", "kto", "dr_grpo"}),
    ("base", {"base", "scaffold", "sft", "rejection_sft", "teacher_sft", "kto", "dr_grpo"}),
    # a helper two stages import: those two and what trains from them
    ("rollouts", {"rejection_sft", "teacher_sft", "kto", "dr_grpo"}),
])
def test_editing_one_stage_module_reversions_that_stage_and_its_descendants_only(monkeypatch, edited, reversioned):
    before, own_before = _versions_with_edited(monkeypatch, None)
    after, own_after = _versions_with_edited(monkeypatch, STAGE_MODULE.format(edited))
    assert {s for s in before if before[s] != after[s]} == reversioned
    # the checkpoint's own code version moves only where the module is imported; descendants follow through the
    # parent's version, which a checkpoint version hashes too
    directly = {s for s in own_before if own_before[s] != own_after[s]}
    assert edited in directly or edited == "rollouts"
    assert directly <= reversioned


def test_the_stage_assets_code_version_does_not_follow_a_sibling(monkeypatch):
    import oro_assets.code_version as cv
    from oro_assets.code_version import module_version

    asset_version = lambda stage: module_version(STAGE_MODULE.format(stage), "oro_assets.training.pipes_entry")  # noqa: E731
    before = {s: asset_version(s) for s in ("sft", "kto", "dr_grpo")}
    real = cv._source_digest
    monkeypatch.setattr(cv, "_source_digest",
                        lambda name: "edited" if name == STAGE_MODULE.format("dr_grpo") else real(name))
    after = {s: asset_version(s) for s in before}
    assert [s for s in before if before[s] != after[s]] == ["dr_grpo"]
