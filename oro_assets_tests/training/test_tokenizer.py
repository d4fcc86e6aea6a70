"""The tiny word-level tokenizer: one token per word in every context, lossless decoding, Qwen3 template."""

from __future__ import annotations

import json

import pytest

from oro_assets.training.tiny_model import (
    QWEN3_ADDED_TOKENS,
    QWEN3_SPECIAL_TOKENS,
    QWEN3_TAG_TOKENS,
    build_tokenizer,
    qwen3_chat_template,
)

CORPUS = [
    "Find me a zesenu dri fit tank top priced between 386 and 911 pesos.",
    '{"name": "find_product", "arguments": {"q": "zesenu dri fit tank top", "price": "386-911"}}',
    "id: 5241121169 title: Zesenu Dri Fit Tank Top",
]


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer(CORPUS)


def test_word_is_one_token_in_every_context(tok):
    contexts = ["zesenu", " zesenu", '"zesenu', "tank zesenu top", "Zesenu", "\nzesenu"]
    ids = tok.convert_tokens_to_ids("zesenu")
    for text in contexts:
        toks = tok(text, add_special_tokens=False)["input_ids"]
        assert ids in toks, text
        assert toks.count(ids) == 1


def test_round_trip_is_lossless_up_to_case(tok):
    texts = [
        '<tool_call>\n{"name": "find_product", "arguments": {"q": "zesenu dri fit tank top", "price": "386-911"}}\n</tool_call>',
        "1. title: zesenu dri fit tank top | price: 663 | id: 5241121169",
        "between 386 and 911 pesos.",
    ]
    for text in texts:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert tok.decode(ids) == text.lower()


def test_numbers_are_two_digit_chunks(tok):
    pieces = tok.convert_ids_to_tokens(tok("5241121169 911", add_special_tokens=False)["input_ids"])
    assert pieces == ["52", "41", "12", "11", "69", " ", "91", "1"]


def test_special_tokens_and_exact_qwen3_template(tok):
    for added in QWEN3_ADDED_TOKENS:
        assert len(tok(added, add_special_tokens=False)["input_ids"]) == 1
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    from trl.chat_template_utils import get_training_chat_template

    assert tok.chat_template == qwen3_chat_template()
    patched = get_training_chat_template(tok)  # TRL recognises the template and returns its training variant
    assert patched is not None and "{%- generation %}" in patched
    chat = [{"role": "user", "content": "zesenu"},
            {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
                "name": "find_product", "arguments": json.dumps({"q": "zesenu"})}}]}]
    text = tok.apply_chat_template(chat, tokenize=False)
    assert '<tool_call>\n{"name": "find_product", "arguments": {"q": "zesenu"}}\n</tool_call><|im_end|>' in text


def test_tags_are_added_tokens_that_survive_a_skip_special_decode(tok, tmp_path):
    """As in Qwen3's tokenizer_config: only <|endoftext|>, <|im_start|>, <|im_end|> are special; <think>,
    <tool_call>, <tool_response> (and closers) are added tokens with special false, so TRL's GRPO decode
    (skip_special_tokens=True) keeps them and the reward parser sees the calls (issue 30)."""
    from transformers import AutoTokenizer

    from oro_assets.agents.toolcall import parse_assistant_text

    assert set(QWEN3_TAG_TOKENS) == {"<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>",
                                     "</tool_response>"}
    tok.save_pretrained(tmp_path)
    for t in (tok, AutoTokenizer.from_pretrained(tmp_path)):  # as built, and as a checkpoint reloads it
        flags = {a.content: a.special for a in t.added_tokens_decoder.values()}
        assert {k: flags[k] for k in QWEN3_TAG_TOKENS} == dict.fromkeys(QWEN3_TAG_TOKENS, False)
        assert {k: flags[k] for k in QWEN3_SPECIAL_TOKENS} == dict.fromkeys(QWEN3_SPECIAL_TOKENS, True)
        text = ('<think>\nzesenu\n</think>\n\n<tool_call>\n{"name": "find_product", "arguments": {"q": "zesenu"}}'
                "\n</tool_call>")
        ids = t(text + "<|im_end|><|endoftext|>", add_special_tokens=False)["input_ids"]
        decoded = t.decode(ids, skip_special_tokens=True)
        assert decoded == text
        parsed = parse_assistant_text(decoded)
        assert parsed.think == "zesenu" and [(c.name, c.arguments) for c in parsed.tool_calls] == \
            [("find_product", {"q": "zesenu"})]
        tool_turn = t("<tool_response>\n[]\n</tool_response>", add_special_tokens=False)["input_ids"]
        assert t.decode(tool_turn, skip_special_tokens=True) == "<tool_response>\n[]\n</tool_response>"


def test_deterministic(tok):
    again = build_tokenizer(CORPUS)
    assert again.get_vocab() == tok.get_vocab()
