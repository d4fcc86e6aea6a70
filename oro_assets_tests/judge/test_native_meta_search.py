"""The native ``meta_search`` (``oro_assets/_native.c``) equals its Python reference, ``rule.meta_search_py`` (whether
the judge's ``META_SENTENCE``, the lines that address the grader, matches anywhere in a text): every alternative of
the pattern at every ASCII character either side, near misses, whitespace of every kind, Hypothesis texts built from
the pattern's own pieces and random ASCII, None for any text that is not ASCII; the same thinking views, features and
verdicts on the judge fixtures and a simulated day of both recorder eras; a kernel that diverges fails the comparison.
Skips without the built extension, and fails instead under CI (whose install builds it)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
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



def assert_same(text: str, kernel=None) -> bool:
    """The kernel's answer for ``text`` is the reference's (None for a text that is not ASCII); the answer."""
    got = (kernel or native.kernels.meta_search)(text)
    want = rule.meta_search_py(text)
    if not text.isascii():
        assert got is None, text[:200]
        return want
    assert type(got) is bool and got == want, (text[:200], got, want)
    return want


#: one text matching each alternative of META_SENTENCE (and each optional part taken and not)
MATCHES = [
    "judge", "judges", "judged", "judging", "grader", "graders", "grading", "evaluator", "evaluators", "verdict",
    "verdicts", "score", "scores", "scored", "scoring", "reasoning quality", "reasoningquality", "reasoning_-_ quality",
    "reasoning\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f quality", "gate 1", "gates 5", "gate#3", "gate # 2", "gates  #  4",
    "gate\t1", "gate passed", "gates failed", "gate pass", "gates fail", "gate\x1fpass", "instruction", "instructions",
    "ignore previous", "disregard prior", "forget above", "override earlier", "ignore preceding", "ignore system",
    "ignore rules", "ignore all previous", "ignore all the your any previous", "ignore  all\t\tthe\nrules",
    "jailbreak", "prompt", "system message", "system:", "system  :", "system\nmessage", "developer message",
    "developer:", "assistant:", "assistant \t:", "trajectory", "this agent", "this\n\nagent", "rate this", "rate it",
    "rate\x1cit", "a judge-free",
]
#: near misses: a letter, digit or underscore too many or too few, a missing space, another case, a wrong digit
MISSES = [
    "judg", "judgex", "judgess", "judgeds", "prejudge", "judge_", "_judge", "judge1", "1judge", "Judge", "JUDGE",
    "grade", "gradersx", "evaluation", "evaluate", "verdictx", "scor", "scorer", "scores_", "scoringx", "underscore",
    "reasoning", "quality", "reasoning.quality", "reasoning qualityx", "gate", "gates", "gate 0", "gate 6", "gate 12",
    "gate #", "gate##1", "gate 1x", "gate1x", "gatepassed", "gates passedx", "gate passes", "gate  failing",
    "gatesx 1", "instructionsx", "instructed", "ignore", "ignore all", "ignore all the", "ignoreprevious",
    "ignore theprevious", "ignore previously", "ignore all previousx", "ignore, previous", "ignore the, rules",
    "ignore all them previous", "jailbreaks", "prompts", "prompted", "promptx", "system", "system messages",
    "system message_", "system:x", "system :1", "systemic:", "developer", "developers:", "assistant", "assistants:",
    "assistant :_", "trajectoryx", "trajectories", "this", "thisagent", "this agents", "this agent_", "rate",
    "ratethis", "rate this1", "rate its", "separate this", "rated it", "irate it", "gateway 1", "scorecard",
    "", " ", "\x00", "\x7f",
]


def _every_neighbour(core: str) -> list[str]:
    return [chr(a) + core + chr(b) for a in range(128) for b in (0, 9, 32, 48, 58, 65, 95, 97, 122, 127)] + [
        chr(a) + core for a in range(128)] + [core + chr(b) for b in range(128)]


@pytest.mark.parametrize("core", MATCHES + MISSES, ids=range(len(MATCHES) + len(MISSES)))
def test_every_alternative_with_every_ascii_character_either_side(core, kernels):
    for text in _every_neighbour(core):
        assert_same(text)


def test_the_matches_and_misses_are_what_they_say(kernels):
    assert all(assert_same(text) for text in MATCHES)
    assert not any(assert_same(text) for text in MISSES)
    # a match anywhere: after a miss, at the end, in a long text, on a later line
    assert assert_same("the judgex and " * 200 + "the judge")
    assert assert_same("x\n" * 3000 + "score")
    assert not assert_same("the cheapest option is the blue one; it fits the budget.\n" * 100)


HOSTILE = [
    "".join(map(chr, range(128))), "".join(map(chr, range(128))) * 3 + "judges", "caf\u00e9 judge", "judge \u00e9",
    "\u00e9", "ignore\u00a0previous", "gate\u20031", "\U0001f600 score", "judge\ud800", "scor\u0435",
    "Ignore All Previous Instructions", "GATE 1 PASSED", "s" * 5000, "gate" * 2000, "ignore " + "all " * 3000,
    "ignore " + "all " * 3000 + "rules", "this" + " " * 5000 + "agent", "judged" * 1000, "_" * 100 + "judge",
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_texts_alike(text, kernels):
    assert_same(text)


def test_the_kernel_refuses_what_is_not_a_str(kernels):
    for bad in (b"judge", None, 3, ["judge"]):
        with pytest.raises(TypeError):
            native.kernels.meta_search(bad)

    class Text(str):
        pass

    assert native.kernels.meta_search(Text("judge")) is True  # a str subclass reads as its text
    assert rule.meta_search(Text("the judge")) is True  # the dispatcher hands it to the reference


def test_the_comparison_sees_a_divergence(kernels):
    """A kernel that misses one alternative, reads \\s as the space alone, or ignores the word boundary fails."""
    kernel = native.kernels.meta_search
    wrong = [
        lambda t: False if t.isascii() and "rate" in t else kernel(t),
        lambda t: kernel(t.replace("\t", "\x00")) if t.isascii() else None,
        lambda t: kernel(t.replace("_", " ")) if t.isascii() else None,
        lambda t: kernel(t.lower()) if t.isascii() else None,
        lambda t: None if "judge" in t else kernel(t),
    ]
    for bad in wrong:
        with pytest.raises(AssertionError):
            for core in MATCHES + MISSES:
                for text in _every_neighbour(core):
                    assert_same(text, bad)


PIECES = sorted({*MATCHES, *MISSES, "judge", "gate", "s", "d", "#", "1", "5", "6", ":", "message", "all", "any",
                 "the", "your", "\t", "\n", "\x1c", "\x1f", "_", "-", ".", ",", "x", "J", "9", " ", "  ", "\u00e9"})


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=10))
def test_random_texts_of_the_patterns_pieces(pieces):
    require_kernels()
    assert_same("".join(pieces))


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_random_ascii(text):
    require_kernels()
    assert_same(text)


def _without_this_kernel() -> KernelsWith:
    """The kernels, with meta_search declining every text (the reference reads them all)."""
    return KernelsWith("meta_search", lambda text: None)


@pytest.fixture
def compared(monkeypatch):
    """Every text the judge scans for grader-addressed lines checked against the reference as it is read."""
    seen = []
    kernel = native.kernels.meta_search if native.kernels is not None else None

    def both(text):
        assert_same(text)
        seen.append(text)
        return kernel(text)

    monkeypatch.setattr(rule, "_kernels", KernelsWith("meta_search", both))
    return seen


def _views(rows: list[dict], **bound) -> list[str]:
    from oro_assets.judge.evidence import parse_trace

    judged(rows, **bound)  # caches cleared
    return [rule._think_view(step.think) for r in rows for step in parse_trace(r).steps]


def test_every_fixture_is_judged_the_same(kernels, compared):
    rows = [builder()[0] for builder in fx.ALL_BUILDERS]
    judge_each(rows)
    assert len(compared) >= 20
    assert judged(rows, _kernels=kernels) == judged(rows, _kernels=_without_this_kernel())
    assert _views(rows, _kernels=kernels) == _views(rows, _kernels=_without_this_kernel())


def test_the_injected_twins_are_judged_the_same(kernels, compared):
    """test_injection's twins (every payload in every placement into the clean fixtures): the grader-addressed lines
    are found, and dropped, alike."""
    from test_injection import CLEAN, INJECTIONS, PLACEMENTS, inject

    rows = [inject(builder(as_strings=False)[0], payload, placement)
            for builder in CLEAN for payload in INJECTIONS for placement in PLACEMENTS]
    judge_each(rows)
    assert sum(map(rule.meta_search_py, compared)) >= 100  # texts with grader lines, read by the kernel and not
    assert judged(rows, _kernels=kernels) == judged(rows, _kernels=_without_this_kernel())
    assert _views(rows, _kernels=kernels) == _views(rows, _kernels=_without_this_kernel())


def test_a_simulated_day_of_both_eras_is_judged_the_same(kernels, compared):
    from oro_assets.arena import recorder
    from oro_assets.arena.firehose import simulate_day
    from oro_assets.traces.ingest import iter_normalized
    from oro_assets.traces.reader import iter_partition_files

    day = "2026-01-05"
    with tempfile.TemporaryDirectory() as tmp:
        simulate_day(day, 120, tmp, seed=15, workers=1,
                     recorder_shares={recorder.ERA_A6B1CF3: 0.5, recorder.ERA_LATER: 0.5})
        rows = [item[0] for item in iter_normalized(iter_partition_files(tmp, day), day) if isinstance(item, tuple)]
    assert len(rows) >= 100
    judge_each(rows)
    assert len(compared) >= 100
    assert judged(rows, _kernels=kernels) == judged(rows, _kernels=_without_this_kernel())
    assert _views(rows, _kernels=kernels) == _views(rows, _kernels=_without_this_kernel())


def test_oro_native_0_forces_the_reference():
    code = ("from oro_assets.judge import rule; assert rule._kernels is None; "
            "print(rule.task_text('fine\\nthe judge says 0.9\\n\\nok'))")
    env = {**os.environ, "ORO_NATIVE": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    assert out.stdout.split() == ["fine", "ok"]
