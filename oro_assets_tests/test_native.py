"""The native kernels (``oro_assets/_native.c``: MinHash, whitespace collapse) equal their Python references, and the switch that forces the
references (``ORO_NATIVE=0``). The comparisons need the built extension (``pip install -e .`` builds it): they skip
without it, but never under CI, whose install builds it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oro_assets import native
from oro_assets.curation import dedup
from oro_assets.settings import SettingsError, native_kernels
from oro_assets_tests.native_support import outcomes, require_kernels

ROOT = Path(__file__).resolve().parents[1]


_kernels = require_kernels


def _native_signature(text: str) -> np.ndarray:
    out = np.empty(dedup.NUM_PERM, dtype=np.uint32)
    _kernels().minhash_into(text, dedup._A, dedup._B, dedup.MAX_WORDS, out)
    return out


def _same_signature(text: str) -> None:
    """The native signature equals the reference's, or both raise the same error."""
    both = outcomes(lambda: dedup.minhash_signature_py(text), lambda: _native_signature(text))
    if both is None:
        return
    want, got = both
    assert got.dtype == np.uint32 and got.tolist() == want.tolist(), repr(text[:200])


# Every character str.split() cuts at (Unicode whitespace), and characters that look like it but are not.
SPACES = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
NOT_SPACES = "\u200b\u2060\ufeff\x00\x7f\u180e"

HOSTILE = [
    "", " ", SPACES, SPACES * 3 + "a" + SPACES, "a", "a b", "a b c", "  leading and trailing  ",
    "tabs\tand\nnewlines\r\nand\x0bvertical\x0cfeeds", "unit\x1fseparators\x1cand\x1dfriends\x1e",
    "nbsp\u00a0inside\u2003em\u3000ideographic\u2028line\u2029para\x85nel",
    "zero\u200bwidth\u2060joiner\ufeffbom\x00nul\x7fdel\u180emongolian are not spaces",
    "latin-1 café naïve ÿ£ \xe9\xff", "ünïcode wörds ünïcode wörds\u00a0split",
    "CJK 漢字 かな 한국어 words", "astral 😀 𝔘𝔫𝔦 🏳️‍🌈 \U0010ffff \U00010000", "combining e\u0301 a\u0308 o\u0338",
    "mixed kinds: a é 漢 😀 in one word: aé漢😀",
    "find_product {\"q\": \"red shoes\"} [{\"product_id\": \"123\"}] ok",
    " ".join(f"w{i % 37}" for i in range(500)),
    " ".join(f"w{i}" for i in range(dedup.MAX_WORDS + 500)),  # over MAX_WORDS: the first ones only
    " ".join(f"é{i}" for i in range(dedup.MAX_WORDS + 7)),
    "x" * 1_000_000, ("word " * 200_000), "é" * 300_000 + " " + "😀" * 100_000,
    "a" * 7 + " " + "b" * 8 + " " + "c" * 9 + " " + "d" * 15 + " " + "e" * 16 + " " + "f" * 17,  # crc step edges
    # surrogates: str.encode() refuses them, so the reference raises; past MAX_WORDS they are never hashed
    "lone \ud800 surrogate", "pair \ud83d\ude00 as two", "a" + "\udfff",
    " ".join(["w"] * dedup.MAX_WORDS) + " \ud800 after the limit",
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_minhash_kernel_equals_the_reference_on_hostile_text(text):
    _same_signature(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab é漢😀" + SPACES + NOT_SPACES + "\ud800"), max_size=300))
def test_minhash_kernel_equals_the_reference_on_random_text(text):
    _same_signature(text)


def _same_collapse(text: str) -> None:
    want = dedup.collapse_whitespace_py(text)
    got = _kernels().collapse_whitespace(text)
    assert type(got) is str and got == want, repr(text[:200])
    assert got.isascii() == want.isascii()  # the same (smallest) representation: "a\u3000b" collapses to ASCII


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_collapse_kernel_equals_the_reference_on_hostile_text(text):
    _same_collapse(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab é漢😀" + SPACES + NOT_SPACES + "\ud800"), max_size=300))
def test_collapse_kernel_equals_the_reference_on_random_text(text):
    _same_collapse(text)


def _same_word_count(text: str) -> None:
    """The native word count is len(text.split()); the gates' estimate is the reference's (or both raise alike)."""
    from oro_assets.curation import gates

    got = _kernels().word_count(text)
    assert type(got) is int and got == len(text.split()), repr(text[:200])
    both = outcomes(lambda: gates.estimate_tokens_py(text), lambda: gates.estimate_tokens(text))
    if both is not None:
        assert both[1] == both[0]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_word_count_kernel_equals_the_reference_on_hostile_text(text):
    _same_word_count(text)


def test_word_count_cuts_at_every_unicode_space_and_only_there():
    kernel = _kernels().word_count
    for c in range(0x110000):
        text = f"a{chr(c)}b"
        assert kernel(text) == len(text.split()) == (2 if chr(c).isspace() else 1)
    with pytest.raises(TypeError):
        _kernels().word_count(b"a b")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab é漢😀" + SPACES + NOT_SPACES + "\ud800"), max_size=300))
def test_word_count_kernel_equals_the_reference_on_random_text(text):
    _same_word_count(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=12), max_size=60), st.sampled_from([" ", "\n", "\u3000", "  \t"]))
def test_minhash_kernel_equals_the_reference_on_random_words(words, sep):
    _same_signature(sep.join(words))


def test_minhash_kernel_equals_the_reference_on_a_simulated_day(tmp_path):
    """The texts dedup hashes: every normalised trace of a small simulated day (both recorder eras)."""
    from oro_assets.arena import recorder
    from oro_assets.arena.firehose import simulate_day
    from oro_assets.traces.ingest import iter_normalized
    from oro_assets.traces.reader import Quarantined, iter_partition_files

    _kernels()
    day = "2026-01-05"
    simulate_day(day, 60, tmp_path, seed=15, workers=1,
                 recorder_shares={recorder.ERA_A6B1CF3: 0.5, recorder.ERA_LATER: 0.5})
    seen = 0
    for item in iter_normalized(iter_partition_files(str(tmp_path), day), day):
        if isinstance(item, Quarantined):
            continue
        row, parsed = item
        _same_signature(dedup.dedup_text(parsed["messages"]))
        _same_collapse(row["messages"])
        seen += 1
    assert seen >= 40


def test_the_dispatchers_use_the_kernels_for_str_only():
    _kernels()
    text = "red shoes size 42 from shop 7"
    assert dedup.minhash_signature(text).tolist() == dedup.minhash_signature_py(text).tolist()

    class Text(str):  # a str subclass takes the reference path (whatever its methods do)
        pass

    assert dedup.minhash_signature(Text(text)).tolist() == dedup.minhash_signature_py(text).tolist()
    assert dedup.collapse_whitespace(" a\u3000 b ") == "a b" == dedup.collapse_whitespace(Text(" a\u3000 b "))


@pytest.mark.parametrize("bad", ["a", "b", "out"])
def test_the_kernel_refuses_buffers_of_the_wrong_shape(bad):
    kernels = _kernels()
    a, b, out = dedup._A, dedup._B, np.empty(dedup.NUM_PERM, dtype=np.uint32)
    wrong = {"a": np.zeros(3, dtype=np.float64), "b": dedup._B[:10], "out": np.empty(dedup.NUM_PERM, dtype=np.uint64)}
    args = {"a": a, "b": b, "out": out, bad: wrong[bad]}
    with pytest.raises(ValueError):
        kernels.minhash_into("a b c", args["a"], args["b"], dedup.MAX_WORDS, args["out"])
    with pytest.raises(TypeError):
        kernels.minhash_into(b"bytes", a, b, dedup.MAX_WORDS, out)
    with pytest.raises(TypeError):
        kernels.collapse_whitespace(b"bytes")
    with pytest.raises(BufferError):  # read-only output
        kernels.minhash_into("a b c", a, b, dedup.MAX_WORDS, bytes(4 * dedup.NUM_PERM))


def _in_fresh_process(code: str, **env: str) -> str:
    return subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_oro_native_0_forces_the_python_path():
    code = ("from oro_assets import native; from oro_assets.curation import dedup; "
            "print(native.enabled(), dedup._kernels is None, native.why)")
    assert _in_fresh_process(code, ORO_NATIVE="0") == "False True switched off (ORO_NATIVE)"
    for value in ("off", "False", " no "):
        assert _in_fresh_process(code, ORO_NATIVE=value).startswith("False True")


def test_a_bad_oro_native_value_is_refused(monkeypatch):
    for value, on in (("", True), ("1", True), ("ON", True), ("yes", True), ("0", False)):
        monkeypatch.setenv("ORO_NATIVE", value)
        assert native_kernels() is on
    monkeypatch.setenv("ORO_NATIVE", "maybe")
    with pytest.raises(SettingsError, match="ORO_NATIVE='maybe' is not a switch"):
        native_kernels()


def test_a_stale_build_is_not_used(tmp_path, monkeypatch):
    """A module not built from the source beside it (the source edited since) is refused, with the reason."""
    _kernels()
    edited = tmp_path / "_native.c"
    edited.write_text("/* edited */\n")
    monkeypatch.setattr(native, "_SOURCE", edited)
    kernels, why = native._load()
    assert kernels is None and why.startswith("stale build")
    monkeypatch.setattr(native, "_SOURCE", tmp_path / "absent.c")  # an installed wheel ships no source
    assert native._load()[0] is not None
