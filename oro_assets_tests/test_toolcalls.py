"""The one tool-call parser: a rollout's parse and the curated trace's parse of the same text agree."""

from __future__ import annotations

import pytest

from oro_assets.agents.toolcall import parse_assistant_text
from oro_assets.toolcalls import FIND_PRODUCT, RECOMMEND_PRODUCT, VIEW_PRODUCT_INFORMATION, parse_tool_calls
from oro_assets.traces.calls import answer_calls
from oro_assets.traces.formats import split_content

FIND = '{"name": "find_product", "arguments": {"q": "red shoes"}}'
VIEW = '{"name": "view_product_information", "arguments": {"product_ids": "p1"}}'

TEXTS = {
    # a block cut short, then a whole one: the cut block ends where the next one opens
    "cut_then_whole": f"<think>\nlook\n</think>\n\n<tool_call>\n{FIND}\n<tool_call>\n{VIEW}\n</tool_call>",
    # cut short mid-value at the end of the text (an answer stopped by the token limit)
    "cut_mid_value": f'<tool_call>\n{FIND}\n</tool_call>\n<tool_call>\n{{"name": "recommend_product", "argum',
    # ORO's reference agent: one array block
    "array": f"<tool_call>[{FIND}, {VIEW}]</tool_call>",
    # trailing text after the JSON value
    "trailing": f"<tool_call>\n{FIND} thanks\n</tool_call>",
}


def _rollout(text: str) -> list[tuple[str, dict]]:
    return [(c.name, c.arguments) for c in parse_assistant_text(text).tool_calls]


def _curated(text: str) -> tuple[list[tuple[str, object]], bool]:
    calls, _shape, cut = answer_calls({"role": "assistant", "content": text})
    return [(c["name"], c["arguments"]) for c in calls], cut


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_rollout_and_curated_trace_read_the_same_calls(name: str) -> None:
    text = TEXTS[name]
    curated, _ = _curated(text)
    # every call a rollout runs is a call the curated trace reads, with the same arguments, in order
    assert [c for c in curated if c[1] is not None] == _rollout(text)


def test_cut_short_block_ends_at_the_next_block() -> None:
    expected = [(FIND_PRODUCT, {"q": "red shoes"}), (VIEW_PRODUCT_INFORMATION, {"product_ids": "p1"})]
    text = TEXTS["cut_then_whole"]
    assert _rollout(text) == expected
    assert _curated(text) == (expected, True)
    assert "unterminated_tool_call" in parse_assistant_text(text).errors
    _think, calls, _response = split_content(text)
    assert [(c["name"], c["parameters"]) for c in calls] == expected


def test_block_cut_mid_value_names_an_incomplete_call() -> None:
    text = TEXTS["cut_mid_value"]
    # the curated trace counts the call the answer began; the rollout cannot run it
    assert _curated(text) == ([(FIND_PRODUCT, {"q": "red shoes"}), (RECOMMEND_PRODUCT, None)], True)
    assert _rollout(text) == [(FIND_PRODUCT, {"q": "red shoes"})]
    parsed = parse_tool_calls(text)
    assert [c.complete for c in parsed.calls] == [True, False]
    assert parsed.errors == ["unterminated_tool_call", "invalid_json"]


def test_array_block_and_trailing_text() -> None:
    calls, shape, cut = answer_calls({"content": TEXTS["array"]})
    assert (shape, cut) == ("text_array", False)
    assert [c["name"] for c in calls] == [FIND_PRODUCT, VIEW_PRODUCT_INFORMATION]
    assert _curated(TEXTS["trailing"]) == ([(FIND_PRODUCT, {"q": "red shoes"})], True)
    assert parse_assistant_text(TEXTS["trailing"]).errors == ["trailing_garbage"]
