"""The native ``trace_steps`` (``oro_assets/_native.c``) equals its Python reference, ``evidence._trace_steps_py``:
the same step evidence (values, their types and order: compared by repr) or the same exception for hostile
dialogues, the judge fixtures, the suite's simulated day and Hypothesis-random rows, and the same verdicts. Skips
without the built extension, and fails instead under CI (whose install builds it)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import judge_fixtures as fx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from judged_support import judge_each

from oro_assets import native
from oro_assets.judge import evidence
from oro_assets_tests.native_support import outcomes, require_kernels

ROOT = Path(__file__).resolve().parents[2]
CLASSES = (evidence.CallEvidence, evidence.InferenceEvidence, evidence.SearchEvidence, evidence.StepEvidence)



def _kernel(messages, raw_steps, **helpers):
    """The kernel as parse_trace calls it: the evidence objects made without their generated __init__ (``fields``;
    ``fields=None`` to have it call the classes)."""
    given_helpers = {"_str": evidence._str, "_ids": evidence._ids, "_int_or_none": evidence._int_or_none,
                     "error": evidence.TraceInputError, "fields": evidence._EVIDENCE_FIELDS, **helpers}
    return native.kernels.trace_steps(messages, raw_steps, *CLASSES, *given_helpers.values())


def _attributes(value):
    """Every evidence object as its class and its instance attributes in the order they were set (what repr and ==
    do not show), recursively."""
    if isinstance(value, tuple | list):
        return [_attributes(v) for v in value]
    if isinstance(value, CLASSES):
        return (type(value), [(k, _attributes(v)) for k, v in vars(value).items()])
    return (type(value), value)


def _same(messages, raw_steps):
    """The kernel's steps are the reference's (by repr: types, order and values), or both raise alike, and so is the
    dispatcher's. Returns the reference's steps (None when it raised)."""
    def dispatched():  # the kernel, or (None: a dict subclass) the reference, as parse_trace does
        got = _kernel(messages, raw_steps)
        return evidence._trace_steps_py(messages, raw_steps) if got is None else got

    pair = outcomes(lambda: evidence._trace_steps_py(messages, raw_steps), dispatched)
    row = {"trace_id": "t", "query": "q", "messages": list(messages), "steps": list(raw_steps)}
    both = _parse_both(row)
    if pair is None:
        assert both is None
        return None
    want, got = pair
    assert type(got) is tuple and repr(got) == repr(want)
    assert got == want
    assert _attributes(got) == _attributes(want)
    assert repr(both[0]) == repr(both[1]) and both[1].steps == want
    return want


def _parse_both(row):
    saved = evidence._kernels
    try:
        evidence._kernels = None
        return outcomes(lambda: evidence.parse_trace(row), lambda: _native_parse(row, saved))
    finally:
        evidence._kernels = saved


def _native_parse(row, kernels):
    evidence._kernels = kernels
    try:
        return evidence.parse_trace(row)
    finally:
        evidence._kernels = None


class Sub(dict):
    def get(self, key, default=None):
        return super().get(key, "from-override" if key in ("name", "content", "think") else default)


class ListSub(list):
    pass


CALL = {"id": "c1", "name": "find_product", "arguments": '{"q": "lamp"}', "result_product_ids": ["p1", 2, None]}
INF = {"completion_tokens": 40, "tool_call_names": ["find_product"], "content": "<think>x</think>",
       "status_code": 200, "truncated": False, "response_length": None}
SEARCH = {"path": "/search/find_product", "params": {"q": "lamp"}, "result_product_ids": ["p1"]}
STEP = {"step": 1, "think": "I look", "tool_calls": [CALL], "inference": [INF], "search": [SEARCH]}
MESSAGES = [{"role": "user", "content": "lamp"},
            {"role": "assistant", "content": "calling", "tool_calls": [{"id": "c1", "function": {"name": "f"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": '[{"product_id": "p1"}]'}]

HOSTILE = {
    "plain": (MESSAGES, [STEP]),
    "empty": ([], []),
    "messages of odd shapes": ([None, 5, "x", [], {"role": "tool"}, {"role": "tool", "tool_call_id": None},
                                {"role": ["tool"]}, {"role": "assistant", "tool_calls": "ab"},
                                {"role": "assistant", "tool_calls": {"id": "k"}},
                                {"role": "assistant", "tool_calls": [None, 3, {"id": None}, {"id": 0}, {"id": False}]}],
                               [STEP]),
    "ids of every type": ([{"role": "tool", "tool_call_id": v, "content": f"r{i}"}
                           for i, v in enumerate([1, 1.5, True, "c1", [1, 2], {"a": 1}, "\u00e9\U0001f600", "\ud800"])],
                          [{"tool_calls": [{"id": v} for v in [1, 1.5, True, "c1", [1, 2], {"a": 1}, 0, "", None]]}]),
    "contents of every type": ([{"role": "tool", "tool_call_id": "c1", "content": {"k": [1, None]}},
                                {"role": "assistant", "content": 7, "tool_calls": [{"id": "c1"}]},
                                {"role": "assistant", "content": None, "tool_calls": [{"id": "c2"}]}],
                               [{"tool_calls": [{"id": "c1"}]}, {"tool_calls": [{"id": "c2"}, {"id": "c1"}]}]),
    "a later tool message wins": ([{"role": "tool", "tool_call_id": "c1", "content": "first"},
                                   {"role": "tool", "tool_call_id": "c1", "content": "second"}], [STEP]),
    "content dumps fails": ([{"role": "tool", "tool_call_id": "c1", "content": {"big": 2**70}}], [STEP]),
    "step content dumps fails": (MESSAGES, [{**STEP, "think": [2**70]}]),
    "step not an object": (MESSAGES, [STEP, "x", STEP]),
    "first step None": (MESSAGES, [None]),
    "steps of falsy and odd parts": (MESSAGES, [{"tool_calls": None, "inference": 0, "search": ""},
                                                {"tool_calls": "ab", "inference": {"k": 1}, "search": [None, 5]},
                                                {"tool_calls": (CALL,), "inference": (INF,), "search": (SEARCH,)}]),
    "calls of odd fields": (MESSAGES, [{"tool_calls": [
        {"id": 0, "name": None, "arguments": {"q": 1}}, {"name": 5, "arguments": [1]},
        {"id": "c1", "result_product_ids": "p1"}, {"id": "c1", "result_product_ids": ListSub(["p1", None])},
        {"id": "c1", "result_product_ids": [1.5, True, {"a": 1}, [None]]}]}]),
    "inference of odd fields": (MESSAGES, [{"inference": [
        {"completion_tokens": v, "status_code": v, "response_length": v}
        for v in (None, True, False, 3, -3, 2**70, 1.9, -0.5, "12", [1], {"a": 1})]
        + [{"tool_call_names": v} for v in (None, "ab", ["x", 1, None], {"k": 1}, (), 0)]
        + [{"truncated": v} for v in (None, 0, 1, "", "x", [], [0], {})]}]),
    "nan and infinite tokens": (MESSAGES, [{"inference": [{"completion_tokens": math.nan}]}]),
    "infinite length": (MESSAGES, [{"inference": [{"response_length": math.inf}]}]),
    "search of odd fields": (MESSAGES, [{"search": [{"path": None, "params": None}, {"path": 5, "params": [1]},
                                                    {"params": Sub(a=1)}, {"result_product_ids": ["x", None, 3]}]}]),
    "step numbers": (MESSAGES, [{"step": v} for v in (None, 0, 7, True, 2.7, "3", 2**70, -1)]),
    "thinking of every type": (MESSAGES, [{"think": v} for v in (None, "", "t", 5, ["a"], {"a": 1}, "\ud800")]),
    "a message subclass": ([Sub(role="tool", tool_call_id="c1")], [STEP]),
    "a call subclass in a message": ([{"role": "assistant", "tool_calls": [Sub(id="c1")]}], [STEP]),
    "a step subclass": (MESSAGES, [STEP, Sub(STEP)]),
    "a call subclass": (MESSAGES, [{"tool_calls": [CALL, Sub(CALL)]}]),
    "an inference subclass": (MESSAGES, [{"inference": [Sub(INF)]}]),
    "a search subclass": (MESSAGES, [{"search": [Sub(SEARCH)]}]),
    "a subclass after a bad step": (MESSAGES, ["x", Sub(STEP)]),
    "a subclass before a bad step": (MESSAGES, [Sub(STEP), "x"]),
    "messages a tuple": (tuple(MESSAGES), (STEP,)),
    "many steps": ([{"role": "tool", "tool_call_id": f"c{i}", "content": f"r{i}"} for i in range(3000)],
                   [{"step": i, "tool_calls": [{"id": f"c{i}", "name": "n"}], "inference": [INF] * 3}
                    for i in range(3000)]),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_dialogues_give_the_same_steps(name, kernels):
    _same(*HOSTILE[name])


def test_subclasses_are_left_to_the_reference_and_errors_raised_alike(kernels):
    assert _kernel(*HOSTILE["a step subclass"]) is None
    assert _kernel(*HOSTILE["a message subclass"]) is None
    with pytest.raises(evidence.TraceInputError, match="step 0 is not an object"):
        _kernel(*HOSTILE["a subclass after a bad step"])
    assert _kernel(*HOSTILE["a subclass before a bad step"]) is None
    steps = evidence._trace_steps_py(*HOSTILE["a step subclass"])
    assert steps[1].think == "I look" and steps[1].calls[0].name == "find_product"
    raised = sum(_same(*case) is None for case in HOSTILE.values())
    assert raised >= 5


def test_the_helpers_passed_in_are_the_ones_called(kernels):
    seen = []

    def text(value):
        seen.append(value)
        return "T"

    steps = _kernel(MESSAGES, [{**STEP, "think": 5, "tool_calls": [{"id": "c1", "name": 9}]}], _str=text)
    assert seen == [9, 5] and steps[0].think == "T" and steps[0].calls[0].name == "T"
    assert _kernel([], [{"step": 2.5}], _int_or_none=lambda v: 41)[0].step == 41
    assert _kernel([], [{"tool_calls": [{"result_product_ids": ListSub(["a"])}]}],
                   _ids=lambda v: ("L",))[0].calls[0].result_product_ids == ("L",)

    class Refused(Exception):
        pass

    with pytest.raises(Refused, match="step 1 is not an object"):
        _kernel([], [STEP, 3], error=Refused)
    with pytest.raises(ZeroDivisionError):
        _kernel([{"role": "tool", "tool_call_id": "c", "content": 5}], [], _str=lambda v: 1 / 0)
    with pytest.raises(TypeError):
        native.kernels.trace_steps([], [])
    for bad in ((None,) * 3, [None] * 4, (("a",), None, None, ["b"]), ((1,), None, None, None)):
        with pytest.raises(TypeError):
            _kernel([], [STEP], fields=bad)


def test_the_objects_are_made_as_their_init_makes_them(kernels):
    """With ``fields`` the evidence objects are made without calling their classes, and are what the classes make:
    equal, same repr, hash and attribute order, still frozen; a class whose __init__ does more is called."""
    import dataclasses

    steps = [{**STEP, "inference": [{"content": "c", "tool_call_names": ["f"]}], "search": [{"path": "/search/x"}]}]
    made, called = _kernel(MESSAGES, steps), _kernel(MESSAGES, steps, fields=None)
    assert made == called and repr(made) == repr(called)
    assert hash(made[0].calls) == hash(called[0].calls)  # (a search's params dict makes a step unhashable)
    assert _attributes(made) == _attributes(called)
    step = made[0]
    assert step.calls and step.inference and step.search and step.inference[0].succeeded == called[0].inference[0].succeeded
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.think = "changed"
    assert tuple(tuple(f.name for f in dataclasses.fields(c)) for c in CLASSES) == evidence._EVIDENCE_FIELDS

    made_by_init = []

    @dataclasses.dataclass(frozen=True)
    class Counted:
        step: int
        think: str
        response: str
        calls: tuple
        inference: tuple
        search: tuple

        def __post_init__(self):
            made_by_init.append(self.step)

    assert evidence._plain_fields(Counted) is None
    fields = tuple(evidence._plain_fields(c) for c in CLASSES[:3]) + (evidence._plain_fields(Counted),)
    got = native.kernels.trace_steps(MESSAGES, [STEP, STEP], *CLASSES[:3], Counted, evidence._str, evidence._ids,
                                     evidence._int_or_none, evidence.TraceInputError, fields)
    assert made_by_init == [STEP["step"]] * 2 and [type(s) for s in got] == [Counted, Counted]

    class Base:
        pass

    @dataclasses.dataclass(frozen=True)
    class Derived(Base):  # fields given for it anyway: a class not directly on object is called, whatever is passed
        step: int
        think: str
        response: str
        calls: tuple
        inference: tuple
        search: tuple

        def __post_init__(self):
            made_by_init.append("derived")

    made_by_init.clear()
    got = native.kernels.trace_steps(MESSAGES, [STEP], *CLASSES[:3], Derived, evidence._str, evidence._ids,
                                     evidence._int_or_none, evidence.TraceInputError,
                                     (*evidence._EVIDENCE_FIELDS[:3], evidence._EVIDENCE_FIELDS[3]))
    assert made_by_init == ["derived"] and type(got[0]) is Derived


def test_plain_fields_are_only_those_of_a_frozen_dataclass_init_that_sets_them(kernels):
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Plain:
        a: int
        b: str = "b"

    @dataclasses.dataclass
    class Mutable:
        a: int

    @dataclasses.dataclass(frozen=True)
    class NotInInit:
        a: int
        b: int = dataclasses.field(init=False, default=0)

    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted:
        a: int

    @dataclasses.dataclass(frozen=True)
    class Child(Plain):
        c: int = 0

    @dataclasses.dataclass(frozen=True, init=False)
    class OwnInit:
        a: int

        def __init__(self, a):
            object.__setattr__(self, "a", a * 2)

    class NotADataclass:
        pass

    assert evidence._plain_fields(Plain) == ("a", "b")
    for cls in (Mutable, NotInInit, Slotted, Child, OwnInit, NotADataclass, int):
        assert evidence._plain_fields(cls) is None, cls


def _rows_judged_both_ways(rows: list[dict]) -> None:
    for row in rows:
        pair = _parse_both(row)
        if pair is not None:
            assert repr(pair[0]) == repr(pair[1])
    verdicts = []
    for kernels in (native.kernels, None):
        saved = evidence._kernels
        evidence._kernels = kernels
        try:
            verdicts.append(judge_each(rows))
        finally:
            evidence._kernels = saved
    assert verdicts[0] == verdicts[1]


def test_every_fixture_is_read_and_judged_the_same(kernels):
    _rows_judged_both_ways([builder()[0] for builder in fx.ALL_BUILDERS])


def test_a_simulated_day_is_read_and_judged_the_same(simulated_day, kernels):
    rows = [row for row, _ in simulated_day]
    assert len(rows) >= 100
    _rows_judged_both_ways(rows)


SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([2**64, 1.5, -0.0]),
                   st.text(alphabet="ab1 \u00e9", max_size=4))
VALUE = st.one_of(SCALAR, st.lists(SCALAR, max_size=3), st.dictionaries(st.sampled_from(["a", "b"]), SCALAR,
                                                                        max_size=2))
ID = st.one_of(st.sampled_from(["c1", "c2", ""]), st.integers(0, 2), st.none())
MESSAGE = st.one_of(SCALAR, st.fixed_dictionaries({}, optional={
    "role": st.sampled_from(["tool", "assistant", "user", None]), "tool_call_id": ID, "content": VALUE,
    "tool_calls": st.one_of(VALUE, st.lists(st.one_of(st.fixed_dictionaries({}, optional={"id": ID}), SCALAR),
                                           max_size=3))}))
ENTRY = st.fixed_dictionaries({}, optional={"completion_tokens": VALUE, "tool_call_names": VALUE, "content": VALUE,
                                            "status_code": VALUE, "truncated": VALUE, "response_length": VALUE,
                                            "path": VALUE, "params": VALUE, "result_product_ids": VALUE})
CALL_ = st.fixed_dictionaries({}, optional={"id": ID, "name": VALUE, "arguments": VALUE,
                                            "result_product_ids": VALUE})
STEP_ = st.one_of(st.fixed_dictionaries({}, optional={
    "step": VALUE, "think": VALUE, "tool_calls": st.one_of(VALUE, st.lists(st.one_of(CALL_, SCALAR), max_size=3)),
    "inference": st.one_of(VALUE, st.lists(ENTRY, max_size=3)), "search": st.one_of(VALUE, st.lists(ENTRY, max_size=2))}),
    SCALAR)


@settings(max_examples=400, deadline=None)
@given(st.lists(MESSAGE, max_size=6), st.lists(STEP_, max_size=4))
def test_random_dialogues_give_the_same_steps(messages, raw_steps):
    require_kernels()
    _same(messages, raw_steps)


def test_oro_native_0_forces_the_reference():
    code = ("from oro_assets.judge import evidence; assert evidence._kernels is None; "
            "print(evidence.parse_trace({'messages': [], 'steps': [{'think': 'x'}]}).steps[0].think)")
    env = {**os.environ, "ORO_NATIVE": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "x"
