"""The native ``step_evidence`` (``oro_assets/_native.c``) equals its Python reference,
``structural._step_evidence_py``: the same evidence dict (values, their types, key order) or the same exception for
hostile steps, every step of a simulated day of both recorder eras and Hypothesis-random steps, and the same
structural labels and evidence for the day. Skips without the built extension, and fails instead under CI (whose
install builds it)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oro_assets import jsonio, native
from oro_assets.curation import structural
from oro_assets.curation.rows import steps_of
from oro_assets.traces.calls import same_calls
from oro_assets.traces.formats import inference_succeeded
from oro_assets_tests.native_support import outcomes, require_kernels

ROOT = Path(__file__).resolve().parents[2]
DISPATCH = structural._step_evidence  # the dispatcher itself



def _kernel(step, **helpers):
    args = {"same_calls": same_calls, "claimed_length": structural._claimed_length,
            "inference_succeeded": inference_succeeded, "max": max, **helpers}
    return native.kernels.step_evidence(step, *args.values())


def _same(step) -> dict | None:
    """The kernel's evidence of ``step`` is the reference's, strictly (repr: key order and value types too), or both
    raise alike; the dispatcher's too. Returns the reference's evidence (None when it raised)."""
    pair = outcomes(lambda: structural._step_evidence_py(step), lambda: _kernel(step))
    if pair is None:
        return None
    want, got = pair
    assert type(got) is dict and repr(got) == repr(want), (step, got, want)
    assert jsonio.stdlib_dumps(got, default=repr) == jsonio.stdlib_dumps(want, default=repr)
    assert repr(DISPATCH(step)) == repr(want)
    return want


class GetOverride(dict):
    """A dict whose ``get`` is its own: the kernel must call it, as the reference does."""

    def get(self, key, default=None):
        return super().get(key, "overridden" if key in ("answer_shape", "step") else default)


class Falsy:
    def __bool__(self) -> bool:
        return False


class BoolRaises:
    def __bool__(self) -> bool:
        raise ValueError("no truth value")


CALL = {"id": "call_1_0", "name": "find_product", "arguments": '{"q": "red shoes", "page": 1}'}
VIEW = {"id": "call_1_1", "name": "view_product_information", "arguments": '{"product_ids": "p1"}'}
SAID = [{"name": "find_product", "arguments": {"page": 1, "q": "red shoes"}}]
WHOLE = {"status_code": 200, "tool_calls": SAID, "answer_shape": "structured", "truncated": False}


def _step(inference, **more):
    return {"step": 2, "think": 'I "compare" them\n', "tool_calls": [CALL], "inference": inference, **more}


HOSTILE = {
    "empty": {},
    "no calls, inference": {"tool_calls": [], "inference": [WHOLE]},
    "calls None": {"tool_calls": None, "inference": [WHOLE]},
    "calls falsy values": {"tool_calls": "", "inference": 0},
    "calls a dict (keys iterated)": {"tool_calls": {"name": "x"}},
    "calls a str": {"tool_calls": "ab"},
    "calls hold a non-dict": {"tool_calls": [CALL, 5]},
    "calls a tuple": {"tool_calls": (CALL,), "inference": (WHOLE,)},
    "call dict subclass": {"tool_calls": [GetOverride(CALL)], "inference": [WHOLE]},
    "code made": _step([WHOLE], code_made=True),
    "code made, odd truth": _step([WHOLE], code_made=[0]),
    "code made falsy": _step([WHOLE], code_made=""),
    "code made Falsy object": _step([WHOLE], code_made=Falsy()),
    "code made truth raises": _step([WHOLE], code_made=BoolRaises()),
    "no inference": _step([]),
    "inference None": _step(None),
    "inference a dict": _step({"status_code": 200}),
    "inference holds a non-dict": _step([WHOLE, "x"]),
    "failed statuses": _step([{**WHOLE, "status_code": s} for s in (199, 300, 500, -1, 2**70, -(2**70))]),
    "status edges": _step([{**WHOLE, "status_code": 300}, {**WHOLE, "status_code": 299}]),
    "odd statuses": _step([{**WHOLE, "status_code": s} for s in ("200", "abc", 200.5, 299.9, True, False, "2e2",
                                                                 [200], {"a": 1})]),
    "int64 edge status": _step([{**WHOLE, "status_code": 2**63}, {**WHOLE, "status_code": 2**63 - 1}]),
    "carried": _step([WHOLE]),
    "carried, no shape": _step([{"tool_calls": SAID}]),
    "carried by the second answer": _step([{**WHOLE, "tool_calls": [{"name": "find_product", "arguments": {"q": "x"}}]},
                                           WHOLE]),
    "names only": _step([{**WHOLE, "tool_calls": [{"name": "find_product", "arguments": '{"q": "blue"}'}]}]),
    "names only, cut": _step([{**WHOLE, "cut": True,
                               "tool_calls": [{"name": "find_product", "arguments": '{"q": "bl'}]}]),
    "names only, cut falsy": _step([{**WHOLE, "cut": 0, "tool_calls": [{"name": "find_product", "arguments": "{"}]}]),
    "other calls": _step([{**WHOLE, "tool_calls": [{"name": "recommend_product", "arguments": "{}"}]}]),
    "names from tool_call_names": _step([{"tool_call_names": ["find_product"], "cut": True}]),
    "names a str": _step([{"tool_call_names": "find_product"}]),
    "names only, calls without arguments": {"tool_calls": [{"name": "find_product", "arguments": None}],
                                            "inference": [{"tool_call_names": ["find_product"]}]},
    "names not iterable": _step([{"tool_call_names": 5}]),
    "said a str": _step([{"tool_calls": "find_product"}]),
    "said empty": _step([{"tool_calls": [], "tool_call_names": []}, {"tool_calls": None}]),
    "dropped long enough": _step([{"dropped": True, "response_length": 5000}]),
    "dropped too short": _step([{"dropped": True, "response_length": 10}]),
    "dropped beside a whole answer without the calls": _step([
        {"dropped": True, "response_length": 10}, {**WHOLE, "tool_calls": [{"name": "view", "arguments": "{}"}]}]),
    "truncated without calls counts as dropped": _step([{"truncated": True, "response_length": 9000}]),
    "truncated with calls is read": _step([{"truncated": True, "tool_calls": SAID, "cut": True}]),
    "truncated, calls falsy": _step([{"truncated": 1, "tool_calls": "", "response_length": 4}]),
    "dropped lengths of every kind": _step([{"dropped": True, "response_length": v}
                                             for v in (None, 0, "", -5, 1.5, 2**70, False)]),
    "dropped lengths unorderable": _step([{"dropped": True, "response_length": 300},
                                          {"dropped": True, "response_length": "400"}]),
    "dropped length a str alone": _step([{"dropped": True, "response_length": "9999"}]),
    "dropped, think not text": _step([{"dropped": True, "response_length": 300}], think=["not", "hashable"]),
    "dropped, think a number": _step([{"dropped": True, "response_length": 300}], think=7),
    "dropped, arguments parsed": {"think": "t", "tool_calls": [{"name": "find_product", "arguments": {"q": "x"}}],
                                  "inference": [{"dropped": True, "response_length": 200}]},
    "dropped, calls without names": {"tool_calls": [{"arguments": None}, {}],
                                     "inference": [{"dropped": "yes", "response_length": 150}]},
    "dropped truth raises": _step([{"dropped": BoolRaises()}]),
    "non-ASCII": _step([{**WHOLE, "tool_calls": [{"name": "find_product",
                                                  "arguments": {"q": "caf\u00e9 \U0001f600 \ud800"}}]}],
                       think="caf\u00e9 \U0001f600", step="\u00e9"),
    "many calls": {"step": 9, "tool_calls": [{**CALL, "id": f"c{i}"} for i in range(300)],
                   "inference": [{"tool_calls": [{"name": "find_product", "arguments": CALL["arguments"]}] * 300}]},
    "many answers": _step([{**WHOLE, "tool_calls": [{"name": "view", "arguments": None}]}] * 2000
                          + [{"dropped": True, "response_length": n} for n in range(2000)]),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_steps_give_the_same_evidence(name, kernels):
    _same(HOSTILE[name])


def test_the_hostile_steps_reach_every_verdict_and_raise(kernels):
    verdicts, raised = set(), 0
    for step in HOSTILE.values():
        want = _same(step)
        if want is None:
            raised += 1
        else:
            verdicts.add(want["verdict"])
    assert verdicts == {"no_calls", "code_made", "no_inference_in_window", "carried", "names_only", "dropped",
                        "dropped_too_short", "not_carried"}
    assert raised >= 8


def test_step_shapes_the_reference_rejects_are_rejected_alike(kernels):
    for step in (None, 5, "step", [CALL], (1, 2)):
        _same(step)
    unnumbered = {k: v for k, v in _step([WHOLE]).items() if k != "step"}
    assert _same(GetOverride(unnumbered))["step"] == "overridden"
    assert _same(_step([GetOverride({"tool_calls": SAID})]))["answer_shape"] == "overridden"


def test_the_helpers_passed_in_are_the_ones_called(kernels):
    calls = []

    def claimed(step):
        calls.append("claimed")
        return 10**9

    step = _step([{"dropped": True, "response_length": 5000}])
    assert _kernel(step, claimed_length=claimed)["verdict"] == "dropped_too_short"
    assert calls == ["claimed"]
    assert _kernel(_step([WHOLE]), same_calls=lambda said, done: (True, False))["verdict"] == "names_only"
    assert _kernel(_step([{**WHOLE, "status_code": "x"}]), inference_succeeded=lambda s: 1)["n_inference"] == 1
    assert _kernel(_step([{**WHOLE, "status_code": 200}]), inference_succeeded=lambda s: 0)["n_inference"] == 1
    with pytest.raises(ZeroDivisionError):
        _kernel(_step([WHOLE]), same_calls=lambda said, done: 1 / 0)
    for bad in (lambda said, done: (True,), lambda said, done: [True, True], lambda said, done: None):
        with pytest.raises(TypeError, match="pair"):
            _kernel(_step([WHOLE]), same_calls=bad)
    with pytest.raises(TypeError):
        native.kernels.step_evidence(_step([WHOLE]))


def _normalised_rows(day: str, tmp: str) -> list[dict]:
    from oro_assets.arena import recorder
    from oro_assets.arena.firehose import simulate_day
    from oro_assets.traces.ingest import iter_normalized
    from oro_assets.traces.reader import iter_partition_files

    simulate_day(day, 80, tmp, seed=15, workers=1,
                 recorder_shares={recorder.ERA_A6B1CF3: 0.5, recorder.ERA_LATER: 0.5})
    return [r[0] for r in iter_normalized(iter_partition_files(tmp, day), day) if isinstance(r, tuple)]


def test_a_simulated_day_gives_the_same_evidence_and_labels(kernels, monkeypatch):
    with tempfile.TemporaryDirectory() as tmp:
        rows = _normalised_rows("2026-01-05", tmp)
    verdicts: dict[str, int] = {}
    for row in rows:
        for step in steps_of(row):
            v = _same(step)["verdict"]
            verdicts[v] = verdicts.get(v, 0) + 1
    assert len(rows) >= 60 and sum(verdicts.values()) >= 300
    assert {"carried", "dropped", "not_carried", "no_inference_in_window"} <= set(verdicts), verdicts
    native_run = structural.structural_filter(rows)
    monkeypatch.setattr(structural, "_kernels", None)
    reference_run = structural.structural_filter(rows)
    assert native_run.outputs == reference_run.outputs and native_run.kept == reference_run.kept
    assert native_run.rejected == reference_run.rejected


TEXT = st.text(alphabet=st.sampled_from('ab "\\{}:,1é😀'), max_size=12)
NAME = st.sampled_from(["find_product", "view_product_information", "recommend_product", ""])
ARGS = st.one_of(st.none(), TEXT, st.sampled_from(['{"q": "a"}', '{"q": "b"}', "{}"]),
                 st.dictionaries(st.sampled_from(["q", "page"]), st.one_of(TEXT, st.integers(0, 3)), max_size=2))
TOOL_CALL = st.fixed_dictionaries({}, optional={"name": st.one_of(NAME, st.none(), st.integers(0, 2)),
                                                "arguments": ARGS, "id": TEXT})
VALUE = st.one_of(st.none(), st.booleans(), st.integers(-3, 3000), st.floats(allow_nan=False), TEXT)
ENTRY = st.fixed_dictionaries({}, optional={
    "status_code": st.one_of(st.none(), st.sampled_from([200, 201, 299, 300, 404, 2**64]), TEXT, st.booleans()),
    "dropped": VALUE, "truncated": VALUE, "cut": VALUE, "answer_shape": st.one_of(st.none(), TEXT),
    "response_length": st.one_of(st.none(), st.integers(-5, 5000)),
    "tool_calls": st.one_of(st.none(), st.lists(TOOL_CALL, max_size=3)),
    "tool_call_names": st.one_of(st.none(), st.lists(NAME, max_size=3))})
STEP = st.fixed_dictionaries({}, optional={
    "step": st.one_of(st.integers(0, 9), TEXT, st.none()), "think": st.one_of(TEXT, st.none(), st.integers(0, 2)),
    "tool_calls": st.one_of(st.none(), st.lists(TOOL_CALL, max_size=3)),
    "inference": st.one_of(st.none(), st.lists(ENTRY, max_size=4)), "code_made": VALUE})


@settings(max_examples=400, deadline=None)
@given(STEP)
def test_random_steps_give_the_same_evidence(step):
    require_kernels()
    _same(step)


def test_oro_native_0_forces_the_reference():
    code = ("from oro_assets.curation import structural; "
            "assert structural._kernels is None; "
            "print(structural._step_evidence({'tool_calls': [{'name': 'x'}]})['verdict'])")
    env = {**os.environ, "ORO_NATIVE": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "no_inference_in_window"


THINKS = ["", "plain", 'quotes " and \\ backslashes', "\b\f\n\r\t", "".join(map(chr, range(32))) + "\x7f",
          " ~", "caf\u00e9 \u2014 \uffff", "\U0001f600\U0010ffff", "\ud800 \udfff lone surrogates", "x" * 100_000,
          None, 0, 5, 1.5, True, ["a", "list"], {"k": "v"}, ("a", "tuple")]
CALLS = [None, [], "", [CALL, VIEW], [{"name": "find_product", "arguments": {"q": ["parsed"]}}], [{}],
         [{"name": 5, "arguments": 1.5}], [{"name": "n", "arguments": '{"q": "caf\u00e9 \\u00e9 \U0001f600"}'}],
         "ab", 7, {"name": "x"}, [5], [CALL] * 500]


@pytest.mark.parametrize("think", THINKS, ids=range(len(THINKS)))
@pytest.mark.parametrize("calls", CALLS, ids=range(len(CALLS)))
def test_claimed_lengths_are_the_same(think, calls, kernels):
    step = {"think": think, "tool_calls": calls}
    pair = outcomes(lambda: structural._claimed_length_py(step), lambda: structural._claimed_length(step))
    if pair is not None:
        assert type(pair[1]) is int and pair[1] == pair[0]


def test_the_claimed_length_helpers_passed_in_are_called(kernels):
    seen = []

    def text(name, arguments):
        seen.append((name, arguments))
        return 10, 1

    step = {"think": 5, "tool_calls": [{"name": "a", "arguments": "{}"}, {"name": "b"}]}
    assert native.kernels.claimed_length(text, lambda think: 100, 7, step) == 2 + 2 + 2 + 11 + 11 + 100 + 7
    assert seen == [("a", "{}"), ("b", None)]
    with pytest.raises(TypeError, match="pair"):
        native.kernels.claimed_length(lambda n, a: 3, len, 0, step)
    with pytest.raises(AttributeError):  # a TypeError from a helper without __wrapped__: the reference's fallback
        native.kernels.claimed_length(lambda n, a: 1 / "x", len, 0, step)
    with pytest.raises(TypeError):
        native.kernels.claimed_length(text, len, step)


@settings(max_examples=400, deadline=None)
@given(st.text(), st.lists(st.fixed_dictionaries({}, optional={"name": st.one_of(st.text(max_size=5), st.none()),
                                                               "arguments": st.one_of(st.text(max_size=20), ARGS)}),
                           max_size=3))
def test_random_claimed_lengths_are_the_same(think, calls):
    require_kernels()
    step = {"think": think, "tool_calls": calls}
    assert structural._claimed_length(step) == structural._claimed_length_py(step)


def _reference_tallies(steps, target, in_sequence):
    saved = structural._kernels
    structural._kernels = None  # the Python references throughout (step evidence and claimed lengths too)
    try:
        return structural._label_steps_py(steps, target, in_sequence)
    finally:
        structural._kernels = saved


def _same_tallies(steps, target="", in_sequence=None):
    """label_steps through its dispatcher equals the pure reference, strictly (repr: types, key order), or both raise
    alike."""
    pair = outcomes(lambda: _reference_tallies(steps, target, in_sequence),
                    lambda: structural._label_steps(steps, target, in_sequence))
    if pair is None:
        return None
    want, got = pair
    assert type(got) is tuple and repr(got) == repr(want), (got, want)
    assert [type(x) for x in got] == [type(x) for x in want]
    return want


FIND_Q = {"id": "f", "name": "find_product", "arguments": '{"q": "Red  Shoes"}'}
TRACE_STEPS = [
    _step([WHOLE]),  # carried
    _step([{**WHOLE, "tool_calls": [{"name": "find_product", "arguments": '{"q": "other"}'}]}]),  # names only
    _step([]),  # no inference in window
    {"step": 4, "tool_calls": [FIND_Q], "inference": [{"dropped": True, "response_length": 9000}]},  # dropped
    {"step": 5, "tool_calls": [FIND_Q], "inference": [{"dropped": True, "response_length": 10}]},  # too short
    _step([WHOLE], code_made=True),
    {"step": 7, "think": "just thinking", "search": [{"path": "/search"}]},  # no calls, proxy evidence
    _step([{**WHOLE, "tool_calls": [{"name": "view", "arguments": "{}"}]}, WHOLE, WHOLE]),  # several answers
]


@pytest.mark.parametrize("target", ["", "red shoes", "blue"])
@pytest.mark.parametrize("in_sequence", [None, set(), {0, 1, 2, 3, 4, 5, 6, 7}, {1, 4}, {2, 99}, frozenset({3})])
def test_trace_tallies_are_the_same(target, in_sequence, kernels):
    want = _same_tallies(TRACE_STEPS, target, in_sequence)
    assert want[5] is (target == "red shoes")  # the query copied into find_product (normalised)
    assert want[6] is True


def test_trace_tallies_of_odd_steps(kernels):
    assert _same_tallies([]) == ([], 0, structural.Counter(), [], 0, False, False)
    _same_tallies([{"search": [], "inference": [], "tool_calls": []}, {"search": [1]}])
    _same_tallies([{"tool_calls": [CALL], "inference": [WHOLE] * 3}] * 50, "red shoes", set(range(0, 50, 3)))
    for odd in ((_step([WHOLE]),), [_step([WHOLE]), GetOverride(_step([WHOLE]))], [_step([WHOLE]), "x"], [None]):
        _same_tallies(odd, "red shoes", {0})  # left to the reference (or raising as it raises)
    assert native.kernels.label_steps((_step([WHOLE]),), "", None, structural.Counter, structural._copies_query,
                                      same_calls, structural._claimed_length, inference_succeeded, max) is None
    with pytest.raises(TypeError):
        native.kernels.label_steps([], None, None, structural.Counter, structural._copies_query, same_calls,
                                   structural._claimed_length, inference_succeeded, max)
    with pytest.raises(TypeError):
        native.kernels.label_steps([], "", [0], structural.Counter, structural._copies_query, same_calls,
                                   structural._claimed_length, inference_succeeded, max)


def test_the_query_test_stops_at_the_first_copy(kernels):
    seen = []

    def copies(target, calls):
        seen.append(len(seen))
        return len(seen) == 2 and 1  # a truthy non-bool, kept as the reference keeps it

    got = native.kernels.label_steps([_step([WHOLE])] * 5, "t", None, structural.Counter, copies, same_calls,
                                     structural._claimed_length, inference_succeeded, max)
    assert seen == [0, 1] and got[5] == 1 and type(got[5]) is int


@settings(max_examples=300, deadline=None)
@given(st.lists(STEP, max_size=6), st.sampled_from(["", "a", "red shoes"]),
       st.one_of(st.none(), st.sets(st.integers(0, 6), max_size=4)))
def test_random_trace_tallies_are_the_same(steps, target, in_sequence):
    require_kernels()
    _same_tallies(steps, target, in_sequence)
