"""Word-swap variants of curated rows (training.augment): the searched words are renamed in every message, the
episode is otherwise the same, and each variant names the row it came from."""

from __future__ import annotations

import json
import random

from oro_assets.training.augment import searched_words, swap_variant, swap_variants, swap_vocabulary
from oro_assets.training.data import normalise_messages, row_shape

REQUEST = "Find me a Ruser pure black pepper with pack type bundle, costing between 104 and 191 pesos."
HITS = [{"title": "Ruser Pure Black Pepper Best", "price": 80.0, "product_id": "111"},
        {"title": "Gucan Black Pepper", "price": 154.0, "product_id": "222"}]


def _row(q: str = "ruser pure black pepper") -> dict:
    messages = normalise_messages([
        {"role": "user", "content": REQUEST},
        {"role": "assistant", "content": "", "reasoning_content": "The user wants ruser pure black pepper (price 104-191).",
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "find_product", "arguments": json.dumps({"q": q, "price": "104-191"})}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "find_product", "content": json.dumps(HITS)},
        {"role": "assistant", "content": "", "reasoning_content": "222 costs 154, in range; Ruser's 111 costs 80.",
         "tool_calls": [{"id": "c2", "type": "function",
                         "function": {"name": "recommend_product", "arguments": json.dumps({"product_ids": "222"})}}]},
    ])
    return {"id": "tr_1", "messages": messages, "tools": "[]", "source": "curated"}


VOCAB = ["zebuka", "lomit", "tarvo", "quill", "nesto", "pepper", "ruser"]


def test_searched_words_are_the_query_words_the_request_contains():
    assert searched_words(_row()["messages"]) == ["ruser", "pure", "black", "pepper"]
    # a word the agent made up (not in the request) is not something to copy; filter words are never swapped
    assert searched_words(_row("ruser cheap pepper price")["messages"]) == ["ruser", "pepper"]


def test_variant_renames_every_occurrence_and_keeps_the_episode():
    row = _row()
    v = swap_variant(row, VOCAB, random.Random(0))
    text = json.dumps(v["messages"]).lower()
    for w in ("ruser", "pure", "black", "pepper"):
        assert w not in text  # replacement words are never words the row already contains
    user = v["messages"][0]["content"]
    args = json.loads(v["messages"][1]["tool_calls"][0]["function"]["arguments"])
    hits = json.loads(v["messages"][2]["content"])
    assert args["q"] in user.lower() and args["q"] in v["messages"][1]["reasoning_content"]
    assert hits[0]["title"].lower().startswith(args["q"]) and hits[0]["title"][0].isupper()
    assert user.split()[3][0].isupper()  # "Ruser" was Title case in the request: its replacement is too
    assert args["price"] == "104-191" and "costing between 104 and 191 pesos" in user
    assert [h["product_id"] for h in hits] == ["111", "222"] and [h["price"] for h in hits] == [80.0, 154.0]
    assert v["messages"][3]["tool_calls"][0]["function"]["arguments"] == row["messages"][3]["tool_calls"][0]["function"]["arguments"]
    assert [m["role"] for m in v["messages"]] == [m["role"] for m in row["messages"]]
    assert row_shape(v) == row_shape(row) == "Product"
    assert v["id"] == "tr_1~swap0" and v["source"] == "word_swap:tr_1"
    assert json.dumps(row["messages"]).lower().count("ruser") > 0  # the original is untouched


def test_variants_are_deterministic_and_skip_rows_without_a_search():
    rows = [_row()]
    no_search = dict(_row(), id="tr_2")
    no_search["messages"] = [m for m in no_search["messages"] if not m.get("tool_calls")
                             or m["tool_calls"][0]["function"]["name"] != "find_product"]
    a = swap_variants(rows + [no_search], VOCAB + ["kivo", "drum", "sela"], per_row=2, seed=3)
    b = swap_variants(rows + [no_search], VOCAB + ["kivo", "drum", "sela"], per_row=2, seed=3)
    assert a == b and [v["id"] for v in a] == ["tr_1~swap0", "tr_1~swap1"]
    assert a[0]["messages"] != a[1]["messages"]
    assert swap_variants(rows, VOCAB, per_row=0, seed=3) == []


def test_swap_vocabulary_is_title_words_without_filter_words(world):
    vocab = swap_vocabulary(p["title"] for p in world.catalogue)
    assert vocab == sorted(set(vocab)) and len(vocab) > 50
    assert all(w.isalpha() and w.islower() and len(w) >= 3 for w in vocab)
    assert "official" not in vocab and "price" not in vocab


def test_catalogue_variants_need_the_catalogue(world):
    import pytest

    from oro_assets.training.augment import catalogue_swap_variants

    with pytest.raises(ValueError, match="need the catalogue"):
        catalogue_swap_variants([_row()], None, per_row=1, seed=0)
    assert catalogue_swap_variants([_row()], None, per_row=0, seed=0) == []
    (v,) = catalogue_swap_variants([_row()], world.catalogue, per_row=1, seed=0)
    assert searched_words(v["messages"]) and not set(searched_words(v["messages"])) & {"ruser", "pure", "black", "pepper"}


def _two_item_row() -> dict:
    request = "I want to buy a Ruser pure black pepper, and also a Kanto steel wok.\n\nMy budget is only `900`."
    hits2 = [{"title": "Kanto Steel Wok Pro", "price": 300.0, "product_id": "333"}]
    messages = normalise_messages([
        {"role": "user", "content": request},
        {"role": "assistant", "content": "", "reasoning_content": "item 1: ruser pure black pepper.",
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "find_product", "arguments": json.dumps({"q": "ruser pure black pepper"})}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "find_product", "content": json.dumps(HITS)},
        {"role": "assistant", "content": "", "reasoning_content": "choose 222. item 2: kanto steel wok.",
         "tool_calls": [{"id": "c2", "type": "function",
                         "function": {"name": "find_product", "arguments": json.dumps({"q": "kanto steel wok"})}}]},
        {"role": "tool", "tool_call_id": "c2", "name": "find_product", "content": json.dumps(hits2)},
        {"role": "assistant", "content": "", "reasoning_content": "choose 333.",
         "tool_calls": [{"id": "c3", "type": "function",
                         "function": {"name": "recommend_product", "arguments": json.dumps({"product_ids": "222,333"})}}]},
    ])
    return {"id": "tr_2", "messages": messages, "tools": "[]", "source": "curated"}


def test_every_search_renames_each_items_words_not_only_the_firsts():
    row = _two_item_row()
    assert searched_words(row["messages"]) == ["ruser", "pure", "black", "pepper"]
    assert searched_words(row["messages"], every_search=True) == ["ruser", "pure", "black", "pepper", "kanto",
                                                                  "steel", "wok"]
    vocab = VOCAB + ["drum", "sela", "kivo", "mordo", "plen"]
    first_only = json.dumps(swap_variant(row, vocab, random.Random(0))["messages"]).lower()
    assert "ruser" not in first_only and "kanto steel wok" in first_only  # item 2's words in every variant
    every = swap_variant(row, vocab, random.Random(0), every_search=True)
    text = json.dumps(every["messages"]).lower()
    assert not any(w in text for w in ("ruser", "pepper", "kanto", "steel", "wok"))
    q2 = json.loads(every["messages"][3]["tool_calls"][0]["function"]["arguments"])["q"]
    hits2 = json.loads(every["messages"][4]["content"])
    assert q2 in every["messages"][0]["content"].lower() and hits2[0]["title"].lower().startswith(q2)
    assert every["messages"][5]["tool_calls"] == row["messages"][5]["tool_calls"]
    # a row that searched once gets the same variants either way (the same words drawn in the same order)
    assert swap_variants([_row()], vocab, 2, seed=3) == swap_variants([_row()], vocab, 2, seed=3, every_search=True)
