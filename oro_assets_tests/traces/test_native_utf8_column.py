"""The native ``utf8_column`` (``oro_assets/_native.c``) equals its reference, ``pa.array(values, type=pa.string())``
(``storage.string_array_py``): the Arrow string column of a list of str and None has the same values, nulls, type and
length (and the same Parquet bytes), or the kernel hands the list to pyarrow (None), which converts or refuses it
itself, so every error stays pyarrow's own. ``storage.table_from_rows`` (``conform``'s rows, with string columns by
the kernel) equals ``pa.Table.from_pylist``, and ingest's batches are the same with and without the kernel. Compared on
a simulated day of both recorder eras, hostile lists and Hypothesis-random ones. Skips without the built extension,
and fails instead under CI (whose install builds it)."""

from __future__ import annotations

import collections
import io
import os
import subprocess
import sys
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oro_assets import storage
from oro_assets.traces import ingest
from oro_assets.traces.schema import NORMALIZED_SCHEMA, QUARANTINE_SCHEMA
from oro_assets_tests.native_support import both_eras_day, require_kernels

DAY = "2026-03-01"
STRING = pa.string()



def _parquet(table: pa.Table) -> bytes | str:
    """The table's Parquet bytes, or the writer's error (a null in a column declared non-nullable)."""
    out = io.BytesIO()
    try:
        pq.write_table(table, out, compression="zstd")
    except pa.ArrowException as exc:
        return f"{type(exc).__name__}: {exc}"
    return out.getvalue()


def assert_same_array(got: pa.Array, want: pa.Array) -> None:
    got.validate(full=True)
    assert type(got) is type(want) and got.type == want.type == STRING
    assert len(got) == len(want) and got.null_count == want.null_count
    assert got.equals(want)
    assert got.to_pylist() == want.to_pylist()
    assert [type(v) for v in got.to_pylist()] == [type(v) for v in want.to_pylist()]
    assert _parquet(pa.table({"c": got})) == _parquet(pa.table({"c": want}))


def _same(values) -> bool:
    """The dispatcher's column equals pyarrow's, or both raise alike; True when the kernel built it itself."""
    try:
        want = pa.array(values, type=STRING)
    except Exception as exc:  # noqa: BLE001 - whatever pyarrow raises, the dispatcher must raise alike
        with pytest.raises(type(exc)) as raised:
            storage.string_array(values)
        assert str(raised.value) == str(exc)
        assert require_kernels().utf8_column(values, pa.allocate_buffer) is None, "the kernel built a list pyarrow refuses"
        return False
    assert_same_array(storage.string_array(values), want)
    built = require_kernels().utf8_column(values, pa.allocate_buffer)
    if built is None:
        return False
    nulls, validity, offsets, data = built
    assert nulls == want.null_count and (validity is None) == (nulls == 0)
    assert len(offsets) == 4 * (len(values) + 1)
    assert len(data) == sum(len(v.encode()) for v in values if v is not None)
    return True


class Sub(str):
    pass


HOSTILE = {
    "empty": [],
    "one": ["a"],
    "one empty": [""],
    "one None": [None],
    "all None": [None] * 17,
    "all empty": [""] * 9,
    "None first": [None, "a", "bc"],
    "None last": ["a", "bc", None],
    "accented": ["héllo", "naïve", None, "ÿ"],
    "cjk": ["商品", "搜索结果", ""],
    "astral": ["😀", "a😀b", "𝔘𝔫𝔦"],
    "nul characters": ["\x00", "a\x00b", "\x00" * 100],
    "controls and escapes": ["\n\t\r\"\\", "\x7f\x80\x9f", "\u2028\u2029"],
    "json text": ['{"a": [1, 2, {"b": null}]}', "[]"],
    "max BMP": ["\uffff", "\ufffe", "\ue000"],
    "a megabyte": ["x" * (1 << 20), "é" * (1 << 19)],
    "many": [f"value {i}" if i % 7 else None for i in range(10_000)],
    "same object": ["shared"] * 1000,
    "lone surrogate": ["a", "\ud800"],
    "low surrogate": ["\udfff"],
    "surrogate after non-ASCII": ["é", "\udc80"],
    "str subclass": ["a", Sub("b")],
    "bytes": ["a", b"bytes"],
    "invalid UTF-8 bytes": [b"\xff"],
    "int": ["a", 1],
    "bool": [True],
    "float": ["a", 1.5],
    "nan": [float("nan")],
    "list value": [["a"]],
    "dict value": [{"a": "b"}],
    "tuple": ("a", None, "b"),
    "range": range(3),
    "nested list": [["a", None]],
}
# nulls at every position around the validity bitmap's byte boundaries
for n in (7, 8, 9, 15, 16, 17, 64, 65):
    for at in sorted({0, n // 2, n - 1}):
        HOSTILE[f"{n} values, None at {at}"] = [None if i == at else f"v{i}" for i in range(n)]
        HOSTILE[f"{n} values, only {at} set"] = [f"v{i}" if i == at else None for i in range(n)]


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_lists(name, kernels):
    _same(HOSTILE[name])


def test_the_kernel_builds_what_it_should(kernels):
    built = {name for name, values in HOSTILE.items() if _same(values)}
    handed_back = set(HOSTILE) - built
    assert handed_back == {"lone surrogate", "low surrogate", "surrogate after non-ASCII", "str subclass", "bytes",
                           "invalid UTF-8 bytes", "int", "bool", "float", "nan", "list value", "dict value", "tuple",
                           "range", "nested list"}


def test_buffers_as_arrow_lays_them_out(kernels):
    nulls, validity, offsets, data = kernels.utf8_column(["ab", None, "", "é", None, "xyz", "a", "b", "c"],
                                                         pa.allocate_buffer)
    assert nulls == 2
    assert validity.to_pybytes() == bytes([0b11101101, 0b1])
    assert offsets.to_pybytes() == b"".join(i.to_bytes(4, sys.byteorder, signed=True)
                                            for i in (0, 2, 2, 2, 4, 4, 7, 8, 9, 10))
    assert data.to_pybytes() == "abéxyzabc".encode()
    nulls, validity, offsets, data = kernels.utf8_column([], pa.allocate_buffer)
    assert (nulls, validity, offsets.to_pybytes(), data.to_pybytes()) == (0, None, b"\0" * 4, b"")


def test_allocate_is_called_with_the_exact_sizes(kernels):
    sizes = []

    def allocate(size):
        sizes.append(size)
        return pa.allocate_buffer(size)

    kernels.utf8_column(["ab", None, "é"] * 3, allocate)
    assert sizes == [2, 40, 12]
    sizes.clear()
    kernels.utf8_column(["ab", "é"], allocate)
    assert sizes == [12, 4]  # no validity buffer without a null


def test_a_bigger_buffer_is_read_only_to_its_size(kernels):
    got = kernels.utf8_column(["ab", "c"], lambda size: pa.allocate_buffer(size + 64))
    arr = pa.Array.from_buffers(STRING, 2, [got[1], got[2], got[3]], null_count=got[0])
    assert arr.to_pylist() == ["ab", "c"]


def test_more_than_int32_of_text_goes_to_pyarrow_without_allocating(kernels):
    big = "x" * (1 << 24)
    calls = []
    assert kernels.utf8_column([big] * 128, lambda size: calls.append(size)) is None  # 2**31 bytes
    assert calls == []
    assert kernels.utf8_column([big] * 127 + ["x" * ((1 << 24) - 1)], pa.allocate_buffer) is not None  # 2**31 - 1


def test_allocate_failures_propagate(kernels):
    def boom(size):
        raise MemoryError("pool exhausted")

    with pytest.raises(MemoryError, match="pool exhausted"):
        kernels.utf8_column(["a"], boom)
    with pytest.raises(ValueError, match="smaller than size"):
        kernels.utf8_column(["abc"], lambda size: pa.allocate_buffer(max(0, size - 1)))
    with pytest.raises(BufferError):
        kernels.utf8_column(["abc"], lambda size: b"x" * size)  # read-only
    with pytest.raises(TypeError):
        kernels.utf8_column(["abc"], lambda size: 1)


def test_a_list_changed_by_allocate_is_read_as_it_was(kernels):
    values = ["é" * 10, None, "abc"]
    want = pa.array(list(values), type=STRING)

    def allocate(size):
        values.clear()
        values.append(12)
        return pa.allocate_buffer(size)

    nulls, validity, offsets, data = kernels.utf8_column(values, allocate)
    assert_same_array(pa.Array.from_buffers(STRING, 3, [validity, offsets, data], null_count=nulls), want)


def test_bad_arguments(kernels):
    with pytest.raises(TypeError):
        kernels.utf8_column(["a"])
    with pytest.raises(TypeError):
        kernels.utf8_column(["a"], pa.allocate_buffer, 1)
    with pytest.raises(TypeError, match="allocate must be callable"):
        kernels.utf8_column(["a"], None)
    assert kernels.utf8_column(("a",), pa.allocate_buffer) is None
    assert kernels.utf8_column("abc", pa.allocate_buffer) is None
    assert kernels.utf8_column(None, pa.allocate_buffer) is None


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(), st.text(st.characters(codec="utf-8")),
                          st.text(st.characters(categories=["Cs", "Co", "Cn", "Zs"])), st.binary(max_size=4),
                          st.integers(), st.sampled_from(["", "a", "\x00", "😀"])), max_size=40))
def test_random_lists(values):
    require_kernels()
    _same(values)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(st.characters(codec="utf-8"), max_size=30)), max_size=70))
def test_random_str_lists_are_built_by_the_kernel(values):
    require_kernels()
    assert _same(values)


# ---------------------------------------------------------------------------------------------- whole tables

SCHEMA = pa.schema([("s", pa.string()), ("i", pa.int64()), ("f", pa.float64()), ("b", pa.bool_()),
                    ("t", pa.string(), False)], metadata={b"k": b"v"})


def _same_table(rows, schema=SCHEMA) -> None:
    try:
        want = pa.Table.from_pylist(rows, schema=schema)
    except Exception as exc:  # noqa: BLE001 - whatever pyarrow raises, table_from_rows must raise alike
        with pytest.raises(type(exc)) as raised:
            storage.table_from_rows(rows, schema)
        assert str(raised.value) == str(exc)
        return
    got = storage.table_from_rows(rows, schema)
    got.validate(full=True)
    assert got.schema.equals(want.schema, check_metadata=True)
    assert got.equals(want) and got.to_pylist() == want.to_pylist()
    assert _parquet(got) == _parquet(want)


TABLES = {
    "empty": [],
    "one": [{"s": "a", "i": 1, "f": 1.5, "b": True, "t": "x"}],
    "missing keys": [{"s": "a"}, {"i": 2}, {}],
    "extra keys": [{"s": "a", "zz": object()}],
    "key order": [{"t": "x", "b": False, "f": 0.0, "i": -1, "s": "é"}],
    "int in a float column": [{"f": 1}],
    "bad string": [{"s": 1}],
    "bad string later": [{"s": "a", "i": 1}, {"s": "b", "i": "x"}],
    "surrogate": [{"s": "\ud800"}],
    "non-dict row": [{"s": "a"}, 3],
    "list row": [{"s": "a"}, ["s"]],
    "str row": [{"s": "a"}, "s"],
    "dict subclasses": [collections.OrderedDict(s="a"), collections.defaultdict(str, s="b"),
                        collections.Counter(s=1)],
    "None row": [None],
    "tuple of rows": ({"s": "a"},),
}


@pytest.mark.parametrize("name", list(TABLES))
def test_tables_as_from_pylist(name, kernels):
    _same_table(TABLES[name])


def test_a_schema_that_is_not_a_schema_is_pyarrows_to_refuse(kernels):
    _same_table([{"s": "a"}], schema={"s": pa.string()})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["s", "i", "f", "b", "t", "x"]),
                                st.one_of(st.none(), st.text(max_size=10), st.integers(-2**63, 2**63 - 1),
                                          st.floats(), st.booleans())), max_size=20))
def test_random_tables(rows):
    require_kernels()
    _same_table(rows)


@pytest.fixture(scope="module")
def day_files():
    with tempfile.TemporaryDirectory() as tmp:
        yield both_eras_day(tmp, DAY, 120)


def test_a_days_ingest_batches_are_the_same(day_files, kernels, monkeypatch):
    kernel_batches = [(rows, norm, quar) for rows, norm, quar in ingest.ingest_row_batches(day_files, DAY,
                                                                                            batch_size=50)]
    monkeypatch.setattr(ingest, "column_array", lambda values, dtype: pa.array(values, type=dtype))
    reference = list(ingest.ingest_row_batches(day_files, DAY, batch_size=50))
    assert len(kernel_batches) == len(reference) > 2
    for (rows, norm, quar), (want_rows, want_norm, want_quar) in zip(kernel_batches, reference, strict=True):
        assert rows == want_rows
        for got, want in ((norm, want_norm), (quar, want_quar)):
            got.validate(full=True)
            assert got.schema.equals(want.schema, check_metadata=True) and got.equals(want)
            assert _parquet(pa.Table.from_batches([got])) == _parquet(pa.Table.from_batches([want]))
    # every string column of the day is the kernel's own (none handed back to pyarrow)
    rows = [r for rows, _, _ in kernel_batches for r in rows]
    for f in NORMALIZED_SCHEMA:
        if f.type == STRING:
            assert _same([r[f.name] for r in rows]), f.name
    quarantined = [r for _, _, quar in kernel_batches for r in quar.to_pylist()]
    assert quarantined
    for f in QUARANTINE_SCHEMA:
        if f.type == STRING:
            assert _same([r[f.name] for r in quarantined]), f.name


def test_a_days_rows_conform_the_same(day_files, kernels):
    rows = [r for batch, _, _ in ingest.ingest_row_batches(day_files, DAY) for r in batch]
    assert len(rows) > 100
    _same_table(rows, NORMALIZED_SCHEMA)
    got = storage.conform(rows, NORMALIZED_SCHEMA)
    assert got.equals(pa.Table.from_pylist(rows, schema=NORMALIZED_SCHEMA))


def test_the_python_path_without_the_kernels():
    code = ("import pyarrow as pa; from oro_assets import native, storage; assert native.kernels is None; "
            "a = storage.string_array(['a', None, 'é']); assert a.equals(pa.array(['a', None, 'é'])); "
            "t = storage.table_from_rows([{'s': 'x'}], pa.schema([('s', pa.string())])); "
            "assert t.to_pylist() == [{'s': 'x'}]; print('ok')")
    env = {**os.environ, "ORO_NATIVE": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
