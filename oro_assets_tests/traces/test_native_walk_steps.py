"""The native ``walk_steps`` (``oro_assets/_native.c``) equals its Python reference, ``normalize.walk_steps_py``: the
normaliser's pass over a dialogue's steps gives the same query, problem id, prompt messages, turns, steps, listed
proxy calls, stamps, run time and call count (values, types and key order, so the ``messages`` and ``steps`` columns
are the same bytes), or hands the dialogue to the reference (None) wherever the reference raises its FieldError or
reads a value off the common path, so every error and quarantine reason stays the reference's own. Compared on a
simulated day of both recorder eras, hostile dialogues and Hypothesis-random ones. Skips without the built extension,
and fails instead under CI (whose install builds it)."""

from __future__ import annotations

import tempfile

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oro_assets import jsonio, native
from oro_assets.toolcalls import FALLBACK_THINK
from oro_assets.traces import calls, formats, normalize
from oro_assets_tests.native_support import (
    Dict,
    KernelsWith,
    List,
    Str,
    both_eras_day,
    normalized_rows,
    refused_alike,
    require_kernels,
)

BIG = 2**63
DISPATCH = normalize.walk_steps  # the dispatcher, kept before a test binds a wrapper in its place



def _kernel(raw_steps, query=None, problem_id=None, **helpers):
    args = {"prompt_messages": normalize._prompt_messages, "think_and_text": normalize.think_and_text,
            "split_content": normalize.split_content, "step_calls": normalize._step_calls, "encode": jsonio.encode,
            "dumps": normalize.dumps, "arguments_json": normalize.arguments_json, "product_ids": normalize.product_ids,
            "loads": jsonio.loads, "decode_error": jsonio.JSONDecodeError, "as_timestamp": normalize.as_timestamp,
            "fallback_think": normalize.FALLBACK_THINK, "recommend": normalize.RECOMMEND,
            "max_id_depth": formats._MAX_ID_DEPTH, "attribution": normalize._attribution,
            "no_calls_note": calls.NO_PROXY_CALLS, "attributed_note": calls.ATTRIBUTED, **helpers}
    return native.kernels.walk_steps(raw_steps, query, problem_id, *args.values())


def _shape(value):
    """A value with every dict as its items in order and every leaf with its type: equal only when the walk is the
    same objects' values in the same key order."""
    if isinstance(value, dict):
        return (type(value).__name__, [(k, _shape(v)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        return (type(value).__name__, [_shape(v) for v in value])
    return (type(value).__name__, value if value == value else "nan")


def assert_same(got, want) -> None:
    assert _shape(got) == _shape(want)


def _same(raw_steps, query=None, problem_id=None) -> bool:
    """The kernel's walk equals the reference's, or it hands the dialogue to the reference (None), or both raise
    alike; the dispatcher always equals the reference. True when the kernel read the dialogue itself."""
    try:
        want = normalize.walk_steps_py(raw_steps, query, problem_id)
    except Exception as exc:  # noqa: BLE001 - whatever the reference raises, the dispatcher must raise alike
        return refused_alike(exc, lambda: DISPATCH(raw_steps, query, problem_id),
                             lambda: _kernel(raw_steps, query, problem_id))
    assert_same(DISPATCH(raw_steps, query, problem_id), want)
    got = _kernel(raw_steps, query, problem_id)
    if got is None:
        return False
    assert type(got) is tuple
    assert_same(got, want)
    return True


PRODUCTS = [{"title": "t", "product_id": "1"}, {"title": "u", "product_id": 2}, {"product_id": "1"}]


def _call(name="find_product", result=PRODUCTS, **extra):
    call = {"name": name, "parameters": {"q": "x"}, "tool_call_id": "BQ5y"}
    if result is not ...:
        call["result"] = result
    return {**call, **extra}


def _step(calls=None, *, think="t", ts=1_772_323_226_062, proxy=None, **extra):
    msg = {"think": think, "tool_call": [_call()] if calls is None else calls}
    info = {"step": 1, "query": "q", "problem_id": "p", "timestamp": ts}
    if proxy is not None:
        info["proxy_calls"] = proxy
    step = {"completion": {"reasoning_content": "", "content": "c", "message": msg}, "extra_info": info}
    return {**step, **extra}


def _with(step, path, value):
    """A copy of ``step`` with the value at ``path`` (keys into nested dicts) set; ``...`` deletes it."""
    step = orjson.loads(orjson.dumps(step))
    node = step
    for key in path[:-1]:
        node = node[key]
    if value is ...:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    return step


MSG = ("completion", "message")
INFO = ("extra_info",)
DEEP = [[[[[[[[{"product_id": "deep"}]]]]]]]]
RESULTS = [..., None, "plain text", "  [1,", orjson.dumps(PRODUCTS).decode(), "\u3000\n{\"product_id\": \"ws\"}",
           "\n\t\r [{\"product_id\": \"nl\"}]", {"data": {"items": PRODUCTS}}, DEEP, DEEP[0], 5, 1.5, True,
           [{"product_id": 2**62}, {"product_id": -(2**62)}], Str("[{\"product_id\": \"s\"}]"), [Dict(product_id="d")],
           "😀 [", "[" * 2000 + "]" * 2000, "[{\"product_id\": 123456789012345678901234567890}]",
           [{"product_id": ""}, {"product_id": 0}, {"product_id": False}]]
SURROGATE = "\ud800"
HOSTILE = [
    # steps that are not dicts, and dict subclasses (the reference refuses both)
    [None], [1], ["x"], [[]], [Dict(_step())], [_step(), 5], [_step(), _step(), None],
    # completion, message, extra_info of every type; message at the step's level (no message in the completion)
    [_with(_step(), ("completion",), None)], [_with(_step(), ("completion",), 1)], [_with(_step(), ("completion",), [])],
    [{"completion": Dict(_step()["completion"]), "extra_info": {}}], [_with(_step(), ("completion",), ...)],
    [_with(_step(), MSG, None)], [_with(_step(), MSG, 1)], [_with(_step(), MSG, "x")], [_with(_step(), MSG, [])],
    [{**_step(), "completion": {"content": "c", "message": Dict(think="t")}}],
    [{"completion": {"content": "c"}, "message": {"think": "s", "tool_call": [_call()]}, "extra_info": {}}],
    [{"completion": {"content": "c"}, "message": None, "extra_info": {}}],
    [{"completion": {"content": "c"}, "message": 1, "extra_info": {}}],
    [_with(_step(), INFO, None)], [_with(_step(), INFO, ...)], [_with(_step(), INFO, 1)],
    [{**_step(), "extra_info": Dict(query="q")}],
    # query and problem id read from the first step that has them, refused when not str or null
    [_with(_step(), INFO + ("query",), 1)], [_with(_step(), INFO + ("problem_id",), ["p"])],
    [_with(_step(), INFO + ("query",), Str("q"))], [_with(_step(), INFO + ("query",), None), _step()],
    [_with(_step(), INFO + ("query",), ...), _with(_step(), INFO + ("query",), 7)],
    # prompts: read once, from the first step that has one that gives messages; refused by the reference's helper
    [_step(prompt=[{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])],
    [_step(prompt=[]), _step(prompt=[{"role": "user", "content": [{"text": "a"}, "b"]}])],
    [_step(prompt="x")], [_step(prompt=[1])], [_step(prompt=[{"role": "user", "content": 5}])],
    [_step(prompt=None), _step(prompt=[{"role": "assistant", "content": "a"}])],
    [_step(), _step(prompt=[{"role": "system", "content": "later"}])],
    # thinking: the message's, the completion's reasoning, a <think> block of the content; of every type
    [_with(_step(), MSG + ("think",), None)], [_with(_step(), MSG + ("think",), 1)],
    [_with(_step(), MSG + ("think",), Str("t"))], [_with(_step(), MSG + ("think",), "")],
    [_with(_with(_step(), MSG + ("think",), ""), ("completion", "reasoning_content"), "reasoned")],
    [_with(_with(_step(), MSG + ("think",), ...), ("completion", "reasoning_content"), 3)],
    [_with(_with(_step(), MSG + ("think",), ...), ("completion", "reasoning_content"), None)],
    [_with(_with(_step(), MSG + ("think",), ""), ("completion", "content"), "<think> a </think>b<think>c")],
    [_with(_step(), ("completion", "content"), "<think>kept think</think>")],
    [_with(_step(), ("completion", "content"), None)], [_with(_step(), ("completion", "content"), 1)],
    [_with(_step(), ("completion", "content"), Str("c"))],
    # harness content without a message: think, calls and response recovered from the text
    [{"completion": {"content": '<think>a</think><tool_call>[{"name": "find_product", "arguments": {"q": "a"}}]'
                                '</tool_call> tail'}, "extra_info": {"timestamp": 5}}],
    [{"completion": {"content": "<tool_call>{not json</tool_call>"}, "extra_info": {}}],
    [{"completion": {"content": '<tool_call>[{"name": 1}]</tool_call>'}, "extra_info": {}}],
    [{"completion": {"content": "plain", "reasoning_content": "r"}, "extra_info": {}}],
    # the call list: tool_call first (even null), then tool_calls; of every type
    [_with(_step(), MSG + ("tool_call",), None)], [_with(_with(_step(), MSG + ("tool_call",), ...), MSG + ("tool_calls",),
                                                             [_call("view_product_information")])],
    [_with(_with(_step(), MSG + ("tool_call",), None), MSG + ("tool_calls",), [_call()])],
    [_with(_step(), MSG + ("tool_call",), "x")], [_with(_step(), MSG + ("tool_call",), {})],
    [_step(calls=List([_call()]))],
    [_with(_step(), MSG + ("response",), "said")], [_with(_step(), MSG + ("response",), 1)],
    [_with(_step(), MSG + ("response",), Str("r"))], [_with(_step(), MSG + ("response",), None)],
    # calls of every shape: not dicts, names, arguments, results
    [_step(calls=[None])], [_step(calls=[1])], [_step(calls=[[]])], [_step(calls=[Dict(_call())])],
    [_step(calls=[_call(), 7])], [_step(calls=[{"parameters": {}}])], [_step(calls=[_call(name=1)])],
    [_step(calls=[_call(name=Str("n"))])], [_step(calls=[_call(name="😀é")])],
    [_step(calls=[_call(parameters='{"q": "json text"}'), _call(parameters="not json"), _call(parameters=None),
                  _call(parameters=[1, 2]), _call(parameters=3), _call(parameters=Dict(q=1))])],
    [_step(calls=[{"name": "a", "arguments": {"q": 1}}, {"name": "b", "arguments": '{"x":1}'}, {"name": "c"},
                  {"name": "d", "parameters": None, "arguments": {"ignored": 1}}])],
    [_step(calls=[_call(result=r) for r in RESULTS])], *([_step(calls=[_call(result=r)])] for r in RESULTS),
    # values orjson refuses: the project's dumps then encodes them or raises its own error, in both
    [_step(calls=[_call(result={1: "non-str key"})])], [_step(calls=[_call(parameters={2: "k"})])],
    [_step(calls=[_call(result=[2**64])])], [_step(calls=[_call(parameters={"q": 2**64})])],
    [_step(calls=[_call(result=SURROGATE)])], [_step(calls=[_call(result=[SURROGATE])])],
    [_step(calls=[_call(parameters={"q": SURROGATE})])], [_step(calls=[_call(result={"s": {1, 2}})])],
    # ShoppingBench observations: paired by id, by position, or kept as orphans, by the reference's own helper
    [_with(_step(calls=[_call(result=..., tool_call_id="a"), _call(result=..., tool_call_id="b")]), MSG + ("obs",),
           [{"tool_call_id": "b", "results": [{"product_id": "9"}]}, {"result": "positional"}, {"tool_call_id": "z"}])],
    [_with(_step(), MSG + ("obs",), "x")], [_with(_step(), MSG + ("obs",), [1])], [_with(_step(), MSG + ("obs",), [])],
    [_with(_step(), MSG + ("obs",), None)], [_with(_step(), MSG + ("obs",), List([{"result": 1}]))],
    # ORO's auto-recommend step: evidence only, out of the turns; near misses stay turns
    [_step(), _step(calls=[_call("recommend_product")], think=FALLBACK_THINK)],
    [_step(calls=[_call("recommend_product"), _call("recommend_product")], think=FALLBACK_THINK)],
    [_step(calls=[_call("find_product")], think=FALLBACK_THINK)], [_step(calls=[], think=FALLBACK_THINK)],
    [_step(calls=[_call(Str("recommend_product"))], think=FALLBACK_THINK)],
    # proxy calls: only dicts listed; refused when not a list
    [_step(proxy=[{"path": "/inference"}, None, 1, "x", Dict(path="/search"), []])], [_step(proxy="x")],
    [_step(proxy={})], [_step(proxy=List([{}]))], [_with(_step(), INFO + ("proxy_calls",), None)],
    # stamps and the run time: ints at the int64 edges, bools, floats, text, null, absent
    [_step(ts=t) for t in (BIG, BIG - 1, -BIG, -BIG - 1, True, 1.5, 2.0, float("nan"), float("inf"), "123", None, [])],
    [_with(_step(), INFO + ("timestamp",), ...)],
] + [
    [_with(_step(), INFO + ("execution_time",), v), _with(_step(), INFO + ("execution_time",), 9)]
    for v in (17.1, 3, None, "1", True, BIG, -1.0)
] + [
    # unicode everywhere
    [_step(think="😀é\u0301" + SURROGATE, calls=[_call(name="名前", result=[{"product_id": "ü"}])])],
    [_step() for _ in range(40)],
]


def _timed(stamps, call_stamps, run_time=...):
    """A dialogue whose steps are stamped ``stamps`` and list proxy calls stamped ``call_stamps`` (one list a step);
    step 1's execution_time ``run_time`` (absent: ``...``)."""
    steps = []
    for pos, (stamp, listed) in enumerate(zip(stamps, call_stamps, strict=True)):
        proxy = [{"path": "/search/find_product", "timestamp": t, "params": {"q": f"{pos}.{j}"}}
                 for j, t in enumerate(listed)]
        step = _step(ts=stamp, proxy=proxy)
        if pos == 0 and run_time is not ...:
            step["extra_info"]["execution_time"] = run_time
        steps.append(step)
    return steps


#: proxy calls attributed to the steps by their stamps: the common case (read in C) and each way out of it (the
#: reference's helper): stamps missing, out of order or past int64, calls unstamped, before the run, after the last
#: step, out of time order in a step
ATTRIBUTION = [
    _timed([100, 200, 300], [[50, 90], [150], [250, 300]]), _timed([100, 200, 300], [[100], [200], [300]]),
    _timed([100, 200, 300], [[250], [], [50, 60]]), _timed([100, 100, 200], [[100, 150], [], [99]]),
    _timed([-300, -200, -100], [[-250], [-400], [-100]]), _timed([100, 200], [[], []]),
    _timed([100, 200], [[], [301]]), _timed([100, 200], [[180, 150], []]), _timed([100, 200], [[190], [150]]),
    _timed([100, 200], [[150, 150], [150]]), _timed([100, 200], [[None], [150]]), _timed([100, 200], [[True], []]),
    _timed([100, 200], [[1.5], []]), _timed([100, 200], [["150"], []]), _timed([100, 200], [[BIG], []]),
    _timed([100, 200], [[-BIG - 1], []]), _timed([100, 200], [[-BIG], []]), _timed([200, 100], [[150], []]),
    _timed([100, None], [[50], []]), _timed([100.0, 200], [[50], []]), _timed([100, BIG], [[150], []]),
    _timed([-BIG, 0], [[-5], []], run_time=10), _timed([-BIG + 2000, 0], [[-5], []], run_time=1),
    *[_timed([100_000, 200_000], [[t], [150_000]], run_time=r)
      for t, r in [(88_000, 11), (87_999, 11), (89_000, 11), (50_000, 17.1187), (81_881, 17.1187), (81_882, 17.1187),
                   (99_000, 0),
                   (98_999, 0.0), (98_000, -0.0), (98_000, True), (98_000, 86_399.9999), (1, 86_399), (1, 86_400),
                   (1, 86_400.0), (1, float("nan")), (1, float("inf")), (1, 2**70), (1, "5"), (1, None), (1, -1),
                   (1, -0.5), (1, [])]],
    [_with(_with(_step(proxy=[None, 1, {"path": "/x", "timestamp": 5}]), INFO + ("timestamp",), 10),
           INFO + ("execution_time",), 0.001)],
    [_step(ts=10, proxy=[]), _step(ts=20, proxy=[None, "x"])],
]


@pytest.mark.parametrize("steps", ATTRIBUTION, ids=range(len(ATTRIBUTION)))
def test_proxy_calls_are_attributed_alike(steps, kernels):
    assert _same(steps)


def test_the_common_attribution_is_made_in_the_kernel(kernels):
    """The kernel attributes a dialogue's calls itself when every stamp is an int64 in order and every call falls in
    a step's window in time order; otherwise it asks the reference's helper (and uses what it says)."""
    seen: list = []

    def attribution(stamps, listed, run_time):
        seen.append(stamps)
        return normalize._attribution(stamps, listed, run_time)

    common = _timed([100, 200, 300], [[50, 90], [150], [250, 300]], run_time=0.01)
    assert_same(_kernel(common, attribution=attribution), normalize.walk_steps_py(common, None, None))
    assert not seen and _kernel(common)[7] == calls.ATTRIBUTED
    assert _kernel(_timed([1, 2], [[], []]), attribution=attribution)[7] == calls.NO_PROXY_CALLS and not seen
    for steps in (_timed([100, 200], [[301], []]), _timed([100, 200], [[None], []]), _timed([200, 100], [[1], []]),
                  _timed([100, 200], [[180, 150], []]), _timed([100_000, 200_000], [[50], []], run_time=1)):
        assert_same(_kernel(steps, attribution=attribution), normalize.walk_steps_py(steps, None, None))
    assert len(seen) == 5
    assert _kernel(_timed([200, 100], [[1], []]), attribution=lambda *a: ([], "n", 1)) is None
    assert _kernel(_timed([200, 100], [[1], []]), attribution=lambda *a: ([[]], "said"))[6:8] == ([[]], "said")


@pytest.mark.parametrize("steps", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_dialogues_walk_alike(steps, kernels):
    _same(steps)


@pytest.mark.parametrize("query,problem_id", [("given", "pid"), ("given", None), (None, "pid"), ("", "")])
def test_a_query_and_problem_id_given_are_kept_and_not_read_again(query, problem_id, kernels):
    steps = [_with(_with(_step(), INFO + ("query",), 1), INFO + ("problem_id",), 2)]
    assert _same(steps, query, problem_id) == (query is not None and problem_id is not None)


@pytest.mark.parametrize("steps,query,problem_id", [
    (List([_step()]), None, None), ([], None, None), ([_step()], Str("q"), None), ([_step()], None, 1), ((_step(),), None, None),
])
def test_arguments_off_the_common_path_go_to_the_reference(steps, query, problem_id, kernels):
    assert _kernel(steps, query, problem_id) is None
    if isinstance(steps, list):
        assert not _same(steps, query, problem_id)


def test_the_common_path_is_read_by_the_kernel(kernels):
    """What ORO's recorders write is read in C, not handed back: messages, prompts, observations, harness content."""
    common = [HOSTILE[i] for i in range(len(HOSTILE)) if isinstance(HOSTILE[i][0], dict)]
    read = sum(_same(steps) for steps in common)
    assert read >= 0.6 * len(common)
    assert _same([_step(), _step(calls=[_call("recommend_product")], think=FALLBACK_THINK)])
    assert _same([_step(prompt=[{"role": "user", "content": "u"}]), _step()])


def test_the_comparison_sees_a_divergence(kernels):
    """The equality the tests rest on fails on a walk that differs from the reference's in any way the columns would
    show: a value, a type, a key's order, a missing key."""
    steps = [_step(prompt=[{"role": "user", "content": "u"}]),
             _step(calls=[_call(), _call("view_product_information", result=...)])]
    want = normalize.walk_steps_py(steps, None, None)
    got = _kernel(steps)
    assert_same(got, want)

    def mutated(change):
        copy = orjson.loads(orjson.dumps(list(got)))
        change(copy)
        return tuple(copy)

    def reorder(walk):
        step = walk[4][0]
        walk[4][0] = dict(reversed(list(step.items())))

    def drop_key(walk):
        del walk[3][0]["reasoning_content"]

    def retype(walk):
        walk[4][1]["step"] = True if walk[4][1]["step"] == 1 else 2.0

    def revalue(walk):
        walk[4][1]["tool_calls"][1]["id"] = "call_2_2"

    def recount(walk):
        walk[8] += 1

    assert_same(mutated(lambda walk: None), want)  # the copy itself compares equal
    for change in (reorder, drop_key, retype, revalue, recount):
        with pytest.raises(AssertionError):
            assert_same(mutated(change), want)
    with pytest.raises(AssertionError):
        assert_same(list(got), want)  # a list where the reference gives a tuple


def test_the_helpers_are_the_ones_passed_in(kernels):
    """What the kernel hands to a helper goes to the helper it is given; a helper's error propagates, and a helper's
    result of an unexpected shape sends the dialogue to the reference."""
    seen: list = []

    def prompt_messages(prompt, pos):
        seen.append((prompt, pos))
        return [{"role": "system", "content": "from the helper"}]

    got = _kernel([_step(prompt="anything")], prompt_messages=prompt_messages)
    assert got[2] == [{"role": "system", "content": "from the helper"}] and seen == [("anything", 1)]

    def boom(*_):
        raise RuntimeError("boom")

    harness = [{"completion": {"content": "x"}, "extra_info": {}}]
    obs = [_with(_step(), MSG + ("obs",), [{"result": 1}])]
    for steps, helper in (([_step(prompt=[])], "prompt_messages"), (harness, "split_content"),
                          (obs, "step_calls"), ([_step(calls=[_call(parameters="{}")])], "arguments_json"),
                          ([_step(calls=[_call(result=Str("[]"))])], "product_ids"),
                          ([_step(calls=[_call(result="[1]")])], "loads"), ([_step(ts=1.5)], "as_timestamp"),
                          ([_with(_with(_step(), MSG + ("think",), ""), ("completion", "content"), "<think>")],
                           "think_and_text")):
        with pytest.raises(RuntimeError, match="boom"):
            _kernel(steps, **{helper: boom})
    # the encoder's refusal goes to dumps, whose text (or error) is used
    assert _kernel([_step()], encode=boom, dumps=lambda v: "D")[4][0]["tool_calls"][0]["arguments"] == "D"
    with pytest.raises(RuntimeError, match="boom"):
        _kernel([_step()], encode=boom, dumps=boom)
    for steps, helper, odd in ((harness, "split_content", lambda c: ("", [], "", "")),
                               (harness, "split_content", lambda c: ("", (), "")),
                               (harness, "split_content", lambda c: (None, [], "")),
                               (obs, "step_calls", lambda *a: ([], [])), (obs, "step_calls", lambda *a: ([], (), [])),
                               ([_with(_with(_step(), MSG + ("think",), ""), ("completion", "content"), "<think>")],
                                "think_and_text", lambda c: [c, c])):
        assert _kernel(steps, **{helper: odd}) is None


def test_the_kernel_refuses_bad_arguments(kernels):
    with pytest.raises(TypeError):
        native.kernels.walk_steps([_step()])
    for bad in ({"max_id_depth": -1}, {"max_id_depth": 65}):
        with pytest.raises(ValueError):
            _kernel([_step()], **bad)
    for bad in ({"max_id_depth": "6"}, {"decode_error": ValueError("x")}, {"decode_error": int}):
        with pytest.raises(TypeError):
            _kernel([_step()], **bad)


def test_a_simulated_day_walks_alike(kernels, monkeypatch):
    """Every dialogue of a simulated day of both recorder eras, compared as the normaliser reads it (the kernel reads
    nearly all of them itself); and every normalised row the same with the kernel as with the reference."""

    seen = {"read": 0, "handed_back": 0, "steps": 0, "results": 0, "prompts": 0, "observations": 0}

    def both(raw_steps, query, problem_id):
        read = _same(raw_steps, query, problem_id)
        seen["read" if read else "handed_back"] += 1
        seen["steps"] += len(raw_steps)
        for step in raw_steps:
            msg = (step.get("completion") or {}).get("message") if isinstance(step, dict) else None
            if isinstance(msg, dict):
                calls = msg.get("tool_call", msg.get("tool_calls"))
                seen["results"] += sum(1 for c in calls or () if isinstance(c, dict) and "result" in c)
                seen["observations"] += bool(msg.get("obs"))
            seen["prompts"] += isinstance(step, dict) and "prompt" in step
        return normalize.walk_steps_py(raw_steps, query, problem_id)

    day = "2026-01-05"
    with tempfile.TemporaryDirectory() as tmp:
        files = both_eras_day(tmp, day, 120)
        native_rows = normalized_rows(files, day)
        monkeypatch.setattr(normalize, "_kernels", None)
        reference_rows = normalized_rows(files, day)
        # the dispatcher is reached through from_steps' reference: its fused kernel declines every dialogue here
        monkeypatch.setattr(normalize, "_kernels", KernelsWith("from_steps", lambda *args: None))
        monkeypatch.setattr(normalize, "walk_steps", both)
        assert normalized_rows(files, day) == reference_rows
    assert native_rows == reference_rows
    assert len(native_rows) >= 90
    assert seen["read"] >= 0.95 * (seen["read"] + seen["handed_back"]), seen
    assert min(seen["steps"], seen["results"]) > 200 and min(seen["prompts"], seen["observations"]) > 3, seen


TEXT = st.text(alphabet=st.sampled_from('ab "\\{}[]<>/😀é\ud800\u3000'), max_size=20)
THINKY = st.one_of(TEXT, st.sampled_from(["<think>x</think>y", "<think>", FALLBACK_THINK, ""]))
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-(2**65), 2**65), st.floats(), TEXT)
ID = st.one_of(st.text(alphabet="12x", max_size=3), st.integers(-3, 3), st.booleans(), st.none())
RESULT = st.one_of(SCALAR, st.lists(st.fixed_dictionaries({"product_id": ID}), max_size=3),
                   st.lists(st.fixed_dictionaries({"product_id": ID}), max_size=3).map(lambda v: orjson.dumps(v).decode()),
                   st.dictionaries(st.sampled_from(["data", "product_id", "x"]), ID, max_size=2))
CALL = st.one_of(st.fixed_dictionaries(
    {"name": st.one_of(st.sampled_from(["find_product", "recommend_product", ""]), st.none(), st.integers(0, 1))},
    optional={"parameters": st.one_of(st.none(), TEXT, st.dictionaries(st.text(max_size=2), SCALAR, max_size=2)),
              "arguments": st.one_of(st.none(), TEXT, st.dictionaries(st.text(max_size=2), ID, max_size=2)),
              "result": RESULT, "tool_call_id": st.sampled_from(["a", "b", None])}), SCALAR)
OBS = st.fixed_dictionaries({}, optional={"tool_call_id": st.sampled_from(["a", "b", None, 1]), "results": RESULT,
                                          "result": RESULT})
MESSAGE = st.fixed_dictionaries({}, optional={
    "think": st.one_of(THINKY, st.none(), st.integers(0, 1)), "tool_call": st.one_of(st.lists(CALL, max_size=3), SCALAR),
    "tool_calls": st.lists(CALL, max_size=2), "response": st.one_of(TEXT, st.none(), st.integers(0, 1)),
    "obs": st.one_of(st.lists(OBS, max_size=2), st.none(), st.just([]))})
PROXY = st.lists(st.one_of(st.fixed_dictionaries({"path": st.sampled_from(["/inference/chat/completions", "/x"])}),
                           st.none(), st.integers()), max_size=3)
INFO_ST = st.fixed_dictionaries({}, optional={
    "query": st.one_of(TEXT, st.none(), st.integers(0, 1)), "problem_id": st.one_of(TEXT, st.none(), st.integers(0, 1)),
    "timestamp": SCALAR, "execution_time": SCALAR, "proxy_calls": st.one_of(PROXY, st.none(), TEXT)})
STEP = st.one_of(st.fixed_dictionaries({}, optional={
    "completion": st.one_of(st.fixed_dictionaries({}, optional={
        "message": st.one_of(MESSAGE, st.none(), st.integers(0, 1)), "content": st.one_of(THINKY, st.none()),
        "reasoning_content": st.one_of(TEXT, st.none(), st.integers(0, 1))}), st.none(), st.integers(0, 1)),
    "message": st.one_of(MESSAGE, st.none()),
    "extra_info": st.one_of(INFO_ST, st.none(), st.integers(0, 1)),
    "prompt": st.one_of(st.lists(st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "tool"]),
                                                        "content": st.one_of(TEXT, st.none(), st.integers())}),
                                 max_size=2), st.none(), TEXT)}), SCALAR)


@settings(max_examples=400, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=4), st.one_of(st.none(), TEXT), st.one_of(st.none(), TEXT))
def test_random_dialogues_walk_alike(steps, query, problem_id):
    require_kernels()
    _same(steps, query, problem_id)


# dialogues as ORO's recorders and ShoppingBench write them, with random values of the types they write: most are read
# by the kernel itself, so the random values exercise its own reading rather than the hand-back
NAME = st.sampled_from(["find_product", "view_product_information", "recommend_product", "", "名前"])
PLAIN_CALL = st.fixed_dictionaries({"name": NAME}, optional={
    "parameters": st.one_of(st.dictionaries(st.text(max_size=3), ID, max_size=3), TEXT, st.none()),
    "result": RESULT, "tool_call_id": st.sampled_from(["a", "b"])})
PLAIN_MESSAGE = st.fixed_dictionaries({"think": THINKY}, optional={
    "tool_call": st.lists(PLAIN_CALL, max_size=3), "response": TEXT,
    "obs": st.one_of(st.just([]), st.lists(OBS, min_size=1, max_size=2))})
PLAIN_INFO = st.fixed_dictionaries({"timestamp": st.one_of(st.integers(0, 2**62), st.sampled_from([BIG, -BIG - 1, 1.0]))},
                                   optional={"query": TEXT, "problem_id": TEXT,
                                             "execution_time": st.floats(0, 90_000, allow_nan=False),
                                             "proxy_calls": PROXY})
PLAIN_STEP = st.one_of(
    st.fixed_dictionaries({"completion": st.fixed_dictionaries({"content": THINKY, "message": PLAIN_MESSAGE},
                                                               optional={"reasoning_content": TEXT}),
                           "extra_info": PLAIN_INFO},
                          optional={"prompt": st.lists(st.fixed_dictionaries({"role": st.sampled_from(["system", "user"]),
                                                                              "content": TEXT}), max_size=2)}),
    st.fixed_dictionaries({"completion": st.fixed_dictionaries({"content": st.one_of(THINKY, NAME.map(
        lambda n: f'<think>t</think><tool_call>[{{"name": "{n}", "arguments": {{"q": 1}}}}]</tool_call> r'))}),
        "extra_info": PLAIN_INFO}))


@settings(max_examples=300, deadline=None)
@given(st.lists(PLAIN_STEP, min_size=1, max_size=5), st.one_of(st.none(), TEXT), st.one_of(st.none(), TEXT))
def test_random_recorded_dialogues_walk_alike(steps, query, problem_id):
    require_kernels()
    _same(steps, query, problem_id)


STAMP = st.integers(-(10**6), 10**6)
CALL_STAMP = st.one_of(STAMP, STAMP, STAMP, st.none(), st.sampled_from([1.5, True, BIG, -BIG - 1]))


@settings(max_examples=300, deadline=None)
@given(st.lists(STAMP, min_size=1, max_size=5).map(sorted), st.data(),
       st.one_of(st.just(...), st.none(), st.floats(-1, 100_000), st.integers(-5, 100_000)))
def test_random_stamps_attribute_alike(stamps, data, run_time):
    require_kernels()
    call_stamps = [data.draw(st.lists(CALL_STAMP, max_size=3)) for _ in stamps]
    if data.draw(st.booleans()):  # now and then a stamp out of order or missing
        stamps[data.draw(st.integers(0, len(stamps) - 1))] = data.draw(st.one_of(STAMP, st.none()))
    _same(_timed(stamps, call_stamps, run_time))
