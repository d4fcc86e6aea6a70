"""The native ``table_rows`` (``oro_assets/_native.c``) equals its reference, ``table.to_pylist()``
(``storage.table_rows_py``), for a table just built from the rows (``conform``, as the step runner builds a step's kept
table before the next step reads it back): rows that already are what the reader gives back (a dict of exactly the
schema's names in its order, each value None or exactly the type its column reads back as) are copied, anything else
is read back from the table by pyarrow, so the next step always gets the same rows (values, types and key order).
Compared on hostile rows, Hypothesis-random ones and a simulated day of both recorder eras through every step. Skips
without the built extension, and fails instead under CI (whose install builds it)."""

from __future__ import annotations

import collections
import math
import tempfile

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oro_assets import storage
from oro_assets.curation import step
from oro_assets.curation.clusters import Registry
from oro_assets.curation.pipeline import curate_files
from oro_assets.judge.rule import RuleJudge
from oro_assets_tests.native_support import both_eras_day, require_kernels

DAY = "2026-03-01"
SCHEMA = pa.schema([("s", pa.string()), ("i", pa.int64()), ("f", pa.float64()), ("b", pa.bool_()),
                    ("t", pa.string(), False)])
NAMES = tuple(SCHEMA.names)
KINDS = (0, 1, 2, 3, 0)



def _shape(value):
    """A value with every dict as its items in order and every leaf with its type (NaN as a marker)."""
    if isinstance(value, dict):
        return (type(value).__name__, [(type(k).__name__, k, _shape(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_shape(v) for v in value])
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    if isinstance(value, float):
        return ("float", value, math.copysign(1.0, value))
    return (type(value).__name__, value)


def _same(rows, schema=SCHEMA) -> bool | None:
    """``table_rows`` of the table ``conform`` builds equals ``to_pylist``; True when the kernel copied the rows, None
    when ``conform`` refuses them (nothing to read back)."""
    try:
        table = storage.conform(rows, schema)
    except Exception:  # noqa: BLE001 - rows conform refuses never reach the reader
        return None
    want = table.to_pylist()
    got = storage.table_rows(rows, table)
    assert _shape(got) == _shape(want)
    assert all(g is not r for g, r in zip(got, rows, strict=True)), "a row handed on is not a copy"
    copied = require_kernels().table_rows(rows, tuple(schema.names),
                                          tuple(storage._READ_BACK_KINDS.get(f.type, -1) for f in schema))
    if copied is None:
        return False
    assert _shape(copied) == _shape(want)
    return True


def row(**values):
    base = {"s": "a", "i": 1, "f": 1.5, "b": True, "t": "x"}
    base.update(values)
    return base


class Sub(str):
    pass


HOSTILE = {
    "empty": [],
    "one": [row()],
    "nulls everywhere": [{"s": None, "i": None, "f": None, "b": None, "t": None}],
    "non-ASCII": [row(s="héllo 😀 商品", t="\x00\n")],
    "a megabyte": [row(s="x" * (1 << 20))],
    "int64 edges": [row(i=2**63 - 1), row(i=-(2**63)), row(i=0)],
    "floats": [row(f=float("nan")), row(f=-0.0), row(f=float("inf")), row(f=-float("inf")), row(f=5e-324)],
    "bool False": [row(b=False)],
    "many rows": [row(s=f"r{i}", i=i, f=i / 3, b=i % 2 == 0) for i in range(2000)],
    "the same row twice": [row()] * 2,
    "keys out of order": [{"i": 1, "s": "a", "f": 1.5, "b": True, "t": "x"}],
    "one row out of order": [row(), {"t": "x", "s": "a", "i": 1, "f": 1.5, "b": True}],
    "two string keys swapped": [{"t": "x", "i": 1, "f": 1.5, "b": True, "s": "a"}],
    "a key missing": [{"s": "a", "i": 1, "f": 1.5, "b": True}],
    "int in a float column": [row(f=1)],
    "bool in an int column": [row(i=True)],
    "bool in a float column": [row(f=False)],
    "float in an int column": [row(i=1.0)],
    "int in a bool column": [row(b=1)],
    "str subclass value": [row(s=Sub("a"))],
    "str subclass key": [{Sub("s"): "a", "i": 1, "f": 1.5, "b": True, "t": "x"}],
    "bytes in a string column": [row(s=b"a")],
    "int past int64": [row(i=2**63)],
    "an extra key": [{**row(), "zz": 1}],
    "an ordered dict": [collections.OrderedDict(row())],
    "a defaultdict": [collections.defaultdict(int, row())],
    "a non-dict row": [row(), 3],
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_rows(name, kernels):
    _same(HOSTILE[name])


def test_the_kernel_copies_what_it_should(kernels):
    copied = {name for name, rows in HOSTILE.items() if _same(rows)}
    assert copied == {"empty", "one", "nulls everywhere", "non-ASCII", "a megabyte", "int64 edges", "floats",
                      "bool False", "many rows", "the same row twice"}


REFUSED = {  # rows the reader would give back otherwise, whether or not conform accepts them
    "bool in an int column": row(i=True),
    "bool in a float column": row(f=True),
    "int in a float column": row(f=1),
    "float in an int column": row(i=1.0),
    "int in a bool column": row(b=1),
    "str in an int column": row(i="1"),
    "int in a string column": row(s=1),
    "str subclass value": row(s=Sub("a")),
    "bytes value": row(t=b"x"),
    "int past int64": row(i=2**63),
    "int below int64": row(i=-(2**63) - 1),
    "str subclass key": {Sub("s"): "a", "i": 1, "f": 1.5, "b": True, "t": "x"},
    "non-str key": {0: "a", "i": 1, "f": 1.5, "b": True, "t": "x"},
    "two string keys swapped": {"t": "x", "i": 1, "f": 1.5, "b": True, "s": "a"},
    "a key missing": {"s": "a", "i": 1, "f": 1.5, "b": True},
    "an extra key": {**row(), "zz": 1},
    "a renamed key": {"s": "a", "i": 1, "f": 1.5, "b": True, "u": "x"},
    "an ordered dict": collections.OrderedDict(row()),
    "a list": list(row()),
    "None": None,
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_the_kernel_refuses_rows_the_reader_gives_back_otherwise(name, kernels):
    assert kernels.table_rows([row(), REFUSED[name]], NAMES, KINDS) is None
    assert kernels.table_rows([REFUSED[name], row()], NAMES, KINDS) is None


@pytest.mark.parametrize("dtype", [pa.int32(), pa.large_string(), pa.float32(), pa.list_(pa.string()),
                                   pa.timestamp("ms"), pa.binary(), pa.date32()])
def test_other_column_types_are_read_back_by_pyarrow(dtype, kernels):
    schema = pa.schema([("s", pa.string()), ("x", dtype)])
    value = {pa.int32(): 3, pa.large_string(): "a", pa.float32(): 0.1, pa.list_(pa.string()): ["a"],
             pa.binary(): b"a"}.get(dtype)
    assert _same([{"s": "a", "x": value}, {"s": "b", "x": None}], schema) is False
    assert kernels.table_rows([{"s": "a", "x": None}], ("s", "x"), (0, -1)) is None


def test_an_empty_schema(kernels):
    assert kernels.table_rows([{}, {}], (), ()) == [{}, {}]
    assert kernels.table_rows([{"a": 1}], (), ()) is None


def test_bad_arguments(kernels):
    with pytest.raises(TypeError):
        kernels.table_rows([], NAMES)
    with pytest.raises(TypeError, match="tuples of the same length"):
        kernels.table_rows([], NAMES, KINDS[:-1])
    with pytest.raises(TypeError, match="tuples of the same length"):
        kernels.table_rows([], list(NAMES), KINDS)
    with pytest.raises(TypeError, match="names must be str"):
        kernels.table_rows([], (1,), (0,))
    with pytest.raises(TypeError):
        kernels.table_rows([], ("s",), ("0",))
    assert kernels.table_rows([], ("s",), (4,)) is None
    assert kernels.table_rows((row(),), NAMES, KINDS) is None
    assert kernels.table_rows(None, NAMES, KINDS) is None


def test_copies_are_new_dicts_of_the_same_items(kernels):
    rows = [row(), row(s="é")]
    got = kernels.table_rows(rows, NAMES, KINDS)
    assert got == rows and all(g is not r for g, r in zip(got, rows, strict=True))
    got[0]["s"] = "changed"
    assert rows[0]["s"] == "a"


VALUES = st.one_of(st.none(), st.text(max_size=8), st.integers(-2**63, 2**63 - 1), st.floats(), st.booleans())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    st.fixed_dictionaries({"s": VALUES, "i": VALUES, "f": VALUES, "b": VALUES, "t": VALUES}),
    st.dictionaries(st.sampled_from(NAMES), VALUES),
    st.fixed_dictionaries({"s": st.none() | st.text(max_size=8), "i": st.none() | st.integers(-2**63, 2**63 - 1),
                           "f": st.none() | st.floats(), "b": st.none() | st.booleans(), "t": st.text(max_size=8)})),
    max_size=12))
def test_random_rows(rows):
    require_kernels()
    _same(rows)


def _chain(files, tmp):
    """Every step over the day in memory (the fused run the chain benchmark times); every table of the store."""
    store, _ = curate_files(files, DAY, judge=RuleJudge(), registry=Registry())
    return {key: store.table(*key) for key in sorted(store._tables)}


def test_a_days_steps_read_back_the_same_rows(kernels, monkeypatch):
    handed = collections.Counter()
    kernel = storage.table_rows

    def counting(rows, table):
        got = kernel(rows, table)
        want = table.to_pylist()
        assert _shape(got) == _shape(want)
        handed["rows"] += len(rows)
        return got

    with tempfile.TemporaryDirectory() as tmp:
        files = both_eras_day(tmp, DAY, 120)
        monkeypatch.setattr(step, "table_rows", counting)
        with_kernel = _chain(files, tmp)
        monkeypatch.setattr(step, "table_rows", storage.table_rows_py)
        reference = _chain(files, tmp)
    assert handed["rows"] > 50
    assert with_kernel.keys() == reference.keys()
    for key, table in with_kernel.items():
        assert table.equals(reference[key]), key
