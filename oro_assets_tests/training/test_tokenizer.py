"""The tiny word-level tokenizer: one token per word in every context, lossless decoding, Qwen3 template."""

from __future__ import annotations

import json

import pytest

from oro_assets.training.tiny_model import QWEN3_SPECIAL_TOKENS, build_tokenizer, qwen3_chat_template

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
    for special in QWEN3_SPECIAL_TOKENS:
        assert len(tok(special, add_special_tokens=False)["input_ids"]) == 1
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


def test_deterministic(tok):
    again = build_tokenizer(CORPUS)
    assert again.get_vocab() == tok.get_vocab()
