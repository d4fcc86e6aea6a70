"""The native ``answer_calls`` and ``named_tools`` (``oro_assets/_native.c``) equal their Python references,
``calls.answer_calls_py`` (the calls of one chat-completion message, read by the one ``<tool_call>`` parser) and
``calls._named_tools_py`` (the tools an answer named, as ORO's calculator reads them with its regex): hostile messages
and answers (blocks cut short, nested, lenient JSON, names to strip, arguments as text, Unicode whitespace, subclasses,
a decoder that raises), Hypothesis texts built from the blocks' own pieces and from JSON calls, and a simulated day of
both recorder eras normalised the same with and without them; the kernel reads what the recorders write itself (it does
not hand everything to the reference), and a kernel that diverges fails the comparison. Skips without the built
extension, and fails instead under CI (whose install builds it)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oro_assets import jsonio, native
from oro_assets.traces import calls, formats
from oro_assets_tests.native_support import (
    Dict,
    List,
    Str,
    both_eras_day,
    normalized_rows,
    outcomes,
    require_kernels,
)

ROOT = Path(__file__).resolve().parents[2]
DECLINED = "declined"  # what the kernels give back where they hand a value to this stand-in for the reference



def strictly_equal(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down, dicts in the same key order."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(strictly_equal(a[k], b[k]) for k in a)
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(strictly_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def read_here(kernel_name: str, value: Any) -> bool:
    """Whether the kernel reads ``value`` itself rather than calling the reference."""
    kernel = getattr(native.kernels, kernel_name)
    return kernel(lambda _value: DECLINED, jsonio.decode, value) != DECLINED


def _same(kernel_name: str, reference: Any, dispatcher: Any, value: Any) -> bool:
    """The dispatcher's answer for ``value`` is the reference's (or both raise alike); whether the kernel read it."""
    found = outcomes(lambda: reference(value), lambda: dispatcher(value))
    if found is not None:
        want, got = found
        assert strictly_equal(got, want), (value, got, want)
    return read_here(kernel_name, value)


def same_answer(message: Any) -> bool:
    """:func:`_same` for the calls of one chat-completion ``message``."""
    return _same("answer_calls", calls.answer_calls_py, calls.answer_calls, message)


def same_names(call: Any) -> bool:
    """:func:`_same` for the tools one inference ``call`` named."""
    return _same("named_tools", calls._named_tools_py, calls._named_tools, call)


def answer(content: Any, **extra: Any) -> dict:
    """A call whose response holds one choice with ``content`` (and ``extra`` in its message)."""
    return {"path": calls.ORO_INFERENCE_PATH, "response": {"choices": [{"message": {"content": content, **extra}}]}}


def block(body: str) -> str:
    return f"<tool_call>{body}</tool_call>"


ARRAY = '[{"name": "find_product", "parameters": {"q": "red shoe", "page": 1}}]'
OBJECT = '\n{"name": "view_product_information", "arguments": {"product_ids": "123,456"}}\n'
#: texts the recorders write (ORO's reference agent: a JSON array; Qwen3: one object per block), each read in C
RECORDED = [
    block(ARRAY), block(OBJECT), block(OBJECT) + "\n" + block(OBJECT), "I will search now.\n" + block(ARRAY),
    block(ARRAY) + " trailing words", block("[]"), block(' [{"name": "terminate"}] '),
    block('{"name": "recommend_product", "arguments": null}'), block('{"name": "a", "parameters": {}}'),
    block('[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": [1, 2.5, null, true]}}]'),
    block('{"name": "\u00e9t\u00e9 \U0001f600", "arguments": {"q": "caf\u00e9"}}'),
    block('\u2003\x1c{"name": "a"}\xa0\u3000'), block(ARRAY) + block(OBJECT),
    block('{"name": "a", "arguments": {"q": "x"}, "arguments": {"q": "y"}}'),  # duplicate keys: the decoder's last
    block('{"name": "a", "arguments": {"n": 123456789012345678901234567890}}'),  # a float, by the same decoder
]
#: texts the kernel hands to the reference (a block cut short, lenient JSON, an entry that is no call...)
LEFT_TO_REFERENCE = [
    "<tool_call>" + ARRAY, "<tool_call>" + ARRAY + "<tool_call>" + OBJECT + "</tool_call>",
    block(ARRAY) + "<tool_call>" + OBJECT, block(""), block("   "), block("not json"), block('[{"name": "a"},]'),
    block("```json\n" + ARRAY + "\n```"), block("calls: " + ARRAY), block(ARRAY + " and more"), block("1"),
    block("[1, 2]"), block('[{"name": "a"}, 3]'), block('{"tool": "a"}'), block('{"name": 5}'), block('{"name": ""}'),
    block('{"name": " a"}'), block('{"name": "a\u3000"}'), block('{"name": "   "}'),
    block('{"name": "a", "arguments": "{\\"q\\": 1}"}'), block('{"name": "a", "arguments": "not json"}'),
    block('{"name": "a", "arguments": ""}'), block('{"name": "a", "arguments": [1]}'),
    block('{"name": "a", "arguments": 3}'), block('{"name": "a", "parameters": "x"}'),
    block('{"name": "a", "arguments": {"q": "</tool_call>"}}'), block('{"name": "a", "q": "\\ud800"}'),
    block('{"name": "a", "arguments": {"q": "<tool_call>"}}'),  # cut short at the tag inside the string
    block("NaN"), block('{"name": "a", "arguments": {"n": 1e400}}'), block("[" * 2000 + "]" * 2000),
]
#: texts without a block: no calls, read in C
NO_BLOCK = ["", "plain answer", "</tool_call>", "<tool_call", "<TOOL_CALL>[]</TOOL_CALL>", "tool_call>", "\x00" * 5,
            "\ud800 lone surrogate", "\U0001f600" * 100]


@pytest.mark.parametrize("content", RECORDED)
def test_recorded_answers_are_read_in_c(kernels, content):
    assert same_answer({"role": "assistant", "content": content})
    assert same_answer({"content": content, "tool_calls": []})
    assert same_names(answer(content))


@pytest.mark.parametrize("content", LEFT_TO_REFERENCE)
def test_answers_read_leniently_are_left_to_the_reference(kernels, content):
    assert not same_answer({"role": "assistant", "content": content})


@pytest.mark.parametrize("content", NO_BLOCK)
def test_answers_without_a_block_have_no_calls(kernels, content):
    assert same_answer({"role": "assistant", "content": content})
    assert same_names(answer(content))


@pytest.mark.parametrize("message", [
    None, [], "text", 3, Dict(content=block(ARRAY)), {"content": Str(block(ARRAY))},
    {"content": block(ARRAY), "tool_calls": [{"function": {"name": "a", "arguments": "{}"}}]},
    {"content": block(ARRAY), "tool_calls": List()}, {"content": block(ARRAY), "tool_calls": List([1])},
    {"tool_calls": [{"function": {"name": "a", "arguments": "{\"q\": 1}"}}, "x"]},
])
def test_messages_of_other_shapes_are_left_to_the_reference(kernels, message):
    assert not same_answer(message)


@pytest.mark.parametrize("message", [
    {}, {"content": None}, {"content": 3}, {"content": [{"type": "text", "text": block(ARRAY)}]},
    {"content": block(ARRAY), "tool_calls": None}, {"content": block(ARRAY), "tool_calls": {"a": 1}},
    {"content": block(ARRAY), "tool_calls": "x"}, {"role": "assistant"},
])
def test_messages_read_in_c(kernels, message):
    assert same_answer(message)


def test_a_decoder_that_raises_leaves_the_answer_to_the_reference(kernels):
    def failing(_text):
        raise RuntimeError("decoder broke")

    message = {"content": block(ARRAY)}
    assert native.kernels.answer_calls(lambda _m: DECLINED, failing, message) == DECLINED
    assert native.kernels.named_tools(lambda _c: DECLINED, failing, answer(block(ARRAY))) == DECLINED

    class Stop(BaseException):
        pass

    def stopping(_text):
        raise Stop

    with pytest.raises(Stop):
        native.kernels.answer_calls(lambda _m: DECLINED, stopping, message)
    with pytest.raises(Stop):
        native.kernels.named_tools(lambda _c: DECLINED, stopping, answer(block(ARRAY)))


class Meddler:
    """A key whose hash equals a str's: comparing it with that str (a dict lookup) empties ``victim`` first."""

    def __init__(self, text: str, victim: Any) -> None:
        self.text, self.victim = text, victim

    def __hash__(self) -> int:
        return hash(self.text)

    def __eq__(self, other: object) -> bool:
        self.victim.clear()
        return False


def test_values_changed_under_the_kernels_by_a_lookup_do_not_crash_them(kernels):
    entries: list = []
    item = {"name": "a"}
    item[Meddler("arguments", item)] = 1
    entries += [item, {"name": "b"}]
    got = native.kernels.answer_calls(lambda _m: DECLINED, lambda _text: entries, {"content": block("[]")})
    assert got == DECLINED or got[1] == "text_array"
    names: list = []
    tool_call = {"function": {"name": "a"}}
    tool_call[Meddler("function", names)] = 1
    names += [tool_call, tool_call]
    call = {"response": {"choices": [{"message": {"content": None, "tool_calls": names}}]}}
    assert native.kernels.named_tools(calls._named_tools_py, jsonio.decode, call) in ([], ["a"], ["a", "a"])
    payload: list = []
    entry = {"tool": "t"}
    entry[Meddler("name", payload)] = 1
    payload += [entry, {"name": "b"}]
    found = native.kernels.named_tools(lambda _c: DECLINED, lambda _text: payload, answer(block("[]")))
    assert found == DECLINED or isinstance(found, list)


def test_bad_arguments_are_refused(kernels):
    with pytest.raises(TypeError):
        native.kernels.answer_calls(calls.answer_calls_py, jsonio.decode)
    with pytest.raises(TypeError):
        native.kernels.named_tools(calls._named_tools_py)


#: answers as ORO's regex reads them: whitespace of every kind around the bracket, closing brackets that are not the
#: block's end, blocks that span other tags, names under each key
NAMED = [
    block(ARRAY), block(OBJECT), block(ARRAY) + block(OBJECT), block(" \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\xa0\u2003" + ARRAY),
    block(ARRAY + "\u3000\u2028 "), "<tool_call><tool_call>" + ARRAY + "</tool_call>",
    "<tool_call>[1]<tool_call>" + ARRAY + "</tool_call>", "<tool_call>[1] x ]</tool_call>", block('[{"name": "a"}] ]'),
    block('{"name": "a", "arguments": {"q": "}"}}'), block('{"name": "a"} } '), "<tool_call>" + ARRAY,
    block(ARRAY).replace("</tool_call>", "</ tool_call>"), block("x" + ARRAY), block(""), block("{}"), block("[]"),
    block('[{"name": ""}, {"name": 0, "tool": "t"}, {"name": null, "tool": "", "function": "f"}, {"tool": [], "function": 3}]'),
    block('[{"name": false, "tool": "t"}, {"name": [], "tool": {}, "function": ""}, 1, "x", null, [{"name": "n"}]]'),
    block('{"name": "a", "tool": "b"}'), block('"name"'), block('[{"name": "a"},]'), block("[1, 2"), block("{]}"),
    block('{"name": "\U0001f600\u00e9"}') * 3, block(ARRAY) + "</tool_call>" + block(OBJECT),
    "<tool_call>\n" + ARRAY + "\n</tool_call>\n<tool_call>\n" + OBJECT + "\n</tool_call>",
    block('[{"name": "a"}]   \u2003</tool_call>'), block("[" * 2000 + "]" * 2000),
]


@pytest.mark.parametrize("content", NAMED)
def test_named_tools_are_read_as_the_regex_reads_them(kernels, content):
    same_names(answer(content))
    same_names(answer(content, tool_calls=[{"function": {"name": "structured"}}]))


def test_named_tools_decoded_exactly_are_read_in_c(kernels):
    read = {content: same_names(answer(content)) for content in NAMED}
    for content, here in read.items():  # only a block the decoder raises on is handed back
        blocks = [jsonio_raises(b) for b in regex_blocks(content)]
        assert here == (not any(blocks)), content


def regex_blocks(content: str) -> list[str]:
    return calls._ORO_TAG.findall(content)


def jsonio_raises(text: str) -> bool:
    try:
        jsonio.loads(text.strip())
    except jsonio.JSONDecodeError:
        return True
    return False


@pytest.mark.parametrize("call", [
    {}, {"response": None}, {"response": "text"}, {"response": []}, {"response": Dict(choices=[])},
    {"response": {"choices": None}}, {"response": {"choices": List([{"message": {"content": block(ARRAY)}}])}},
    {"response": {"choices": [None, 3, Dict(message={"content": block(ARRAY)})]}},
    {"response": {"choices": [{"message": Dict(content=block(ARRAY))}, {"message": None}]}},
    {"response": {"choices": [{"message": {"content": Str(block(ARRAY))}}]}},
    {"response": {"choices": [{"message": {"content": None, "tool_calls": [
        {"function": {"name": "a"}}, {"function": {"name": 3}}, {"function": Dict(name="b")}, {"function": None}, 7,
        Dict(function={"name": "c"}), {"function": {"name": Str("d")}}]}}]}},
    {"response": {"choices": [{"message": {"content": block(ARRAY), "tool_calls": List([{"function": {"name": "a"}}])}},
                              {"message": {"content": block(OBJECT), "tool_calls": None}}]}},
])
def test_named_tools_of_other_shapes(kernels, call):
    assert same_names(call)


@pytest.mark.parametrize("call", [None, [], Dict(response={"choices": []}), "x"])
def test_calls_that_are_not_exact_dicts_are_left_to_the_reference(kernels, call):
    assert not same_names(call)


def test_blocks_that_do_not_decode_hand_the_call_to_the_reference(kernels):
    assert not same_names(answer(block("[1, 2,]")))
    assert not same_names(answer(block('{"name": "a", "q": NaN}')))
    assert same_names(answer(block('{"name": "a"}') + "<tool_call>[1, 2"))  # no match: nothing to decode


PIECES = ["<tool_call>", "</tool_call>", "[", "]", "{", "}", '"name"', '"tool"', '"function"', ":", ",", '"a"',
          '"find_product"', '"arguments"', '"parameters"', "{}", '{"q": "x"}', "null", "0", '""', " ", "\n", "\t",
          "\xa0", "\u3000", "\x1c", "x", '"', "\\", "```json", "1", "[]", '"\u00e9"', "\U0001f600", '"<tool_call>"',
          '{"name": "a"}']
TEXT = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)
JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1)
                    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=8)
NAME = st.one_of(st.sampled_from(["find_product", "terminate", " a", "a ", "", "\u00e9"]), st.text(max_size=6), JSON)
ITEM = st.one_of(
    st.fixed_dictionaries({"name": NAME}, optional={"arguments": JSON, "parameters": JSON, "tool": NAME,
                                                      "function": NAME}),
    JSON)
SPACE = st.sampled_from(["", " ", "\n", "\t", "\u2003", "\x0b", "\r\n"])


@st.composite
def json_blocks(draw) -> str:
    """Blocks of encoded calls (a list or one object) between random text and whitespace."""
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        value = draw(st.lists(ITEM, max_size=3) | ITEM)
        body = jsonio.dumps(value) if draw(st.booleans()) else jsonio.stdlib_dumps(value)
        parts.append(draw(TEXT) + "<tool_call>" + draw(SPACE) + body + draw(SPACE)
                     + ("</tool_call>" if draw(st.integers(0, 9)) else ""))
    return "".join(parts) + draw(TEXT)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(TEXT, json_blocks()))
def test_random_texts_read_the_same(text):
    require_kernels()
    same_answer({"role": "assistant", "content": text})
    same_names(answer(text))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(ITEM, max_size=3) | ITEM, min_size=1, max_size=3), SPACE)
def test_encoded_calls_are_read_in_c_when_every_entry_is_a_plain_call(values, space):
    require_kernels()
    text = "".join(block(space + jsonio.dumps(v) + space) for v in values)
    read = same_answer({"content": text})
    entries = [e for v in values for e in (v if type(v) is list else [v])]
    plain = all(type(e) is dict and type(e.get("name")) is str and e["name"] and e["name"] == e["name"].strip()
                and (type(e["arguments"] if "arguments" in e else e.get("parameters")) in (dict, type(None)))
                for e in entries)
    assert read == plain, text
    assert same_names(answer(text))


def test_a_day_of_both_eras_normalises_the_same_and_its_answers_are_read_in_c(kernels, monkeypatch):
    with tempfile.TemporaryDirectory() as tmp:
        files = both_eras_day(tmp, "2026-03-01", 120)
        messages, answers = [], []
        seen_answer, seen_named = calls.answer_calls_py, calls._named_tools_py
        monkeypatch.setattr(formats, "answer_calls", lambda m: messages.append(m) or seen_answer(m))
        monkeypatch.setattr(calls, "_named_tools", lambda c: answers.append(c) or seen_named(c))
        reference = normalized_rows(files, "2026-03-01")
        monkeypatch.undo()
        assert formats.answer_calls is calls.answer_calls and calls._named_tools is not calls._named_tools_py
        assert strictly_equal(normalized_rows(files, "2026-03-01"), reference)
    assert len(messages) > 500 and len(answers) > 100
    read = [same_answer(m) for m in messages]
    assert sum(read) >= 0.9 * len(read)
    with_blocks = [read_here("answer_calls", m) for m in messages if "<tool_call>" in str(m.get("content"))]
    assert len(with_blocks) > 100 and sum(with_blocks) >= 0.95 * len(with_blocks)  # the rest: the simulator's slips
    assert all(same_names(c) for c in answers)


def test_no_references_leak(kernels):
    message, call = {"content": block(ARRAY) + block(OBJECT)}, answer(block(ARRAY) + block(OBJECT))
    content = message["content"]
    for _ in range(200):
        calls.answer_calls(message), calls._named_tools(call)
    gc.collect()
    before = (len(gc.get_objects()), sys.getrefcount(content), sys.getrefcount(None), sys.getrefcount(False))
    for _ in range(20000):
        calls.answer_calls(message), calls._named_tools(call)
        native.kernels.answer_calls(lambda _m: DECLINED, jsonio.decode, {"content": block("[1,]")})
    gc.collect()
    after = (len(gc.get_objects()), sys.getrefcount(content), sys.getrefcount(None), sys.getrefcount(False))
    assert after[1:] == before[1:] and abs(after[0] - before[0]) < 50


def test_the_dispatchers_use_the_kernels_and_oro_native_0_the_references():
    code = ("from oro_assets.traces import calls, formats; "
            "print(calls.answer_calls is calls.answer_calls_py, calls._named_tools is calls._named_tools_py, "
            "formats.answer_calls is calls.answer_calls_py)")
    env = {**os.environ, "ORO_NATIVE": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    assert out.stdout.split() == ["True", "True", "True"]
    on = native.kernels is not None
    assert (calls.answer_calls is not calls.answer_calls_py) == on
    assert (calls._named_tools is not calls._named_tools_py) == on
