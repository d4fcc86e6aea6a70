"""The native ``ascii_words_numbers`` (``oro_assets/_native.c``) equals its Python reference,
``rule.ascii_words_numbers_py`` (the judge's ``words`` and ``numbers``): the same words and the same numbers (values,
their types, decimal flags, order) of hostile ASCII texts and Hypothesis-random ones, None for any other text, and the
same features and verdicts on the judge fixtures and the suite's simulated day. Skips without the built extension, and
fails instead under CI (whose install builds it)."""

from __future__ import annotations

import math
import os
import string
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
from oro_assets_tests.native_support import KernelsWith, require_kernels

ROOT = Path(__file__).resolve().parents[2]



def _same(text: str) -> None:
    got = native.kernels.ascii_words_numbers(text)
    if not text.isascii():
        assert got is None
        return
    want = rule.ascii_words_numbers_py(text)
    assert type(got) is tuple and [type(x) for x in got] == [tuple, tuple]
    assert repr(got) == repr(want), text[:200]  # repr: nan, -0.0 and inf compare as written
    assert all(type(w) is str and w.isascii() for w in got[0])
    assert all(type(v) is float and type(d) is bool for v, d in got[1])


HOSTILE = [
    "", " ", "no digits here", string.printable, string.punctuation, "".join(map(chr, range(128))),
    "price 12.99 and 1,299.00, or 7.", "1,000.50x", "1.5.3", "12,", "1,2,a", "1,,2", ",5", "5,", "5,,", ".5", "a.5",
    "x9 9x 9_ _9 9-9 9.9.9 9..9", "v1.2.3 3.14abc abc3.14 3.14_", "00012 0.000 0,0", "a1b2c3 123abc",
    "1" * 400, "9" * 400 + ".5", "1." + "0" * 500, ",".join(["1"] * 300), "1,234,567.891011 and (42) [3] {7}",
    "tab\t12\nnewline 13\r14\x0015\x7f16", "under_score 12_34 _1", "dots.1 .1. 1.", "1e10 2E5 0x1F",
    " ".join(str(i) for i in range(5000)), "caf\u00e9 12", "\u0661\u0662 arabic digits", "\U0001f600 7",
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_texts_give_the_same_words_and_numbers(text, kernels):
    _same(text)


def test_edges_the_numbers_must_keep(kernels):
    words, numbers = native.kernels.ascii_words_numbers("1,000.50x 12, 1,2,a " + "9" * 400)
    assert numbers[:3] == ((1000.0, False), (12.0, False), (12.0, False))
    assert math.isinf(numbers[3][0])  # float() of 400 nines: what the reference reads
    assert words[:3] == ("1", "000", "50x")
    with pytest.raises(TypeError):
        native.kernels.ascii_words_numbers(b"12")


def _without_this_kernel() -> KernelsWith:
    """The kernels, with ascii_words_numbers declining every text (the reference reads them all)."""
    return KernelsWith("ascii_words_numbers", lambda text: None)


@pytest.fixture
def compared(monkeypatch):
    """Every text the judge reads checked against the reference as it is read; the texts counted."""
    seen = []
    kernel = native.kernels.ascii_words_numbers if native.kernels is not None else None

    def both(text):
        _same(text)
        seen.append(text)
        return kernel(text)

    monkeypatch.setattr(rule, "_kernels", KernelsWith("ascii_words_numbers", both))
    return seen


def test_every_fixture_is_judged_the_same(kernels, compared):
    rows = [builder()[0] for builder in fx.ALL_BUILDERS]
    judge_each(rows)
    assert len(compared) >= 20
    assert judged(rows, _kernels=kernels) == judged(rows, _kernels=_without_this_kernel())


def test_a_simulated_day_is_judged_the_same(simulated_day, kernels, compared):
    rows = [row for row, _ in simulated_day]
    judge_each(rows)
    assert len(compared) >= 200
    assert judged(rows, _kernels=kernels) == judged(rows, _kernels=_without_this_kernel())


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet=st.sampled_from("0123456789,.,._ aZ-\n\u00e9"), max_size=60))
def test_random_texts_give_the_same_words_and_numbers(text):
    require_kernels()
    _same(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=80))
def test_random_ascii_gives_the_same_words_and_numbers(text):
    require_kernels()
    _same(text)


def test_oro_native_0_forces_the_reference():
    code = ("from oro_assets.judge import rule; assert rule._kernels is None; "
            "print(rule._text_features('a 1,5 b').numbers)")
    env = {**os.environ, "ORO_NATIVE": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "((15.0, False),)"
