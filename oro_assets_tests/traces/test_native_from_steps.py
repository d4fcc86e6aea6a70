"""The native ``from_steps`` (``oro_assets/_native.c``) equals its Python reference, ``normalize.from_steps_py`` read
with every kernel switched off: the dialogue part of the normaliser (the walk over the steps, each step's proxy
evidence, step 1's attribution, recorder era, note and ORO richness, the messages in column order and the two JSON
columns' text) gives the same values, types, key order and text, or hands the dialogue to the reference (None), or
raises as the reference does. Compared on hostile dialogues (``test_native_walk_steps``' own and dialogues for what
this kernel adds: prompts, queries, signs of both recorders, values the encoder refuses), Hypothesis-random ones and a
simulated day of both recorder eras, whose rows must be equal with and without the kernels. Skips without the built
extension, and fails instead under CI (whose install builds it)."""

from __future__ import annotations

import contextlib
import copy
import gc
import tempfile

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oro_assets import jsonio, native
from oro_assets.traces import calls, formats, normalize
from oro_assets_tests.native_support import KernelsWith, both_eras_day, normalized_rows, refused_alike
from oro_assets_tests.traces.test_native_walk_steps import (
    ATTRIBUTION,
    HOSTILE,
    PLAIN_STEP,
    STEP,
    TEXT,
    _call,
    _step,
)

DISPATCH = normalize.from_steps
INFER = "/inference/chat/completions"


@contextlib.contextmanager
def python_only():
    """Every kernel the normaliser reaches switched off: the references alone."""
    saved = normalize._kernels, formats._kernels, calls._kernels
    normalize._kernels = formats._kernels = calls._kernels = None
    try:
        yield
    finally:
        normalize._kernels, formats._kernels, calls._kernels = saved


def _helpers(**over):
    f, c = formats, calls
    args = {"walk": normalize._walk_helpers(),
            "evidence": (f.answer_calls, f._evidence_from_text, jsonio.loads, jsonio.JSONDecodeError, f.product_ids,
                         f._MAX_ID_DEPTH, f.CONTENT_LIMIT),
            "era": (c.CATALOGUE_TOOLS, c._str_route, c._named_tools, c.ORO_INFERENCE_PATH, c.DROP_LIMIT),
            "era_fallback": c.era_and_richness_py, "eras": (c.ERA_MIXED, c.ERA_A6B1CF3, c.ERA_LATER),
            "recorder_note": normalize.recorder_note, "encode": jsonio.encode, "dumps": jsonio.dumps}
    args.update(over)
    return list(args.values())


def _kernel(raw_steps, query=None, problem_id=None, **over):
    return native.kernels.from_steps(raw_steps, query, problem_id, *_helpers(**over))


def _shape(value):
    """A value with every dict as its items in order and every leaf with its type."""
    if isinstance(value, dict):
        return (type(value).__name__, [(k, _shape(v)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        return (type(value).__name__, [_shape(v) for v in value])
    return (type(value).__name__, value if value == value else "nan")


def assert_same(got, want) -> None:
    """``got`` (the kernel's 7-tuple) is the reference's: the steps' text, where the kernel gives it, is ``dumps`` of
    the reference's steps (None only where the encoder refuses them)."""
    assert type(got) is tuple and len(got) == 7
    assert _shape(got[:5] + got[6:]) == _shape(want[:5] + want[6:])
    assert want[5] is None
    if got[5] is None:
        with pytest.raises(orjson.JSONEncodeError):
            orjson.dumps(want[3])
    else:
        assert type(got[5]) is str and got[5] == jsonio.dumps(want[3])
        assert got[4] == jsonio.dumps(want[2])


def _same(raw_steps, query=None, problem_id=None) -> bool:
    """The kernel's result equals the reference's, or it hands the dialogue back (None), or both raise alike; the
    dispatcher always equals the reference. True when the kernel read the dialogue itself."""
    try:
        with python_only():
            want = normalize.from_steps_py(raw_steps, query, problem_id)
    except Exception as exc:  # noqa: BLE001 - whatever the reference raises, the dispatcher must raise alike
        return refused_alike(exc, lambda: DISPATCH(raw_steps, query, problem_id),
                             lambda: _kernel(raw_steps, query, problem_id))
    dispatched = DISPATCH(raw_steps, query, problem_id)
    if dispatched[5] is None:  # the reference's tuple: its steps' text is the caller's
        assert _shape(dispatched) == _shape(want)
    else:
        assert_same(dispatched, want)
    got = _kernel(raw_steps, query, problem_id)
    if got is None:
        return False
    assert_same(got, want)
    return True


def _proxy(*, dropped=False, messages=False, find=False, kind="summary", answer=None):
    """A proxy call: an inference whose body the a6b1cf3 recorder dropped, or whose request kept its messages (the later
    recorder), or a find_product dispatch."""
    if find:
        return {"path": "/search/find_product", "kind": kind, "response": [{"product_id": "1"}],
                "result_product_ids": ["1"], "timestamp": 1_772_323_226_000}
    call = {"path": INFER, "kind": kind, "timestamp": 1_772_323_226_000,
            "json_data": {"messages": [{"role": "user", "content": "q"}]} if messages else {"model": "m"}}
    if dropped:
        call["response_truncated"] = True
        call["response"] = "x" * 10
    else:
        call["response"] = answer if answer is not None else {
            "choices": [{"message": {"content": '<tool_call>{"name": "find_product", "arguments": {}}</tool_call>'}}],
            "usage": {"completion_tokens": 7}}
    return call


def _with_info(step, **info):
    """A copy of ``step`` with its extra_info's keys set (None: removed)."""
    step = orjson.loads(orjson.dumps(step))
    for key, value in info.items():
        if value is None:
            step["extra_info"].pop(key, None)
        else:
            step["extra_info"][key] = value
    return step


PROMPTS = [
    [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
    [{"role": "user", "content": "u1"}, {"role": "system", "content": "s"}, {"role": "user", "content": "u2"}],
    [{"role": "system", "content": "s1"}, {"role": "system", "content": [{"type": "text", "text": "s2"}]}],
    [{"role": "assistant", "content": "a"}, {"role": "tool", "content": "t"}],
    [{"role": "user", "content": None}], [{"role": "user", "content": "ユーザー 😀"}], [], None,
    [{"role": "system"}], [{"role": "user", "content": 5}], "not a list", [None],
]
# richness at a rate of seven significant digits (1/7) over tools dispatched out of their sorted order
VIEW_ANSWER = {"choices": [{"message": {"content": '<tool_call>{"name": "view_product_information"}</tool_call>'}}]}
RATED = [_step(proxy=[_proxy(answer=VIEW_ANSWER), {**_proxy(find=True), "path": "/search/view_product_information"},
                      *[_proxy(find=True)] * 6])]
ADDED = [
    # the query and problem id from the prompt, a later step or the record; the prompt's system messages kept
    *[[_step(prompt=p), _step()] for p in PROMPTS],
    *[[_with_info(_step(prompt=p), query=None)] for p in PROMPTS],
    [_with_info(_step(), query=None), _with_info(_step(prompt=PROMPTS[0]), query="later")],
    [_with_info(_step(), query=None, problem_id=None)] * 3,
    # the recorder's signs: a6b1cf3, later, both (the note), neither; richness with and without proxy calls
    [_step(proxy=[_proxy(dropped=True), _proxy(find=True)])],
    [_step(proxy=[_proxy(messages=True), _proxy(find=True)])],
    [_step(proxy=[_proxy(dropped=True)]), _step(proxy=[_proxy(messages=True), _proxy(find=True)])],
    [_step(proxy=[_proxy(dropped=True), _proxy(messages=True), _proxy(find=True), _proxy(find=True)])],
    [_step(proxy=[_proxy(find=True, kind="attempt"), _proxy(kind="attempt")])],
    [_step(proxy=[]), _step(proxy=[[], None, 5, "x"])], [_step(proxy=None)],
    [_step(proxy=[_proxy(answer={"choices": [{"message": {"content": "名前 " * 900}}]}), _proxy(find=True)])],
    [_step(proxy=[_proxy(answer={"choices": [], "usage": {"completion_tokens": 2**70}}), _proxy(find=True)])],
    [_step(proxy=[_proxy(answer={"choices": None, "usage": {"completion_tokens": -(2**63) - 1}})])],
    RATED,
    # values the encoder refuses, in a result, an argument, a think and the query
    [_step(calls=[_call(result=[{"product_id": 2**70}])])],
    [_step(calls=[_call(result={"k": 123456789012345678901234567890})])],
    [_step(calls=[{"name": "find_product", "parameters": {"n": 2**64}, "result": []}])],
    [_step(calls=[{"name": "find_product", "parameters": {1: "non-str key"}, "result": []}])],
    [_step(think="lone \ud800 surrogate")], [_step(prompt=[{"role": "system", "content": "\udfff"}])],
    [_step(calls=[_call(result={"f": float("nan"), "g": 1e308 * 10, "h": -0.0})])],
    # wrong types where this kernel reads: steps of 40, every call of a step unanswered
    [_step() for _ in range(40)], [_step(calls=[_call(result=...) for _ in range(3)])],
]


@pytest.mark.parametrize("steps", HOSTILE + ATTRIBUTION, ids=range(len(HOSTILE) + len(ATTRIBUTION)))
def test_walk_steps_hostile_dialogues_read_alike(steps, kernels):
    if isinstance(steps, tuple):  # (steps, query, problem_id)
        _same(*steps)
    else:
        _same(steps)


@pytest.mark.parametrize("steps", ADDED, ids=range(len(ADDED)))
def test_what_the_kernel_adds_reads_alike(steps, kernels):
    _same(steps)
    for query, problem_id in (("given", "pid"), ("", None), ("クエリ", "")):
        _same(steps, query, problem_id)


def test_the_common_path_and_both_recorders_are_read_by_the_kernel(kernels):
    """ORO's dialogues, a6b1cf3, later and mixed, are read in C, with the mixed dialogue's note."""
    for steps in (ADDED[0], ADDED[2 * len(PROMPTS) + 2], ADDED[2 * len(PROMPTS) + 3], ADDED[2 * len(PROMPTS) + 4]):
        assert _same(steps)
    mixed = _kernel(ADDED[2 * len(PROMPTS) + 4])
    assert mixed[3][0]["recorder_era"] == calls.ERA_MIXED
    # the dropped body's request has no messages (a second a6b1cf3 sign); the search's list has its ids beside it
    assert mixed[3][0]["recorder_note"] == ("signs of both recorders in one dialogue (dropped_bodies 1, "
                                            "ids_beside_whole_list 1, requests_with_messages 1, "
                                            "requests_without_messages 1): each call is read as it is")
    assert mixed[3][0]["oro_richness"]["dispatches"] == 1
    assert _same(RATED)
    richness = _kernel(RATED)[3][0]["oro_richness"]
    assert richness["agentic_richness"] == 0.142857 and list(richness["by_tool"].items()) == [
        ("find_product", 6), ("view_product_information", 1)]
    later = _kernel(ADDED[2 * len(PROMPTS) + 3])[3][0]
    assert later["recorder_era"] == calls.ERA_LATER and "recorder_note" not in later
    prompt = _kernel(ADDED[len(PROMPTS) + 1])  # no query anywhere but the prompt's first user message
    assert prompt[0] == "u1" and [m["role"] for m in prompt[2][:3]] == ["system", "user", "assistant"]


def test_a_refused_encoding_is_the_reference_s_error_or_left_to_the_caller(kernels):
    """An int past 64 bits in a result: walk_steps' own dumps raises, as in the reference; a messages column the
    encoder refuses is dumps' (here its error); a steps column it refuses is left to the caller (None), who calls
    dumps after the tools column, as the reference orders them."""
    with pytest.raises(jsonio.JSONEncodeError):
        _kernel([_step(calls=[_call(result=[{"product_id": 2**70}])])])
    steps = [_step()]
    seen = []

    def refuse(which):
        def encode(value):
            seen.append(value)
            if len(seen) == which:
                raise jsonio.JSONEncodeError("refused")
            return jsonio.encode(value)
        return encode

    got = _kernel(steps, encode=refuse(2))
    assert got[5] is None and got[4] == jsonio.dumps(got[2])
    seen.clear()
    got = _kernel(steps, encode=refuse(1), dumps=lambda value: "dumps' own")
    assert got[4] == "dumps' own" and got[5] == jsonio.dumps(got[3])

    def interrupt(value):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _kernel(steps, encode=interrupt)


def test_the_helpers_are_the_ones_passed_in(kernels):
    mixed = ADDED[2 * len(PROMPTS) + 4]
    assert _kernel(mixed, recorder_note=lambda signs: f"note {sorted(signs)}")[3][0]["recorder_note"] == (
        "note ['dropped_bodies', 'ids_beside_whole_list', 'requests_with_messages', 'requests_without_messages']")
    assert _kernel(mixed, eras=("m", "a", "l"))[3][0]["recorder_era"] == "m"
    search = {**{k: v for k, v in _proxy(find=True).items() if k != "result_product_ids"},
              "response": '[{"product_id": "1"}]'}  # the response's text: read by the product_ids helper
    got = _kernel([_step(proxy=[search])], evidence=(
        lambda m: ([], "none", False), lambda body: (None, [], ""), jsonio.loads, jsonio.JSONDecodeError,
        lambda value: ["from the helper"], 6, 2000))
    assert got[3][0]["search"][0]["result_product_ids"] == ["from the helper"]


def test_the_kernel_refuses_bad_arguments(kernels):
    with pytest.raises(TypeError):
        native.kernels.from_steps([_step()])
    for bad in ({"walk": normalize._walk_helpers()[:-1]}, {"evidence": ()}, {"era": [None] * 5}, {"eras": ("m",)}):
        with pytest.raises(TypeError):
            _kernel([_step()], **bad)
    assert _kernel([]) is None and _kernel("steps") is None  # walk_steps hands these back


def test_the_comparison_sees_a_divergence(kernels):
    steps = [_step(prompt=PROMPTS[0], proxy=[_proxy(dropped=True), _proxy(find=True)]), _step()]
    with python_only():
        want = normalize.from_steps_py(steps, None, None)
    got = _kernel(steps)
    assert_same(got, want)

    def changed(change):
        copy = orjson.loads(orjson.dumps(list(got)))
        change(copy)
        return tuple(copy)

    def reorder(c):
        c[3][0] = dict(reversed(list(c[3][0].items())))

    def drop_note(c):
        del c[3][0]["attribution"]

    def retype(c):
        c[3][0]["oro_richness"]["emitted"] = float(c[3][0]["oro_richness"]["emitted"])

    def requery(c):
        c[2][1]["content"] = "other"

    def retext(c):
        c[5] = c[5].replace('"step":1', '"step":2')

    assert_same(changed(lambda c: None), want)
    for change in (reorder, drop_note, retype, requery, retext):
        with pytest.raises(AssertionError):
            assert_same(changed(change), want)


def test_no_references_leak(kernels):
    dialogues = [ADDED[0], ADDED[2 * len(PROMPTS) + 4], [None], [_step(calls=[_call(result=[{"product_id": 2**70}])])]]
    for steps in dialogues:  # warm every cache first
        with contextlib.suppress(Exception):
            _kernel(steps)
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(300):
        for steps in dialogues:
            with contextlib.suppress(Exception):
                _kernel(steps)
    gc.collect()
    assert len(gc.get_objects()) - before < 50


@settings(max_examples=300, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=4), st.one_of(st.none(), TEXT), st.one_of(st.none(), TEXT))
def test_random_dialogues_read_alike(steps, query, problem_id):
    if native.kernels is None:
        pytest.skip("native kernels not in use")
    _same(steps, query, problem_id)


PROXY_CALL = st.builds(_proxy, dropped=st.booleans(), messages=st.booleans(), find=st.booleans(),
                       kind=st.sampled_from(["summary", "attempt", "other"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(PLAIN_STEP, st.lists(PROXY_CALL, max_size=3)), min_size=1, max_size=5),
       st.one_of(st.none(), TEXT))
def test_random_recorded_dialogues_read_alike(steps, query):
    if native.kernels is None:
        pytest.skip("native kernels not in use")
    dialogue = []
    for step, proxy in steps:
        step = copy.deepcopy(step)
        step.setdefault("extra_info", {})["proxy_calls"] = proxy
        dialogue.append(step)
    assert _same(dialogue, query)


def test_a_simulated_day_normalises_alike(kernels, monkeypatch):
    """Every row of a simulated day of both recorder eras is the same (values, types, key order) with the kernels as
    with the references alone, and the fused kernel read nearly every dialogue."""
    read = []

    def counted(*args):
        got = native.kernels.from_steps(*args)
        read.append(got is not None)
        return got

    day = "2026-01-05"
    with tempfile.TemporaryDirectory() as tmp:
        files = both_eras_day(tmp, day, 120)
        with python_only():
            reference_rows = normalized_rows(files, day)
        monkeypatch.setattr(normalize, "_kernels", KernelsWith("from_steps", counted))
        native_rows = normalized_rows(files, day)
    assert repr(native_rows) == repr(reference_rows)  # repr: key order too
    assert native_rows == reference_rows
    assert len(native_rows) >= 90 and len(read) >= 90
    assert sum(read) >= 0.95 * len(read)
