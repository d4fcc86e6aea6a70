"""The native ``collect_ids`` (``oro_assets/_native.c``) equals its Python reference, ``formats._collect_ids``: the
product ids the normaliser reads from every tool result and search response come out the same, in the same order,
on a simulated day of both recorder eras, hostile values and Hypothesis-random ones. Skips without the built
extension, and fails instead under CI (whose install builds it)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oro_assets import native
from oro_assets.traces import formats, normalize
from oro_assets_tests.native_support import Dict, List, Str, outcomes, require_kernels

ROOT = Path(__file__).resolve().parents[2]
DEPTH = formats._MAX_ID_DEPTH



def _reference(value):
    out: dict = {}
    formats._collect_ids(value, out, 0)
    return list(out)


def _same(value) -> None:
    """The kernel's ids equal the reference's (values, types and order), or both raise alike; and the dispatcher
    equals the reference end to end."""
    both = outcomes(lambda: _reference(value), lambda: native.kernels.collect_ids(value, DEPTH))
    if both is None:
        return
    want, got = both
    assert got == want
    assert [type(v) for v in got] == [type(v) for v in want]
    assert formats.product_ids(value) == formats.product_ids_py(value)


def _nested(depth: int, leaf, *, via: str) -> object:
    """``leaf`` under ``depth`` levels of lists or product-less dicts."""
    value = leaf
    for i in range(depth):
        value = [value] if via == "list" or (via == "mixed" and i % 2) else {"k": value, "product_id": None}
    return value


HOSTILE = [
    None, 0, 1.5, "", "x", True, [], {}, [[]], [{}], [None, 1, "a", 2.0],
    # product ids of every kind: non-empty str, int (not bool), and the rest skipped
    [{"product_id": "a"}, {"product_id": ""}, {"product_id": 7}, {"product_id": -0}, {"product_id": True},
     {"product_id": False}, {"product_id": 1.0}, {"product_id": ["b"]}, {"product_id": {"product_id": "c"}}],
    {"product_id": "top", "items": [{"product_id": "not read"}]},
    {"product_id": 2**70}, {"product_id": -(2**63) - 1}, [{"product_id": 10**300}],
    # a product is not searched further; a product_id of None (or absent) is
    [{"product_id": "p", "related": [{"product_id": "q"}]}, {"product_id": None, "related": [{"product_id": "r"}]}],
    {"a": {"b": [{"c": {"product_id": "deep"}}]}, "z": [{"product_id": "after"}]},
    # first-seen order, repeats kept once, str and int spellings of one id merged
    [{"product_id": "2"}, {"product_id": "1"}, {"product_id": 2}, {"product_id": "1"}, {"product_id": 3}],
    # text of every width
    [{"product_id": "é"}, {"product_id": "😀"}, {"product_id": "\ud800"}, {"product_id": "\x00"},
     {"product_id": "ａ"}, {"product_id": " "}],
    # subclasses are not what the reference reads (exact-type tests)
    [{"product_id": Str("s")}], Dict(product_id="d"), [Dict(product_id="d")], List([{"product_id": "l"}]),
    [List([{"product_id": "l"}])], {"k": Dict(product_id="d"), "j": List([{"product_id": "l"}])},
    # a dict whose product_id key is not the first, other keys of every type
    {1: {"product_id": "i"}, None: [{"product_id": "n"}], "product_id": None, (1, 2): [{"product_id": "t"}]},
    # tuples and sets are not walked
    ({"product_id": "t"},), [({"product_id": "t"},)], {"k": ({"product_id": "t"},)}, [{"product_id": "x"}, {1, 2}],
    # large: 100k products, a 1 MB id, 200k repeats of one id
    [{"product_id": str(i), "title": "t"} for i in range(100_000)], [{"product_id": "y" * (1 << 20)}],
    [{"product_id": "same"}] * 200_000,
]
# the depth limit's edge, reached through lists, product-less dicts and both
for _via in ("list", "dict", "mixed"):
    for _depth in (DEPTH - 1, DEPTH, DEPTH + 1, DEPTH + 2, 40, 500):
        HOSTILE.append(_nested(_depth, {"product_id": f"{_via}{_depth}"}, via=_via))
        HOSTILE.append(_nested(_depth, [{"product_id": f"{_via}{_depth}l"}], via=_via))


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_values_give_the_same_ids(value, kernels):
    _same(value)


def test_the_depth_limit_is_the_references():
    """The edge is real: ids just inside the limit are found and ids just past it are not, both ways (a product in
    the innermost of DEPTH + 1 lists is read by the list at depth DEPTH)."""
    inside = _nested(DEPTH + 1, {"product_id": "in"}, via="list")
    past = _nested(DEPTH + 2, {"product_id": "out"}, via="list")
    assert _reference(inside) == ["in"]
    assert _reference(past) == []
    if native.kernels is not None:
        assert native.kernels.collect_ids(inside, DEPTH) == ["in"]
        assert native.kernels.collect_ids(past, DEPTH) == []
        assert native.kernels.collect_ids(past, DEPTH + 1) == ["out"]


def test_an_int_past_the_digit_limit_raises_alike(kernels):
    huge = [{"product_id": 10 ** (sys.get_int_max_str_digits() + 5)}]
    _same(huge)
    with pytest.raises(ValueError):
        kernels.collect_ids(huge, DEPTH)


def test_the_kernel_refuses_bad_arguments(kernels):
    for depth in (-1, 65, 2**70):
        with pytest.raises((ValueError, OverflowError)):
            kernels.collect_ids([], depth)
    with pytest.raises(TypeError):
        kernels.collect_ids([], "6")
    with pytest.raises(TypeError):
        kernels.collect_ids([])
    with pytest.raises(TypeError):
        kernels.collect_ids([], 6, 7)
    assert kernels.collect_ids([{"product_id": "a"}], 0) == ["a"]
    assert kernels.collect_ids([[{"product_id": "a"}]], 0) == []


def test_text_results_are_read_by_the_reference_either_way():
    """JSON text is parsed in Python before the walk; other text gives no ids."""
    for text in ('[{"product_id": "a"}]', '  {"product_id": 5}', "[1,", "plain", "", "  ", '"[]"', Str("[]")):
        assert formats.product_ids(text) == formats.product_ids_py(text)
    assert formats.product_ids('\n [{"product_id": "a"}, {"product_id": "a"}]') == ["a"]


def test_a_simulated_day_gives_the_same_ids(kernels, monkeypatch):
    """Every tool result and search response of a simulated day of both recorder eras, compared as the normaliser
    reads it; and every normalised row the same with the kernel as with the reference."""
    from oro_assets.arena import recorder
    from oro_assets.arena.firehose import simulate_day
    from oro_assets.traces.ingest import iter_normalized
    from oro_assets.traces.reader import iter_partition_files

    seen: list = []
    dispatch = formats.product_ids

    def both(value):
        want = formats.product_ids_py(value)
        assert dispatch(value) == want
        seen.append(want)
        return want

    day = "2026-01-05"
    with tempfile.TemporaryDirectory() as tmp:
        simulate_day(day, 80, tmp, seed=15, workers=1,
                     recorder_shares={recorder.ERA_A6B1CF3: 0.5, recorder.ERA_LATER: 0.5})
        files = iter_partition_files(tmp, day)
        native_rows = [r if isinstance(r, tuple) else r.to_row() for r in iter_normalized(files, day)]
        monkeypatch.setattr(formats, "_kernels", None)
        monkeypatch.setattr(normalize, "_kernels", None)  # walk_steps' kernel walks a tool result's ids itself
        reference_rows = [r if isinstance(r, tuple) else r.to_row() for r in iter_normalized(files, day)]
        monkeypatch.setattr(formats, "_kernels", native.kernels)
        monkeypatch.setattr(normalize, "product_ids", both)
        monkeypatch.setattr(formats, "product_ids", both)
        assert [r if isinstance(r, tuple) else r.to_row() for r in iter_normalized(files, day)] == reference_rows
    assert native_rows == reference_rows
    assert len(native_rows) >= 60
    assert len(seen) > 200 and sum(map(len, seen)) > 1000  # results and responses with ids were read


JSON_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
                        st.text(alphabet=st.sampled_from("ab1 é😀\ud800"), max_size=4))
PID = st.one_of(JSON_SCALAR, st.sampled_from(["", "p1", "p2", 1, 2, True]))
KEY = st.sampled_from(["product_id", "product_id", "title", "items", "k", ""])
VALUE = st.recursive(
    JSON_SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(KEY, st.one_of(inner, PID), max_size=4),
        st.lists(st.fixed_dictionaries({"product_id": PID}, optional={"x": inner}), max_size=4)),
    max_leaves=40)


@settings(max_examples=400, deadline=None)
@given(VALUE)
def test_random_values_give_the_same_ids(value):
    require_kernels()
    _same(value)


def test_the_dispatcher_uses_the_kernel_and_oro_native_0_the_reference():
    code = "from oro_assets.traces import formats; print(formats._kernels is None)"
    env = {**os.environ, "ORO_NATIVE": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "True"
    assert (formats._kernels is None) == (native.kernels is None)
