"""The asset graph is what the committed snapshot says it is, and the README names exactly its assets.

A new, renamed or rewired asset (or a changed group, partitioning, check, owner or kind) fails here
with a diff until the snapshot is regenerated on purpose:

    ORO_UPDATE_SNAPSHOTS=1 .venv/bin/pytest oro_assets_tests/test_asset_specs_snapshot.py
"""

from __future__ import annotations

import difflib
import json
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = Path(__file__).parent / "snapshots" / "asset_specs.json"
REGENERATE = "ORO_UPDATE_SNAPSHOTS=1 .venv/bin/pytest oro_assets_tests/test_asset_specs_snapshot.py"
KIND_TAG = "dagster/kind/"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    os.environ["ORO_DATA_DIR"] = str(tmp_path_factory.mktemp("data"))
    from oro_assets.definitions import defs

    return defs().get_repository_def()


def _partitions(partitions_def) -> dict | None:
    if partitions_def is None:
        return None
    from oro_assets.settings import load_settings

    spec: dict = {"type": type(partitions_def).__name__}
    start = getattr(partitions_def, "start", None)
    if start is not None:
        day = start.date().isoformat()
        # The configured start is a setting, not part of the graph: record where it comes from.
        spec["start"] = "ORO_PARTITIONS_START" if day == load_settings().partitions_start else day
    timezone = getattr(partitions_def, "timezone", None)
    if timezone is not None:
        spec["timezone"] = timezone
    return spec


def asset_specs(repo) -> dict[str, dict]:
    """Every asset key → its deps, group, partitions, checks, owners, kinds, other tags and whether it is versioned."""
    graph = repo.asset_graph
    specs = {}
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        spec = {
            "deps": sorted(parent.to_user_string() for parent in node.parent_keys),
            "group": node.group_name,
            "partitions": _partitions(node.partitions_def),
            "checks": {check.name: "blocking" if graph.get_check_spec(check).blocking else "non-blocking"
                       for check in sorted(node.check_keys, key=lambda c: c.name)},
            "owners": sorted(node.owners),
            "kinds": sorted(node.kinds),
            "has_code_version": bool(node.code_version),
        }
        tags = {k: v for k, v in sorted((node.tags or {}).items()) if not k.startswith(KIND_TAG)}
        if tags:
            spec["tags"] = tags
        specs[key.to_user_string()] = spec
    return dict(sorted(specs.items()))


def render(specs: dict) -> str:
    return json.dumps(specs, indent=2, sort_keys=True) + "\n"


def test_asset_specs_match_the_snapshot(repo):
    current = render(asset_specs(repo))
    if os.environ.get("ORO_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(current)
        return
    assert SNAPSHOT.exists(), f"no snapshot at {SNAPSHOT.relative_to(ROOT)}; create it with:\n    {REGENERATE}"
    committed = SNAPSHOT.read_text()
    if current == committed:
        return
    old, new = json.loads(committed), json.loads(current)
    summary = []
    if added := sorted(set(new) - set(old)):
        summary.append(f"new assets: {', '.join(added)}")
    if removed := sorted(set(old) - set(new)):
        summary.append(f"assets gone: {', '.join(removed)}")
    if changed := sorted(k for k in set(old) & set(new) if old[k] != new[k]):
        summary.append(f"assets changed: {', '.join(changed)}")
    diff = "".join(difflib.unified_diff(committed.splitlines(keepends=True), current.splitlines(keepends=True),
                                        fromfile="snapshot (committed)", tofile="definitions (now)"))
    pytest.fail(
        "the asset graph differs from oro_assets_tests/snapshots/asset_specs.json\n"
        + "\n".join(summary) + "\n\n" + diff
        + f"\nIf the change is intended, regenerate the snapshot (and update the README's asset list):\n    {REGENERATE}",
        pytrace=False,
    )


# --- the README's asset list -------------------------------------------------------------------

_BULLET = re.compile(r"^- \[(?P<labels>[^\]]+)\] (?P<text>.+)$")
_NAME = re.compile(r"`([a-z][a-z0-9_]*(?:<[a-z]+>[a-z0-9_]*)?)`")


def _split_by_depth(text: str) -> tuple[str, str]:
    """(text outside parentheses, text inside them): the list reads ``asset (what it is) → asset (...)``."""
    outside, inside, depth = [], [], 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(depth - 1, 0)
        else:
            (inside if depth else outside).append(char)
    return "".join(outside), "".join(inside)


def readme_asset_bullets(text: str) -> list[tuple[list[str], list[str], list[str]]]:
    """Per "- [group, ...]" bullet of the README's Architecture section: its labels, the backticked names of
    its asset chain (outside parentheses) and those in its descriptions (inside, which may also name fields)."""
    match = re.search(r"^## Architecture\n(.*?)(?=^## )", text, re.S | re.M)
    assert match, "README has no '## Architecture' section"
    bullets = []
    for line in match.group(1).splitlines():
        if m := _BULLET.match(line.strip()):
            labels = [label.strip() for label in m.group("labels").split(",")]
            chain, described = _split_by_depth(m.group("text"))
            bullets.append((labels, _NAME.findall(chain), _NAME.findall(described)))
    assert bullets, "the Architecture section lists no assets ('- [group] `asset` → ...')"
    return bullets


def _stages(specs: dict) -> list[str]:
    """The training stages the README's ``<stage>`` placeholders stand for: base_model → base, sft_checkpoint → sft."""
    return sorted(name.removesuffix("_checkpoint").removesuffix("_model")
                  for name, spec in specs.items() if spec["group"] == "training")


def _expand(name: str, specs: dict) -> list[str]:
    if "<stage>" in name:
        return [name.replace("<stage>", stage) for stage in _stages(specs)]
    assert "<" not in name, f"README placeholder {name!r}: only <stage> is understood"
    return [name]


def readme_mismatches(text: str, specs: dict) -> list[str]:
    """What the README's asset list gets wrong about ``specs``: missing or unknown assets, wrong groups or partitioning.

    Every asset must be named under its group; every name in an asset chain must be an asset (a name inside
    a description counts when it is an asset: "sub-task traces go to `subtask_traces`")."""
    named: dict[str, list[str]] = {}
    unknown = []
    for labels, chain, described in readme_asset_bullets(text):
        for name in chain:
            for asset in _expand(name, specs):
                if asset in specs:
                    named.setdefault(asset, labels)
                else:
                    unknown.append(asset)
        for name in described:
            named.update({asset: labels for asset in _expand(name, specs) if asset in specs and asset not in named})
    problems = []
    if missing := sorted(set(specs) - set(named)):
        problems.append(f"does not name these assets: {missing}")
    if unknown:
        problems.append(f"names assets that do not exist: {sorted(unknown)}")
    for asset, labels in sorted(named.items()):
        group = specs[asset]["group"]
        if labels[0] != group:
            problems.append(f"puts {asset} under [{labels[0]}], its group is {group}")
        daily = "daily partitions" in labels
        if daily != (specs[asset]["partitions"] is not None):
            problems.append(f"{'says' if daily else 'does not say'} {asset} has daily partitions")
    return problems


def test_readme_lists_every_asset_and_no_other(repo):
    specs = asset_specs(repo)
    problems = readme_mismatches((ROOT / "README.md").read_text(), specs)
    assert not problems, "README's Architecture asset list " + "; ".join(problems)


def test_the_readme_check_catches_a_missing_an_unknown_and_a_misplaced_asset():
    specs = {
        "raw_traces": {"group": "curation", "partitions": {"type": "DailyPartitionsDefinition"}},
        "base_model": {"group": "training", "partitions": None},
        "sft_checkpoint": {"group": "training", "partitions": None},
        "eval_base": {"group": "evaluation", "partitions": None},
        "eval_sft": {"group": "evaluation", "partitions": None},
        "eval_report": {"group": "evaluation", "partitions": None},
        "leak_clusters": {"group": "curation", "partitions": None},
    }
    good = ("## Architecture\n\n- [curation, daily partitions] `raw_traces` (rows with `reasoning_content`)\n"
            "- [training] `base_model` → `sft_checkpoint`\n- [evaluation] `eval_<stage>` → `eval_report`\n"
            "- [curation, persistent] `leak_clusters`\n\n## Next\n- [arena] `not_here`\n")
    assert readme_mismatches(good, specs) == []
    bad = good.replace(" → `eval_report`", " → `eval_reports`").replace("[curation, persistent]", "[arena]")
    assert readme_mismatches(bad, specs) == [
        "does not name these assets: ['eval_report']",
        "names assets that do not exist: ['eval_reports']",
        "puts leak_clusters under [arena], its group is curation",
    ]
    unpartitioned = good.replace("[curation, daily partitions]", "[curation]")
    assert readme_mismatches(unpartitioned, specs) == ["does not say raw_traces has daily partitions"]


def test_the_snapshot_serialisation_sees_what_a_rename_changes(repo):
    """The snapshot is not vacuous: it holds each asset's upstream keys, so a rename shows up twice."""
    specs = asset_specs(repo)
    assert "sft_checkpoint" in specs and "base_model" in specs["sft_checkpoint"]["deps"]
    assert specs["trace_ledger"]["checks"]["conservation"] == "blocking"
    assert specs["raw_traces"]["partitions"] == {"type": "DailyPartitionsDefinition",
                                                 "start": "ORO_PARTITIONS_START", "timezone": "UTC"}
    assert all(spec["has_code_version"] for spec in specs.values())
