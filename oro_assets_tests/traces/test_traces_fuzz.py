"""Seeded mutations of realistic records: normalisation never raises anything but its typed error, and
every row it does produce passes schema validation."""

from __future__ import annotations

import copy
import hashlib
import random
from typing import Any

import orjson

from oro_assets.reasons import ReasonCode
from oro_assets.traces import samples
from oro_assets.traces.normalize import NormalizationError, normalize_record
from oro_assets.traces.schema import Provenance, validate_row

WEIRD: list[Any] = [None, True, 0, -1, 2**63, 1.5, "", "x" * 300, [], {}, [None], {"a": [1]}, "NaN", [[[[]]]],
                    {"product_id": 7}, "<think>", "{\"q\": 1}"]


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:4]):
            out += _paths(v, (*prefix, i))
    return out


def _set(obj: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    parent = obj
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return obj


def mutate(rng: random.Random, obj: Any) -> Any:
    for _ in range(rng.randint(1, 3)):
        paths = _paths(obj)
        path = paths[rng.randrange(len(paths))]
        op = rng.random()
        if op < 0.6:
            obj = _set(obj, path, copy.deepcopy(rng.choice(WEIRD)))
        elif op < 0.8 and path:
            parent = obj
            for key in path[:-1]:
                parent = parent[key]
            if isinstance(parent, dict):
                parent.pop(path[-1], None)
            elif isinstance(parent, list) and parent:
                parent.pop(path[-1] if path[-1] < len(parent) else 0)
        elif path:  # swap in a sibling value of another type / reorder steps
            parent = obj
            for key in path[:-1]:
                parent = parent[key]
            if isinstance(parent, list):
                rng.shuffle(parent)
    return obj


def test_mutated_records_never_crash_normalisation():
    rng = random.Random(1509)
    builders = [samples.oro_envelope, samples.oro_dialogue, samples.shoppingbench_rollout, samples.openai_row]
    outcomes: dict[str, int] = {}
    for i in range(600):
        rec = mutate(rng, builders[i % 4](i))
        raw = orjson.dumps(rec)
        prov = Provenance("fuzz.jsonl", i + 1, "2026-01-01", hashlib.sha256(raw).hexdigest())
        try:
            row = normalize_record(orjson.loads(raw), provenance=prov)
        except NormalizationError as exc:
            assert isinstance(exc.reason, ReasonCode) and exc.detail
            outcomes[exc.reason.value] = outcomes.get(exc.reason.value, 0) + 1
            continue
        assert validate_row(row) == [], (i, validate_row(row))
        outcomes["ok"] = outcomes.get("ok", 0) + 1
    assert outcomes["ok"] > 100 and outcomes.get("schema_violation", 0) > 50
