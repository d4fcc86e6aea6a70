import json

from oro_assets.agents.toolcall import parse_assistant_text, render_assistant_text, render_tool_call


def test_well_formed_qwen3_turn():
    text = (
        "<think>\nThe user wants red shoes under 50.\n</think>\n\n"
        '<tool_call>\n{"name": "find_product", "arguments": {"q": "red shoes", "price": "0-50"}}\n</tool_call>'
        "<|im_end|>"
    )
    out = parse_assistant_text(text)
    assert out.think == "The user wants red shoes under 50."
    assert [(c.name, c.arguments) for c in out.tool_calls] == [("find_product", {"q": "red shoes", "price": "0-50"})]
    assert out.response == ""
    assert out.errors == []


def test_render_matches_chat_template_form_and_roundtrips():
    block = render_tool_call("recommend_product", {"product_ids": "12,34"})
    assert block == '<tool_call>\n{"name": "recommend_product", "arguments": {"product_ids": "12,34"}}\n</tool_call>'
    text = render_assistant_text("pick 12", [("view_product_information", {"product_ids": "12"}),
                                             ("terminate", {"status": "success"})], response="ok")
    out = parse_assistant_text(text)
    assert out.think == "pick 12"
    assert out.response == "ok"
    assert [c.name for c in out.tool_calls] == ["view_product_information", "terminate"]
    assert out.well_formed


def test_multiple_calls_and_list_block():
    text = '<tool_call>[{"name": "a", "parameters": {"x": 1}}, {"name": "b", "arguments": {}}]</tool_call>'
    out = parse_assistant_text(text)
    assert [(c.name, c.arguments) for c in out.tool_calls] == [("a", {"x": 1}), ("b", {})]


def test_malformed_outputs_never_raise_and_report_errors():
    cases = {
        "<think>thinking forever": ("thinking forever", 0, "unterminated_think"),
        '<tool_call>\n{"name": "find_product", "arguments": {"q": "x"}}': ("", 1, "unterminated_tool_call"),
        "<tool_call>{not json}</tool_call>": ("", 0, "invalid_json"),
        '<tool_call>{"arguments": {}}</tool_call>': ("", 0, "missing_name"),
        '<tool_call>{"name": "f", "arguments": [1, 2]}</tool_call>': ("", 1, "arguments_not_object"),
        '<tool_call>{"name": "f", "arguments": {"a": 1},}</tool_call>': ("", 1, None),
        '<tool_call>{"name": "f", "arguments": {"a": 1}}}}extra</tool_call>': ("", 1, "trailing_garbage"),
        "": ("", 0, None),
        "</tool_call><|im_start|>": ("", 0, "stray_tool_close"),
    }
    for text, (think, n_calls, err) in cases.items():
        out = parse_assistant_text(text)
        assert out.think == think, text
        assert len(out.tool_calls) == n_calls, text
        if err:
            assert err in out.errors, (text, out.errors)


def test_arguments_as_json_string_are_decoded():
    args = json.dumps({"product_ids": "1"})
    out = parse_assistant_text('<tool_call>{"name": "recommend_product", "arguments": ' + json.dumps(args) + "}</tool_call>")
    assert out.tool_calls[0].arguments == {"product_ids": "1"}
    assert "arguments_as_string" in out.errors


def test_think_without_open_tag_and_second_call_without_close():
    text = ('reasoning here</think>\n<tool_call>{"name": "a", "arguments": {}}'
            '<tool_call>{"name": "b", "arguments": {"k": "v"}}</tool_call>')
    out = parse_assistant_text(text)
    assert out.think == "reasoning here"
    assert [c.name for c in out.tool_calls] == ["a", "b"]
    assert out.tool_calls[1].arguments == {"k": "v"}


def test_text_after_end_of_turn_is_ignored():
    out = parse_assistant_text('<think>x</think><tool_call>{"name": "a", "arguments": {}}</tool_call>'
                               '<|im_end|><tool_call>{"name": "b", "arguments": {}}</tool_call>')
    assert [c.name for c in out.tool_calls] == ["a"]


def test_call_with_non_object_arguments_is_kept_with_raw_text():
    out = parse_assistant_text('<tool_call>{"name": "recommend_product", "arguments": "12, 34"}</tool_call>')
    (call,) = out.tool_calls
    assert call.name == "recommend_product"
    assert call.arguments == {}
    assert call.raw_arguments == "12, 34"
    assert "arguments_unparseable" in out.errors
