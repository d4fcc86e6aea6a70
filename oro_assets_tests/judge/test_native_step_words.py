"""The native ``step_words`` (``oro_assets/_native.c``) equals its Python reference, ``rule.step_words_py``: the
same result words and references for every step, the same features and verdicts, on the judge fixtures, the suite's
simulated day, hostile words and Hypothesis-random ones. Skips without the built extension, and fails instead under
CI (whose install builds it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import judge_fixtures as fx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from judged_support import judged

from oro_assets import native
from oro_assets.judge import rule
from oro_assets_tests.native_support import require_kernels

ROOT = Path(__file__).resolve().parents[2]
SETS = (rule.STOPWORDS, rule.AGENT_VOCABULARY, rule.RESULT_REFERENCES)
DISPATCH = rule.step_words  # the dispatcher itself (``compared`` wraps the module's name)



def _same(think_words, result_words, query_words, own_words) -> None:
    want = rule.step_words_py(think_words, result_words, query_words, own_words)
    got = native.kernels.step_words(think_words, result_words, query_words, own_words, *SETS)
    assert got is not None
    assert got == want and type(got) is tuple and [type(x) for x in got] == [list, list], think_words[:20]
    assert DISPATCH(think_words, result_words, query_words, own_words) == want


@pytest.fixture
def compared(monkeypatch):
    """rule.step_words checked against the reference on every call the judge makes; the calls counted."""
    seen = []

    def both(think_words, result_words, query_words, own_words):
        _same(think_words, result_words, query_words, own_words)
        seen.append(len(think_words))
        return DISPATCH(think_words, result_words, query_words, own_words)

    monkeypatch.setattr(rule, "step_words", both)
    return seen


def test_every_fixture_step_and_verdict_is_the_same(kernels, compared):
    rows = [builder()[0] for builder in fx.ALL_BUILDERS]
    native_run = judged(rows, _kernels=kernels)
    assert len(compared) >= 20
    assert native_run == judged(rows, _kernels=None)


def test_a_simulated_day_judges_the_same(simulated_day, kernels, compared):
    rows = [row for row, _ in simulated_day]
    features, verdicts = judged(rows, _kernels=kernels)
    assert len(compared) >= 300 and sum(compared) > 10_000
    assert (features, verdicts) == judged(rows, _kernels=None)
    assert any(f.result_words for fs in features for f in fs) and any(f.references for fs in features for f in fs)
    assert len({v.score for v in verdicts}) >= 3


STOP, AGENT, REFS = sorted(rule.STOPWORDS), sorted(rule.AGENT_VOCABULARY), sorted(rule.RESULT_REFERENCES)
UNICODE = ["é", "éé", "ééé", "😀😀", "😀😀😀", "ß", "ss", "ﬁx", "漢字", "漢字語", "\ud800ab", "a\udfff", "z", "Z", "zz",
           "zzz", "0", "000", "１２３", "ǆ", "\u00e9t\u00e9", "e\u0301te\u0301", "x" * 1_000_000]
ALL = [*STOP[:30], *AGENT[:30], *REFS, *UNICODE, "ab", "abc", "abcd", "kifohas", "lip", "tint", "glossy"]
HOSTILE = [
    ((), set(), frozenset(), set()),
    (("abc",), set(), frozenset(), set()),
    (("abc",), {"abc"}, frozenset(), set()),
    (("abc", "abc", "abd", "ab"), {"abc", "abd", "ab"}, frozenset(), set()),  # duplicates; under 3 characters
    (tuple(ALL), set(ALL), frozenset(), set()),  # stopwords, agent vocabulary and references all in the results
    (tuple(ALL), set(ALL), frozenset(ALL[::2]), set(ALL[1::3])),  # the query's and the agent's own words
    (tuple(REFS), set(), frozenset(REFS[:3]), set(REFS)),  # references need not be in the results
    (tuple(UNICODE * 3), set(UNICODE), frozenset({"ß"}), {"😀😀😀"}),  # lengths in code points; surrogates
    (tuple(reversed(UNICODE)), set(UNICODE), frozenset(), set()),  # sorted by code point, as sorted() sorts
    (tuple(f"w{i}" for i in range(200_000)), {f"w{i}" for i in range(0, 200_000, 3)}, frozenset({"w9"}), {"w12"}),
    (("",) * 5 + ("results",), {"", "results"}, frozenset(), set()),
]


@pytest.mark.parametrize("args", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_words_are_the_same(args, kernels):
    _same(*args)


def test_shapes_the_kernel_leaves_to_the_reference(kernels):
    class Word(str):
        pass

    assert kernels.step_words(["abc"], {"abc"}, frozenset(), set(), *SETS) is None  # a list, not a tuple
    assert kernels.step_words((Word("abc"),), {"abc"}, frozenset(), set(), *SETS) is None
    assert kernels.step_words(("abc", 3), {"abc"}, frozenset(), set(), *SETS) is None
    assert rule.step_words(("abc", Word("abd")), {"abc", "abd"}, frozenset(), set()) == (["abc", "abd"], [])
    with pytest.raises(TypeError):
        kernels.step_words(("abc",), ["abc"], frozenset(), set(), *SETS)
    with pytest.raises(TypeError):
        kernels.step_words(("abc",), {"abc"}, frozenset(), set())
    with pytest.raises(TypeError):  # an unhashable word, as the reference would raise
        rule.step_words_py(([],), set(), frozenset(), set())


WORD = st.one_of(st.sampled_from([w for w in ALL if len(w) < 100]),
                 st.text(alphabet=st.sampled_from("abzé漢😀\ud800ß"), max_size=5))


@settings(max_examples=400, deadline=None)
@given(st.lists(WORD, max_size=60), st.sets(WORD, max_size=30), st.sets(WORD, max_size=10), st.sets(WORD, max_size=10))
def test_random_words_are_the_same(think, results, query, own):
    require_kernels()
    _same(tuple(think), set(results) | set(think[::2]), frozenset(query), set(own))


def test_oro_native_0_forces_the_reference():
    code = "from oro_assets.judge import rule; print(rule._kernels is None)"
    env = {**os.environ, "ORO_NATIVE": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "True"
