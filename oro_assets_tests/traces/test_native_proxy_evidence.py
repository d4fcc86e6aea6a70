"""The native ``proxy_evidence`` (``oro_assets/_native.c``) equals its Python reference, ``formats.proxy_evidence_py``:
the inference and search evidence of every step's proxy calls come out the same (values, types and key order, so the
``steps`` column is the same bytes), on a simulated day of both recorder eras, hostile proxy calls and
Hypothesis-random ones. Skips without the built extension, and fails instead under CI (whose install builds it)."""

from __future__ import annotations

import tempfile

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oro_assets import jsonio, native
from oro_assets.traces import formats, normalize
from oro_assets_tests.native_support import (
    Dict,
    KernelsWith,
    List,
    Str,
    both_eras_day,
    normalized_rows,
    outcomes,
    require_kernels,
)

INFER = "/inference/chat/completions"
FIND = "/search/find_product"
LIMIT = formats.CONTENT_LIMIT



def _kernel(calls, **helpers):
    args = {"answer_calls": formats.answer_calls, "evidence_from_text": formats._evidence_from_text,
            "loads": jsonio.loads, "decode_error": jsonio.JSONDecodeError, "product_ids": formats.product_ids,
            "max_id_depth": formats._MAX_ID_DEPTH, "content_limit": LIMIT, **helpers}
    return native.kernels.proxy_evidence(calls, *args.values())


def _shape(value):
    """A value with every dict as its items in order and every leaf with its type: equal only when the evidence is
    the same objects' values in the same key order."""
    if isinstance(value, dict):
        return ("dict", [(k, _shape(v)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        return (type(value).__name__, [_shape(v) for v in value])
    return (type(value).__name__, value if value == value else "nan")


def _same(calls) -> None:
    """The kernel's evidence equals the reference's, or both raise alike; the dispatcher equals the reference."""
    both = outcomes(lambda: formats.proxy_evidence_py(calls), lambda: _kernel(calls))
    if both is None:
        return
    want, got = both
    assert _shape(got) == _shape(want)
    assert type(got) is tuple
    assert _shape(formats.proxy_evidence(calls)) == _shape(want)


def _answer(content="", names=(), tokens=7, reasoning=None, choices=1):
    message = {"role": "assistant", "content": content}
    if names:
        message["tool_calls"] = [{"id": f"c{i}", "type": "function",
                                  "function": {"name": n, "arguments": '{"q": "x"}'}} for i, n in enumerate(names)]
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return {"id": "r", "choices": [{"index": i, "message": message} for i in range(choices)],
            "usage": {"completion_tokens": tokens}}


def _infer(response=None, *, path=INFER, **extra):
    call = {"kind": "summary", "path": path, "timestamp": 1_772_323_226_062, "status_code": 200}
    if response is not None:
        call["response"] = response
    return {**call, **extra}


def _find(response=None, *, path=FIND, **extra):
    call = {"kind": "summary", "path": path, "timestamp": 1_772_323_226_100, "params": {"q": "x", "page": 1}}
    if response is not None:
        call["response"] = response
    return {**call, **extra}


PRODUCTS = [{"title": "t", "product_id": "1"}, {"title": "u", "product_id": 2}, {"product_id": "1"}]
BIG = 2**63
HOSTILE_CALLS = [
    [], [None, 1, "x", [], (), {}], [{"path": None}, {"path": 1}, {"path": INFER.encode()}, {"kind": "attempt"}],
    # retries skipped, whatever else they hold; kinds of every type compared as the reference compares them
    [_infer(_answer(names=["find_product"]), kind="attempt"), _infer(_answer(), kind=None), _infer(_answer(), kind=1),
     _infer(_answer(), kind=["attempt"]), _infer(_answer(), kind="ATTEMPT")],
    # routes: inference by part or suffix, search by part, anything else ignored
    [_infer(_answer(), path="/v1/chat/completions"), _infer(_answer(), path="/inference"),
     _infer(_answer(), path="x/inference/y"), _infer(_answer(), path="/chat/completions/"), _find(PRODUCTS, path="/search"),
     _find(PRODUCTS, path="http://h/search/find_product?q=1"), _find(PRODUCTS, path="/recommend"),
     _infer(_answer(), path=""), _infer(_answer(), path="/inference\ud800"), _find(PRODUCTS, path="/search/😀")],
    # whole answers: structured calls, text blocks, several choices, content past the limit (in code points)
    [_infer(_answer("a" * LIMIT)), _infer(_answer("a" * (LIMIT + 1))), _infer(_answer("😀" * (LIMIT + 3))),
     _infer(_answer("é" * LIMIT + "x")), _infer(_answer(names=["find_product", "view_product_information"])),
     _infer(_answer('<tool_call>[{"name": "find_product", "arguments": {"q": "a"}}]</tool_call>')),
     _infer(_answer('<tool_call>{"name": "find_product", "arguments": {"q": "a"</tool_call>')),
     _infer(_answer("", names=["a"], choices=3)), _infer(_answer("first", choices=2))],
    # odd answer bodies: content of every type, choices and messages that are not dicts, usage of every shape
    [_infer({"choices": [{"message": {"content": None}}, {"message": {"content": "late"}}]}),
     _infer({"choices": [{"message": {"content": "first"}}, {"message": {"content": "second"}}]}),
     # a cut call list in one choice stays cut whatever the next choice says (cut = cut or got_cut)
     _infer({"choices": [{"message": {"tool_calls": [{"function": {"name": "find_product"}}, {"function": None}]}},
                         {"message": {"tool_calls": [{"function": {"name": "find_product"}}]}}]}),
     _infer({"choices": [{"message": {"tool_calls": [{"function": {"name": "a"}}]}},
                         {"message": {"tool_calls": [{"function": 1}]}}, {"message": {"content": "x"}}]}),
     _infer({"choices": [{"message": {"content": 5}}, {"message": {"content": ["x"]}}]}),
     _infer({"choices": [{"message": {"content": 0}}, {"message": {"content": "z"}}]}),
     _infer({"choices": [None, 1, {"message": None}, {"message": []}, {}, {"message": {}}]}),
     _infer({"choices": {"message": {"content": "x"}}}), _infer({"choices": None}), _infer({}),
     _infer({"usage": {"completion_tokens": True}}), _infer({"usage": {"completion_tokens": 1.0}}),
     _infer({"usage": {"completion_tokens": BIG}}), _infer({"usage": {"completion_tokens": BIG - 1}}),
     _infer({"usage": {"completion_tokens": -BIG}}), _infer({"usage": {"completion_tokens": -BIG - 1}}),
     _infer({"usage": []}), _infer({"usage": {"completion_tokens": "7"}}), _infer([_answer()]), _infer(5)],
    # text bodies: whole JSON, cut, unparseable, marked truncated, and not str
    [_infer(orjson.dumps(_answer("x", names=["find_product"])).decode()),
     _infer(orjson.dumps(_answer("y" * 3000)).decode()[:2000], response_truncated=True),
     _infer('{"choices": [{"message": {"content": "cut \\u00e', response_truncated=True),
     _infer('{"usage": {"completion_tokens": 12}, "choices": [{"message": {"content": "a\\"b", "tool_calls": '
            '[{"function": {"name": "find_product"'),
     _infer("not json"), _infer(""), _infer("[1, 2]"), _infer('"text"'), _infer("null"),
     _infer(orjson.dumps(_answer("x")).decode(), response_truncated=True), _infer(b"{}"), _infer(bytearray(b"{}"))],
    # the truncation flag and the dropped body: only True counts; dropped when no body at all
    [_infer(None, response_truncated=True, response_length=2778), _infer(None, response_truncated=1),
     _infer(None, response_truncated="true"), _infer(_answer(), response_truncated=True),
     {"kind": "summary", "path": INFER, "response": None, "response_truncated": True}],
    # the integers read: status, length, timestamp at the int64 edges and of other types
    [_infer(_answer(), status_code=s, response_length=n, timestamp=t) for s, n, t in [
        (None, None, None), (BIG, BIG, BIG), (BIG - 1, BIG - 1, BIG - 1), (-BIG, -1, -BIG), (-BIG - 1, 0, -BIG - 1),
        (True, True, True), (200.0, 5.0, 1.5), ("200", "5", "1"), (404, 2**70, -(2**70))]],
    # search: params or json_data (dicts of any kind), listed ids or the response's, timestamps
    [_find(PRODUCTS), _find(PRODUCTS, result_product_ids=["9", 8, True, 1.0, None, "9", "", ["x"]]),
     _find(PRODUCTS, result_product_ids=[]), _find(PRODUCTS, result_product_ids=None),
     _find(PRODUCTS, result_product_ids="1,2"), _find(PRODUCTS, params=None, json_data={"q": "y"}),
     _find(PRODUCTS, params=[1], json_data=None), _find(PRODUCTS, params="q=1", json_data="x"),
     _find(orjson.dumps(PRODUCTS).decode()), _find("  [{\"product_id\": \"s\"}]"), _find("[1,"), _find("plain"),
     _find({"data": {"items": PRODUCTS}}), _find([[[[[[[[{"product_id": "deep"}]]]]]]]]), _find(None),
     _find(PRODUCTS, timestamp=BIG), _find(PRODUCTS, timestamp=True), _find(PRODUCTS, timestamp=None),
     {"path": FIND}, {"path": FIND, "kind": "summary", "response": PRODUCTS, "params": {}}],
    # one window mixing everything, repeated: the lists keep the calls' order
    [_infer(_answer(names=["find_product"])), _find(PRODUCTS), _infer(None, response_truncated=True),
     _find(PRODUCTS, result_product_ids=["3"])] * 50,
]


SUBCLASSES = [
    [Dict(_infer(_answer()))], [_infer(Dict(_answer()))], [_infer({"choices": List([{"message": {"content": "x"}}])})],
    [_infer({"choices": [Dict(message={"content": "x"})]})], [_infer({"choices": [{"message": Dict(content="x")}]})],
    [_infer({"choices": [{"message": {"content": Str("sub")}}]})], [_infer({"usage": Dict(completion_tokens=3)})],
    [_infer(Str('{"choices": []}'))], [_infer(_answer(), path=Str(INFER))], [_find(PRODUCTS, path=Str(FIND))],
    [_find(PRODUCTS, params=Dict(q="sub"))], [_find(PRODUCTS, result_product_ids=List(["l", Str("s")]))],
    [_find(Str("[{\"product_id\": \"s\"}]"))], [_find(List(PRODUCTS))], [_find([Dict(product_id="d")])],
    (_infer(_answer()), _find(PRODUCTS)),
]


@pytest.mark.parametrize("calls", HOSTILE_CALLS + SUBCLASSES, ids=range(len(HOSTILE_CALLS) + len(SUBCLASSES)))
def test_hostile_proxy_calls_give_the_same_evidence(calls, kernels):
    _same(calls)


def test_any_iterable_of_calls_is_read_in_order(kernels):
    calls = [_infer(_answer(names=["find_product"])), _find(PRODUCTS), _infer(None, response_truncated=True)]
    want = formats.proxy_evidence_py(iter(calls))
    assert _shape(_kernel(iter(calls))) == _shape(want)
    assert _shape(_kernel(c for c in calls)) == _shape(want)


def test_the_helpers_are_the_ones_passed_in(kernels):
    """What the kernel reads as text goes through the helpers it is given, and their failures propagate."""
    seen: list = []

    def answer_calls(msg):
        seen.append(msg)
        return [{"name": "n", "arguments": None}], "structured", False

    inference, _ = _kernel([_infer(_answer(names=["find_product"]))], answer_calls=answer_calls)
    assert inference[0]["tool_calls"] == [{"name": "n", "arguments": None}] and len(seen) == 1

    def boom(*_):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        _kernel([_infer(_answer())], answer_calls=boom)
    with pytest.raises(RuntimeError, match="boom"):
        _kernel([_infer("not json")], evidence_from_text=boom)
    with pytest.raises(RuntimeError, match="boom"):
        _kernel([_infer("{}")], loads=boom)  # not the decode error: it propagates
    with pytest.raises(RuntimeError, match="boom"):
        _kernel([_find("[1]")], product_ids=boom)
    assert _kernel([_find(PRODUCTS)], product_ids=boom)[1][0]["result_product_ids"] == ["1", "2"]  # walked in C
    with pytest.raises(TypeError):
        _kernel([_infer(_answer())], answer_calls=lambda msg: ([], "none"))
    with pytest.raises(TypeError):
        _kernel([_infer("x")], evidence_from_text=lambda body: (None, []))


def test_a_helper_that_changes_the_calls_reads_alike(kernels, monkeypatch):
    """A helper called back that empties the calls it is reading: the kernel reads what is left, as the reference
    does, and holds what it already read (no crash, same evidence)."""
    def window():
        return [_infer(_answer(names=["find_product"]), response_length=5), _find(PRODUCTS, path=FIND + "/x"),
                _find('[{"product_id": "s"}]', timestamp=7)]

    def emptying(calls):
        def helper(value):  # as answer_calls (a message) or product_ids (of a str only: it empties on text)
            if isinstance(value, dict | str):
                for call in calls:
                    call.clear()
            return ([], "none", False) if isinstance(value, dict) else formats.product_ids_py(value)
        return helper

    want_calls, got_calls = window(), window()
    monkeypatch.setattr(formats, "answer_calls", emptying(want_calls))
    want = formats.proxy_evidence_py(want_calls)
    got = _kernel(got_calls, answer_calls=emptying(got_calls))
    assert _shape(got) == _shape(want)
    want_calls, got_calls = window(), window()
    monkeypatch.setattr(formats, "product_ids", emptying(want_calls))
    want = formats.proxy_evidence_py(want_calls)
    got = _kernel(got_calls, product_ids=emptying(got_calls))
    assert _shape(got) == _shape(want)


def test_the_kernel_refuses_bad_arguments(kernels):
    with pytest.raises(TypeError):
        native.kernels.proxy_evidence([])
    for bad in ({"max_id_depth": -1}, {"max_id_depth": 65}, {"content_limit": -1}):
        with pytest.raises(ValueError):
            _kernel([], **bad)
    for bad in ({"max_id_depth": "6"}, {"content_limit": None}, {"decode_error": ValueError("x")},
                {"decode_error": int}):
        with pytest.raises(TypeError):
            _kernel([], **bad)
    with pytest.raises(TypeError):
        _kernel(5)


def test_a_simulated_day_gives_the_same_evidence(kernels, monkeypatch):
    """Every step's proxy calls of a simulated day of both recorder eras, compared as the normaliser reads them; and
    every normalised row the same with the kernel as with the reference."""

    seen = {"inference": 0, "search": 0, "whole": 0, "dropped": 0}
    dispatch = formats.proxy_evidence

    def both(calls):
        want = formats.proxy_evidence_py(calls)
        got = dispatch(calls)
        assert _shape(got) == _shape(want)
        seen["inference"] += len(want[0])
        seen["search"] += len(want[1])
        seen["whole"] += sum(1 for e in want[0] if not e["truncated"] and e["tool_calls"])
        seen["dropped"] += sum(1 for e in want[0] if e["dropped"])
        return want

    day = "2026-01-05"
    with tempfile.TemporaryDirectory() as tmp:
        files = both_eras_day(tmp, day, 80)
        native_rows = normalized_rows(files, day)
        monkeypatch.setattr(formats, "_kernels", None)
        reference_rows = normalized_rows(files, day)
        monkeypatch.undo()
        # the dispatcher is reached through from_steps' reference: its fused kernel declines every dialogue here
        monkeypatch.setattr(normalize, "_kernels", KernelsWith("from_steps", lambda *args: None))
        monkeypatch.setattr(normalize, "proxy_evidence", both)
        assert normalized_rows(files, day) == reference_rows
    assert native_rows == reference_rows
    assert len(native_rows) >= 60
    assert min(seen.values()) > 20, seen  # answers read whole, bodies dropped and searches were all compared


TEXT = st.text(alphabet=st.sampled_from('ab "\\{}[]<>/😀é\ud800'), max_size=30)
ID = st.one_of(st.text(alphabet="12x", max_size=3), st.integers(-3, 3), st.booleans(), st.none())
NAME = st.sampled_from(["find_product", "view_product_information", "", "recommend_product"])
TOOL_CALL = st.fixed_dictionaries({}, optional={"function": st.one_of(
    st.fixed_dictionaries({"name": st.one_of(NAME, st.integers())}, optional={"arguments": st.one_of(TEXT, st.none())}),
    st.none(), TEXT)})
MESSAGE = st.fixed_dictionaries({}, optional={
    "content": st.one_of(TEXT, st.none(), st.integers(0, 2), st.integers(0, 2).map(lambda n: "c" * (n * 1500)),
                         NAME.map(lambda n: f'<tool_call>[{{"name": "{n}", "arguments": {{}}}}]</tool_call>')),
    "tool_calls": st.one_of(st.lists(TOOL_CALL, max_size=3), st.none(), TEXT)})
ANSWER = st.fixed_dictionaries({}, optional={
    "choices": st.one_of(st.lists(st.one_of(st.fixed_dictionaries({}, optional={"message": st.one_of(MESSAGE, st.none())}),
                                            st.none()), max_size=3), st.none()),
    "usage": st.one_of(st.fixed_dictionaries({}, optional={"completion_tokens": st.one_of(
        st.integers(-(2**64), 2**64), st.booleans(), st.floats(allow_nan=False))}), st.none())})
# as text: Python's encoder, which writes any int and escapes lone surrogates (orjson then refuses them: the scan)
RESPONSE = st.one_of(st.none(), ANSWER, ANSWER.map(jsonio.stdlib_dumps),
                     ANSWER.map(lambda a: jsonio.stdlib_dumps(a)[:20]), TEXT,
                     st.lists(st.fixed_dictionaries({"product_id": ID}), max_size=4),
                     st.lists(st.fixed_dictionaries({"product_id": ID}), max_size=4).map(lambda v: orjson.dumps(v).decode()))
INT = st.one_of(st.none(), st.booleans(), st.integers(-(2**64), 2**64), st.sampled_from([2**63, 2**63 - 1, -(2**63)]))
CALL = st.fixed_dictionaries({"path": st.one_of(st.sampled_from([INFER, FIND, "/v1/chat/completions", "/search",
                                                                  "/other", ""]), st.none(), st.integers())},
                             optional={"kind": st.sampled_from(["summary", "attempt", None, 1]), "response": RESPONSE,
                                       "response_truncated": st.sampled_from([True, False, 1, None]),
                                       "status_code": INT, "response_length": INT, "timestamp": INT,
                                       "params": st.one_of(st.none(), st.dictionaries(st.text(max_size=2), ID, max_size=2)),
                                       "json_data": st.one_of(st.none(), st.dictionaries(st.text(max_size=2), ID,
                                                                                          max_size=2)),
                                       "result_product_ids": st.one_of(st.none(), st.lists(ID, max_size=3))})


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(CALL, st.none()), max_size=6))
def test_random_proxy_calls_give_the_same_evidence(calls):
    require_kernels()
    _same(calls)

