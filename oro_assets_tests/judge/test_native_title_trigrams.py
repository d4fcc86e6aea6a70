"""The native title-trigram index of the rule judge (``own_titles``, ``absorb_titles``, ``trigram_names`` in
``oro_assets/_native.c``) equals its Python references (``rule.own_titles_py``, ``absorb_titles_py``,
``trigram_names_py``): the same titles, owners (in the same order), first words and named products after every call,
or the same exception, for hostile titles and Hypothesis-random sequences of results; the same features and verdicts
on the judge fixtures and the suite's simulated day. Skips without the built extension, and fails instead under CI
(whose install builds it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import judge_fixtures as fx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from judged_support import judge_each, judged

from oro_assets import native
from oro_assets.judge import rule
from oro_assets_tests.native_support import outcomes, require_kernels

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("own_titles", "absorb_titles", "trigram_names")
DISPATCH = {name: getattr(rule, name) for name in NAMES}  # the dispatchers themselves
S = rule._SEVERAL



def _state(titles=None, owners=None, firsts=None):
    return {"titles": dict(titles or {}), "owners": None if owners is None else dict(owners),
            "firsts": set(firsts or ())}


def _seen(state: dict) -> tuple:
    owners = state["owners"]
    return (list(state["titles"].items()), None if owners is None else list(owners.items()), state["firsts"])


def _absorb_both(state: dict, new_titles) -> None:
    """absorb_titles on two copies of ``state``, native and reference: the same result, state, or exception; the
    reference's state kept."""
    mine = _state(state["titles"], state["owners"], state["firsts"])  # copies (keys and values are immutable)
    pair = outcomes(lambda: rule.absorb_titles_py(state["titles"], state["owners"], state["firsts"], new_titles),
                    lambda: native.kernels.absorb_titles(mine["titles"], mine["owners"], mine["firsts"], new_titles,
                                                         rule._title_trigrams, S))
    if pair is not None:
        assert pair[0] is pair[1] or pair[0] == pair[1]
        assert type(pair[1]) is bool
        if pair[0]:
            state["owners"] = mine["owners"] = None
    assert _seen(mine) == _seen(state)


def _rebuild_both(state: dict) -> None:
    """own_titles of the titles into empty indexes, native and reference: the same owners and first words."""
    want: tuple[dict, set] = ({}, set())
    got: tuple[dict, set] = ({}, set())
    rule.own_titles_py(*want, state["titles"].items())
    native.kernels.own_titles(*got, state["titles"].items(), rule._title_trigrams, S)
    assert list(got[0].items()) == list(want[0].items()) and got[1] == want[1]
    assert want[1] == {gram[0] for gram in want[0]}  # the first words of exactly the recorded trigrams
    state["owners"], state["firsts"] = want


def _names_both(state: dict, text_words: tuple, words_or_stop: frozenset) -> set:
    want, got = {"already"}, {"already"}
    rule.trigram_names_py(text_words, state["firsts"], state["owners"], words_or_stop, want)
    native.kernels.trigram_names(text_words, state["firsts"], state["owners"], words_or_stop, S, got)
    assert got == want
    return want


def _t(*words: str) -> tuple[str, ...]:
    return tuple(words)


RED = _t("red", "running", "shoes", "size", "9")
BLUE = _t("blue", "running", "shoes", "size", "9")


def test_a_day_of_hostile_titles(kernels):
    state = _state(owners={})
    _absorb_both(state, (("p1", RED), ("p2", BLUE)))  # shared trigrams: several owners
    assert state["owners"][("running", "shoes", "size")] is S
    assert state["owners"][("red", "running", "shoes")] == "p1"
    _absorb_both(state, (("p1", RED),))  # the same title again: nothing changes
    _absorb_both(state, (("p3", _t("lamp")), ("p4", _t("two", "words")), ("p5", ())))  # under three words: no trigram
    _absorb_both(state, (("p6", _t("a", "a", "a", "a")), ("p6", _t("a", "a", "a", "a"))))  # one repeated trigram
    _absorb_both(state, (("p7", _t("caf\u00e9", "\U0001f600", "\ud800", "x")),))
    _names_both(state, _t("the", "red", "running", "shoes", "and", "a", "a", "a", "a"), frozenset({"the"}))
    assert _names_both(state, _t("red", "running", "shoes"), frozenset()) == {"already", "p1"}
    assert _names_both(state, _t("red", "running", "shoes"), frozenset({"red", "running", "shoes"})) == {"already"}
    for stop in ({"red", "running"}, {"running", "shoes"}, {"red", "shoes"}):  # not all three: it names p1
        assert _names_both(state, _t("red", "running", "shoes"), frozenset(stop)) == {"already", "p1"}
    assert _names_both(state, _t("running", "shoes", "size", "9"), frozenset()) == {"already"}  # several owners
    _names_both(state, _t("red", "running"), frozenset())  # shorter than a trigram
    _names_both(state, (), frozenset())
    # a retitled product: the index is stale from there on (not updated for the products after it)
    _absorb_both(state, (("p8", _t("new", "desk", "lamp")), ("p1", _t("green", "running", "shoes")),
                         ("p9", _t("oak", "desk", "chair"))))
    assert state["owners"] is None
    _absorb_both(state, (("p10", _t("x", "y", "z")),))  # no index: only the titles
    _rebuild_both(state)
    assert state["owners"][("green", "running", "shoes")] == "p1" and ("red", "running", "shoes") not in state["owners"]
    _names_both(state, _t("the", "oak", "desk", "chair", "x", "y", "z"), frozenset())


def test_owners_of_none_and_odd_ids_are_read_as_the_reference_reads_them(kernels):
    state = _state(owners={("a", "b", "c"): None, ("d", "e", "f"): "q", ("x", "y", "z"): None})
    _absorb_both(state, ((None, _t("a", "b", "c", "d")), (7, _t("d", "e", "f")), ("q", _t("d", "e", "f", "g")),
                         ("r", _t("x", "y", "z"))))
    assert state["owners"][("a", "b", "c")] is None and state["owners"][("d", "e", "f")] is S
    assert state["owners"][("x", "y", "z")] == "r"  # an owner of None is no owner: the trigram is r's
    assert _names_both(state, _t("a", "b", "c", "d", "e", "f"), frozenset()) == {"already", None}
    state = _state(titles={"p": None}, owners={})  # a None title counts as no title (not a retitle)
    _absorb_both(state, (("p", _t("a", "b", "c")),))
    assert state["owners"] == {("a", "b", "c"): "p"}


def test_many_titles(kernels):
    titles = tuple((f"p{i}", _t("w", f"a{i % 50}", f"b{i % 7}", "x", f"c{i}")) for i in range(10_000))
    state = _state(owners={})
    _absorb_both(state, titles)
    _rebuild_both(state)
    words = tuple(w for _, t in titles[:500] for w in t)
    assert len(_names_both(state, words, frozenset({"w"}))) > 400


def test_shapes_the_kernels_refuse_and_helpers_that_fail(kernels):
    k = native.kernels
    for bad in ((("p1",),), ("p12",), 5):  # not (id, words) pairs: the reference cannot read them either
        with pytest.raises((TypeError, ValueError)):
            rule.absorb_titles_py({}, {}, set(), bad)
        with pytest.raises(TypeError):
            k.absorb_titles({}, {}, set(), bad, rule._title_trigrams, S)
    with pytest.raises(TypeError, match="tuple"):  # a pair that is not a tuple: refused (a result's are tuples)
        k.absorb_titles({}, {}, set(), (["p1", RED],), rule._title_trigrams, S)
    for args in (([], set(), {}, (), rule._title_trigrams, S), ({}, [], {}, (), rule._title_trigrams, S),
                 ({}, {}, [], (), rule._title_trigrams, S)):
        with pytest.raises(TypeError):
            k.absorb_titles(*args)
    with pytest.raises(TypeError):
        k.own_titles({}, set(), [["p", RED]], rule._title_trigrams, S)
    with pytest.raises(TypeError):
        k.trigram_names(list(RED), set(), {}, frozenset(), S, set())
    with pytest.raises(TypeError):
        k.trigram_names(RED, set(), {}, frozenset(), S)

    def failing(words):
        raise ValueError("no trigrams")

    with pytest.raises(ValueError, match="no trigrams"):
        k.own_titles({}, set(), [("p", RED)], failing, S)
    with pytest.raises(ValueError, match="no trigrams"):
        k.absorb_titles({}, {}, set(), [("p", RED)], failing, S)
    assert k.absorb_titles({}, None, set(), [("p", RED)], failing, S) is False  # no index: trigrams not asked for


def _judged(rows: list[dict], native_index: bool) -> tuple[list, list]:
    """Features of every row and the verdicts, with the index native or the references, caches cleared."""
    return judged(rows, **{name: DISPATCH[name] if native_index else getattr(rule, name + "_py") for name in NAMES})


@pytest.fixture
def compared(monkeypatch):
    """Every call the judge makes to the three dispatchers checked against the references; calls counted."""
    seen = {name: 0 for name in NAMES}

    def absorb(titles, owners, firsts, new_titles):
        state = {"titles": titles, "owners": owners, "firsts": firsts}
        before = _seen(_state(titles, owners, firsts))
        ref = {"titles": dict(titles), "owners": None if owners is None else dict(owners), "firsts": set(firsts)}
        want = rule.absorb_titles_py(ref["titles"], ref["owners"], ref["firsts"], new_titles)
        got = DISPATCH["absorb_titles"](titles, owners, firsts, new_titles)
        assert got == want and _seen(state)[0] == _seen(ref)[0] and firsts == ref["firsts"]
        assert owners is None or list(owners.items()) == list(ref["owners"].items()), before
        seen["absorb_titles"] += 1
        return got

    def own(owners, firsts, titles):
        titles = list(titles)
        ref: tuple[dict, set] = (dict(owners), set(firsts))
        rule.own_titles_py(*ref, titles)
        DISPATCH["own_titles"](owners, firsts, titles)
        assert list(owners.items()) == list(ref[0].items()) and firsts == ref[1]
        seen["own_titles"] += 1

    def names(text_words, firsts, owners, words_or_stop, named):
        ref = set(named)
        rule.trigram_names_py(text_words, firsts, owners, words_or_stop, ref)
        DISPATCH["trigram_names"](text_words, firsts, owners, words_or_stop, named)
        assert named == ref
        seen["trigram_names"] += 1

    monkeypatch.setattr(rule, "absorb_titles", absorb)
    monkeypatch.setattr(rule, "own_titles", own)
    monkeypatch.setattr(rule, "trigram_names", names)
    return seen


def test_every_fixture_is_judged_the_same(kernels, compared):
    rows = [builder()[0] for builder in fx.ALL_BUILDERS]
    judge_each(rows)
    assert compared["absorb_titles"] >= 20
    assert _judged(rows, True) == _judged(rows, False)


def test_a_simulated_day_judges_the_same(simulated_day, kernels, compared):
    rows = [row for row, _ in simulated_day]
    judge_each(rows)
    assert min(compared.values()) >= 50, compared
    assert _judged(rows, True) == _judged(rows, False)


WORD = st.sampled_from(["a", "b", "c", "red", "shoe", "caf\u00e9", "\U0001f600"])
TITLE = st.lists(WORD, max_size=6).map(tuple)
PID = st.sampled_from(["p1", "p2", "p3", "p4"])
STEP = st.one_of(st.lists(st.tuples(PID, TITLE), max_size=5).map(lambda t: ("absorb", tuple(t))),
                 st.just(("rebuild", None)),
                 st.tuples(st.lists(WORD, max_size=10).map(tuple), st.frozensets(WORD, max_size=3))
                 .map(lambda x: ("names", x)))


@settings(max_examples=400, deadline=None)
@given(st.lists(STEP, max_size=12), st.booleans())
def test_random_sequences_of_results_give_the_same_index(steps, indexed):
    require_kernels()
    state = _state(owners={} if indexed else None)
    for kind, arg in steps:
        if kind == "absorb":
            _absorb_both(state, arg)
        elif kind == "rebuild" or state["owners"] is None:
            _rebuild_both(state)
        else:
            _names_both(state, *arg)


def test_oro_native_0_forces_the_references():
    code = ("from oro_assets.judge import rule; assert rule._kernels is None; o, f = {}, set(); "
            "rule.own_titles(o, f, [('p', ('a', 'b', 'c'))]); print(o[('a', 'b', 'c')], sorted(f))")
    env = {**os.environ, "ORO_NATIVE": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "p ['a']"
