"""The parsed columns the normaliser shares with later steps (traces/columns.py) are exactly what
parsing the stored text gives, and the in-process ingest hands over rows equal to its batches."""

from __future__ import annotations

import hashlib
import random

import orjson
import pytest

from oro_assets import jsonio
from oro_assets.traces import columns, samples
from oro_assets.traces.ingest import ingest_batches, ingest_row_batches
from oro_assets.traces.normalize import NormalizationError, normalize_record
from oro_assets.traces.schema import Provenance
from oro_assets_tests.traces.test_traces_fuzz import mutate
from oro_assets_tests.traces.test_traces_ingest import DAY, build_day


def strictly_equal(a, b) -> bool:
    """Equal values of the same types, dict keys in the same order (1 == 1.0 == True is not enough)."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(strictly_equal(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(strictly_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.fixture(autouse=True)
def _fresh():
    columns.forget()
    yield
    columns.forget()


def test_shared_values_are_what_parsing_the_text_gives_on_clean_and_mutated_records():
    rng = random.Random(33)
    builders = [samples.oro_envelope, samples.oro_dialogue, samples.shoppingbench_rollout, samples.openai_row]
    checked = 0
    for i in range(400):
        rec = builders[i % 4](i)
        if i % 2:
            rec = mutate(rng, rec)
        raw = orjson.dumps(rec)
        prov = Provenance("t.jsonl", i + 1, "2026-01-01", hashlib.sha256(raw).hexdigest())
        parsed: dict = {}
        try:
            row = normalize_record(orjson.loads(raw), provenance=prov, parsed_out=parsed)
        except NormalizationError:
            continue
        for name in ("messages", "steps"):
            assert strictly_equal(parsed[name], jsonio.loads(row[name])), (i, name)
        checked += 1
    assert checked > 250


def test_column_value_answers_from_what_was_remembered_and_parses_otherwise():
    text = jsonio.dumps([{"role": "user", "content": "x" * 400}])
    value = jsonio.loads(text)
    columns.remember(text, value)
    assert columns.column_value(text) is value
    assert columns.column_value("".join(list(text))) is value  # an equal copy (read back from Arrow)
    other = jsonio.dumps({"k": "y" * 400})
    assert columns.column_value(other) == {"k": "y" * 400}
    assert other not in columns._values  # only what the normaliser handed over is held
    assert columns.column_value('{"short": 1}') == {"short": 1}
    with pytest.raises(jsonio.JSONDecodeError):
        columns.column_value("[" + "x" * 400)


def test_held_values_are_bounded_by_text_bytes(monkeypatch):
    monkeypatch.setattr(columns, "MAX_TEXT_BYTES", 3000)
    texts = [jsonio.dumps({"i": i, "pad": "p" * 900}) for i in range(10)]
    for t in texts:
        columns.remember(t, jsonio.loads(t))
    assert len(columns._values) == 3 and columns._held <= 3000
    assert texts[-1] in columns._values and texts[0] not in columns._values


def test_row_batches_equal_their_arrow_batches_and_share_parsed_columns(tmp_path):
    root = tmp_path / "firehose"
    build_day(root)
    files = sorted(str(p) for p in (root / DAY).iterdir())
    plain = list(ingest_batches(files, DAY, max_line_bytes=65_536))
    with_rows = list(ingest_row_batches(files, DAY, max_line_bytes=65_536, share_parsed=True))
    assert len(plain) == len(with_rows)
    n = 0
    for (norm, quar), (rows, norm2, quar2) in zip(plain, with_rows, strict=True):
        assert norm.equals(norm2) and quar.equals(quar2)
        assert rows == norm.to_pylist()
        for row in rows:
            for name in ("messages", "steps"):
                shared = columns.column_value(row[name])
                assert strictly_equal(shared, jsonio.loads(row[name]))
                n += len(row[name]) >= columns.MIN_TEXT_CHARS and row[name] in columns._values
    assert n >= 8  # the good records' long columns were handed over, not re-parsed
