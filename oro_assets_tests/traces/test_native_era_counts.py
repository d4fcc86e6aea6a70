"""The native ``era_counts`` (``oro_assets/_native.c``) equals its Python reference, ``calls._era_counts_py``: the
recorder era, its signs and ORO's agentic_richness of every record come out the same, on a simulated day of both
recorder eras, hostile proxy calls and Hypothesis-random ones. Skips without the built extension, and fails
instead under CI (whose install builds it)."""

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
from oro_assets.traces import calls, normalize
from oro_assets_tests.native_support import KernelsWith, require_kernels

ROOT = Path(__file__).resolve().parents[2]
FIND = "/search/find_product"
INFER = calls.ORO_INFERENCE_PATH



def _kernel_counts(listed):
    return native.kernels.era_counts(listed, calls.CATALOGUE_TOOLS, calls._str_route, calls._named_tools,
                                     calls.ORO_INFERENCE_PATH, calls.DROP_LIMIT)


def _same(listed, *, left_to_reference: bool = False) -> None:
    """The kernel's counts equal the reference's (or the kernel leaves the value to it), and the dispatcher's
    era, signs and richness equal the reference's, or both raise alike."""
    try:
        want = calls._era_counts_py(listed)
    except Exception as exc:  # noqa: BLE001 - whatever the reference raises, the dispatcher must raise alike
        got = _kernel_counts(listed)
        assert got is None  # a shape the reference fails on is left to it
        with pytest.raises(type(exc)) as raised:
            calls.era_and_richness(listed)
        assert str(raised.value) == str(exc)
        return
    got = _kernel_counts(listed)
    if left_to_reference:
        assert got is None
    else:
        assert got is not None, "the kernel left a list of lists of dicts to the reference"
        assert got == want
        assert [type(v) for v in got] == [type(v) for v in want]
        assert list(got[8].items()) == list(want[8].items())  # by tool, in the same order
    assert calls.era_and_richness(listed) == calls.era_and_richness_py(listed)


def _answer(content="", names=(), reasoning=None, tags=None):
    message = {"role": "assistant", "content": content}
    if names:
        message["tool_calls"] = [{"id": f"c{i}", "function": {"name": n, "arguments": "{}"}} for i, n in enumerate(names)]
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if tags is not None:
        message["content"] = content + "".join(f"<tool_call>{t}</tool_call>" for t in tags)
    return {"choices": [{"index": 0, "message": message}]}


def _infer(response=None, *, kind="summary", truncated=None, messages=True, path=INFER, **extra):
    call = {"kind": kind, "path": path, "json_data": {"messages": []} if messages else {"model": "m"}}
    if response is not None:
        call["response"] = response
    if truncated is not None:
        call["response_truncated"] = truncated
    return {**call, **extra}


def _dispatch(route=FIND, *, kind="summary", response=None, ids=None):
    call = {"kind": kind, "path": route, "response": response if response is not None else []}
    if ids is not None:
        call["result_product_ids"] = ids
    return call


TOOLS = list(calls.CATALOGUE_TOOLS)
NAMES = list(calls.CATALOGUE_TOOLS.values())
HOSTILE = [
    [], [[]], [[], [], []],
    [[_infer(_answer(names=[NAMES[0]])), _dispatch()]],
    [[_infer(_answer(names=[NAMES[0], NAMES[1]])), _dispatch(TOOLS[0]), _dispatch(TOOLS[1]), _dispatch(TOOLS[1])]],
    [[_dispatch()], [_infer(_answer(names=[NAMES[2]])), _dispatch(TOOLS[0])]],  # no answer; answer names another
    [[_infer(truncated=True, messages=False), _dispatch(ids=["1"])]],  # a dropped body (a6b1cf3)
    [[_infer(), _dispatch(TOOLS[3])]],  # an answer without a body
    [[_infer("x" * calls.DROP_LIMIT), _infer("x" * (calls.DROP_LIMIT + 1))]],  # the limit's edge
    [[_infer(_answer("😀" * 1500, reasoning="é" * 501))]],  # characters, not bytes
    [[_infer(_answer("a" * 1999, reasoning="b"))], [_infer(_answer("a" * 1999, reasoning="bc"))]],
    [[_infer(_answer("\ud800" * 2500))]],  # surrogates: lengths in code points too
    [[_infer(_answer(tags=['[{"name": "find_product", "parameters": {}}]', '{"tool": "view_product_information"}',
                          "not json", '{"function": 3}'])), _dispatch(TOOLS[0]), _dispatch(TOOLS[1])]],
    [[_infer({"choices": "nope"}), _infer({"choices": [None, 1, {"message": None}, {"message": {"content": 5}}]}),
      _infer({"choices": [{"message": {"content": None, "reasoning_content": "r" * 2001}}]}), _dispatch()]],
    [[_infer({"no": "choices"}), _infer([1, 2]), _infer("text"), _dispatch(TOOLS[4])]],
    [[{"kind": "attempt", "path": INFER, "response_truncated": True}, {"kind": "attempt", "path": FIND}]],
    [[{"kind": None, "path": INFER, "response_truncated": True, "json_data": {"messages": 1}}, {"path": FIND}]],
    [[{"kind": 1, "path": FIND, "response": []}, {"kind": ["summary"], "path": INFER},
      {"kind": "Summary", "path": FIND, "response": [], "result_product_ids": None}]],
    [[{"path": None}, {"path": 7, "kind": "summary"}, {"path": b"/inference", "kind": "summary"}, {}]],
    [[_infer(truncated=1), _infer(truncated="true"), _infer(truncated=False), _infer(truncated=True)]],
    [[_infer(json_data=None), _infer(json_data=[1]), _infer(json_data="{}")]],
    [[_infer(_answer(names=[NAMES[0]]), path="/v1/chat/completions"), _dispatch()]],  # an inference not ORO's route
    [[_infer(_answer(names=[NAMES[0]]), path=INFER + "/"), _dispatch(FIND + "/")]],  # trailing slashes
    [[_infer(_answer(names=[NAMES[0]]), path="http://proxy:8000" + INFER + "?x=1"),
      _dispatch("https://h" + FIND + "#f")]],  # full URLs: the route is the URL's path
    [[_infer(_answer(names=[NAMES[0]]), path="//host" + INFER), _dispatch("//host" + FIND)]],
    [[_dispatch("/search/find_product_extra"), _dispatch("/x/search/find_product"), _dispatch("/SEARCH/find_product"),
      _dispatch("/search/find_products_in_same_shop", response={"a": 1})]],
    [[_infer(_answer(names=[NAMES[0]]), path="/inférence/chat/completions"), _dispatch("/search/find_product\u3000"),
      _dispatch("/search/😀"), _dispatch("/search/\ud800")]],
    [[_infer(_answer(names=[NAMES[0]] * 3)), _dispatch(), _dispatch(), _dispatch(), _dispatch()]],
    [[_infer(_answer(names=[NAMES[1]])), _infer(truncated=True), _dispatch(TOOLS[1])]],  # the latest answer counts
    [[_infer(_answer(names=["find_product"])), _dispatch(kind="attempt"), _dispatch()]],
    # structured tool calls of every shape; a text block in any choice (the reference reads the whole answer)
    [[_infer({"choices": [{"message": {"tool_calls": [None, 1, {"function": None}, {"function": {"name": 3}},
                                                       {"function": {"name": NAMES[1]}}, {"function": {}},
                                                       {"function": {"name": NAMES[0]}}, {"name": NAMES[2]}]}}]}),
      _dispatch(TOOLS[1]), _dispatch(TOOLS[0])]],
    [[_infer({"choices": [{"message": {"tool_calls": {"function": {"name": NAMES[0]}}}},
                          {"message": {"tool_calls": "x", "content": ["<tool_call>"]}},
                          {"message": {"tool_calls": [{"function": {"name": NAMES[0]}}]}}]}), _dispatch()]],
    [[_infer({"choices": [_answer(names=[NAMES[1]])["choices"][0],
                          _answer(names=[NAMES[2]], tags=['{"name": "find_product"}'])["choices"][0]]}),
      _dispatch(TOOLS[1]), _dispatch(TOOLS[2]), _dispatch(TOOLS[0])]],
    [[_infer(_answer("<tool_call", names=[NAMES[0]])), _infer(_answer("<TOOL_CALL>[{\"name\": \"x\"}]</TOOL_CALL>")),
      _infer(_answer("<tool_call>[{\"name\": \"find_product\"}]</tool_call>" + "é" * 3000)), _dispatch()]],
    [[_infer(_answer(names=[NAMES[0]])), _dispatch()] * 3000],  # a long dialogue
    [[_infer(_answer("w " * 200_000, names=[NAMES[0]])), _dispatch(FIND, response=[{"p": i} for i in range(5000)])]],
]


@pytest.mark.parametrize("listed", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_proxy_calls_count_the_same(listed, kernels):
    _same(listed)


def test_shapes_the_kernel_leaves_to_the_reference(kernels):
    class Dict(dict):
        def get(self, key, default=None):  # a subclass may read differently: the reference decides
            return "/inference" if key == "path" else super().get(key, default)

    class Str(str):
        def __len__(self):
            return 5000

    _same(([_dispatch()],), left_to_reference=True)  # a tuple of buckets
    _same([(_dispatch(),)], left_to_reference=True)  # a tuple of calls
    _same([[Dict(_dispatch())]], left_to_reference=True)
    _same([[_infer({"choices": [Dict(message={"content": "x"})]})]], left_to_reference=True)
    _same([[_infer({"choices": [{"message": Dict(content="x")}]})]], left_to_reference=True)
    _same([[_infer({"choices": [{"message": {"content": Str("x")}}]})]], left_to_reference=True)
    _same([[_dispatch(), "not a call"]])  # the reference raises; the dispatcher raises alike
    _same([[_dispatch()], None])
    _same([[_infer(path=Str(INFER))]])  # a str subclass path is no path, to both


def test_the_kernel_refuses_bad_arguments(kernels):
    with pytest.raises(TypeError):
        kernels.era_counts([], [], calls._str_route, calls._named_tools, INFER, calls.DROP_LIMIT)
    with pytest.raises(TypeError):
        kernels.era_counts([], calls.CATALOGUE_TOOLS, calls._str_route, calls._named_tools, INFER, "2000")
    with pytest.raises(TypeError):
        kernels.era_counts([])

    def boom(call):
        raise RuntimeError("named_tools failed")

    listed = [[_infer(_answer(tags=['{"name": "find_product"}']))]]  # a text block: the reference reads it
    with pytest.raises(RuntimeError, match="named_tools failed"):
        kernels.era_counts(listed, calls.CATALOGUE_TOOLS, calls._str_route, boom, INFER, calls.DROP_LIMIT)
    # structured tool calls alone are read in C: the helper is not asked
    kernels.era_counts([[_infer(_answer(names=[NAMES[0]]))]], calls.CATALOGUE_TOOLS, calls._str_route, boom, INFER,
                       calls.DROP_LIMIT)


def test_a_simulated_day_counts_the_same(kernels, monkeypatch):
    """Every record of a simulated day of both recorder eras: the normaliser's own calls, compared as it makes them."""
    from oro_assets.arena import recorder
    from oro_assets.arena.firehose import simulate_day
    from oro_assets.traces.ingest import iter_normalized
    from oro_assets.traces.reader import iter_partition_files

    seen: list = []
    eras: set = set()

    def both(listed):
        _same(listed)
        seen.append(listed)
        out = calls.era_and_richness_py(listed)
        eras.add(out[0])
        return out

    # the dispatcher is reached through from_steps' reference: its fused kernel declines every dialogue here
    monkeypatch.setattr(normalize, "_kernels", KernelsWith("from_steps", lambda *args: None))
    monkeypatch.setattr(normalize, "era_and_richness", both)
    day = "2026-01-05"
    with tempfile.TemporaryDirectory() as tmp:
        simulate_day(day, 80, tmp, seed=15, workers=1,
                     recorder_shares={recorder.ERA_A6B1CF3: 0.5, recorder.ERA_LATER: 0.5})
        for _ in iter_normalized(iter_partition_files(tmp, day), day):
            pass
    assert len(seen) >= 60
    assert {calls.ERA_A6B1CF3, calls.ERA_LATER} <= eras
    assert sum(calls._era_counts_py(listed)[7] for listed in seen) > 100  # dispatches were counted


PATHS = st.sampled_from([INFER, INFER + "/", "/v1/chat/completions", "/inference", FIND, FIND + "/", *TOOLS,
                         "/search/recommend_product", "http://h" + FIND + "?q=1", "//h" + INFER, "", "/", "x\ud800",
                         "/search/find_product\u3000"])
NAME = st.sampled_from([*NAMES, "recommend_product", "terminate", "", "FIND_PRODUCT"])
TEXT = st.text(alphabet=st.sampled_from("ab <>/\n😀é\ud800"), max_size=40)
ANSWER = st.one_of(
    st.builds(_answer, content=TEXT, names=st.lists(NAME, max_size=4),
              reasoning=st.one_of(st.none(), TEXT, st.integers(0, 3).map(lambda n: "r" * (n * 700)))),
    st.builds(_answer, content=st.integers(0, 3).map(lambda n: "c" * (n * 700)), tags=st.lists(st.one_of(
        NAME.map(lambda n: f'{{"name": "{n}"}}'), NAME.map(lambda n: f'[{{"tool": "{n}"}}]'), TEXT), max_size=3)),
    st.sampled_from([{}, {"choices": None}, {"choices": [None]}, {"choices": [{"message": []}]}]),
)
RESPONSE = st.one_of(st.none(), ANSWER, st.lists(st.integers(), max_size=3), TEXT, st.integers())
CALL = st.fixed_dictionaries(
    {"path": st.one_of(PATHS, st.none(), st.integers())},
    optional={"kind": st.sampled_from(["summary", "summary", "attempt", "request", None, 1]),
              "response": RESPONSE,
              "response_truncated": st.sampled_from([True, False, 1, None, "true"]),
              "json_data": st.sampled_from([{"messages": []}, {"model": "m"}, None, [], "x"]),
              "result_product_ids": st.sampled_from([["1"], [], None])})
LISTED = st.lists(st.lists(CALL, max_size=8), max_size=5)


@settings(max_examples=400, deadline=None)
@given(LISTED)
def test_random_proxy_calls_count_the_same(listed):
    require_kernels()
    _same(listed)


def test_the_dispatcher_uses_the_kernel_and_oro_native_0_the_reference():
    code = "from oro_assets.traces import calls; print(calls._kernels is None)"
    env = {**os.environ, "ORO_NATIVE": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "True"
    assert (calls._kernels is None) == (native.kernels is None)
