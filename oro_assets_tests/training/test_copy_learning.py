"""The tiny profile's copy ingredients: copy drills that exercise both copies, and a base that learns to copy."""

from __future__ import annotations

import json
import math
import re

import pytest

from oro_assets.training.corpus import copy_drill_rows
from oro_assets.training.data import sft_example


def _args(msg: dict) -> tuple[str, dict]:
    fn = msg["tool_calls"][0]["function"]
    args = fn["arguments"]
    return fn["name"], json.loads(args) if isinstance(args, str) else args


def test_copy_drills_copy_query_words_and_the_fitting_hits_id(world):
    rows = copy_drill_rows(world.catalogue, 30, 5, "system", [])
    assert len(rows) == 30
    ranks = set()
    for r in rows:
        user, first, tool, second = r["messages"][1], r["messages"][2], r["messages"][3], r["messages"][4]
        name, args = _args(first)
        assert name == "find_product"
        lo_s, hi_s = args["price"].split("-")
        # the query words and the given bounds appear verbatim in the user turn ("0-" and "lo-": open bounds,
        # written like the teacher's filter; the thinking says "lo-up" like the teacher's)
        assert f" {args['q']} " in user["content"]
        assert (lo_s == "0" or f" {lo_s} " in user["content"]) and (hi_s == "" or f" {hi_s} " in user["content"])
        assert lo_s != "0" or hi_s != ""
        if hi_s == "":
            assert f"price {lo_s}-up;" in first["reasoning_content"]
        for svc in (args.get("service") or "").split(","):
            assert svc == "" or svc in {"official", "freeShipping", "COD", "flashsale"}
        lo, hi = int(lo_s), (10**9 if hi_s == "" else int(hi_s))
        hits = json.loads(tool["content"])
        fitting = [h for h in hits if h["title"].lower().startswith(args["q"] + " ") and lo <= h["price"] <= hi]
        assert len(fitting) == 1, "exactly one hit has all the words and a price in range"
        name, rec = _args(second)
        assert name == "recommend_product" and rec["product_ids"] == fitting[0]["product_id"]
        # in the compact view the choice is named by the fitting hit's handle (its rank here)
        rank = hits.index(fitting[0]) + 1
        ranks.add(rank)
        think = sft_example(r, "compact")["messages"][4]["reasoning_content"]
        assert re.search(rf"Choose {rank}\.$", think), think
        call = sft_example(r, "compact")["messages"][4]["tool_calls"][0]["function"]["arguments"]
        assert json.loads(call) == {"product_ids": str(rank)}
    assert ranks == {1, 2, 3}, "the fitting hit appears at every rank"


@pytest.mark.slow
def test_tied_embeddings_learn_to_copy_faster_than_untied():
    """Copy pre-training on random words: tied embeddings copy within a few hundred steps (measured on the
    arena vocabulary: loss 0.08 after 600 steps vs 7.8 = ln V untied); here a 300-word toy version."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from oro_assets.training.tiny_model import build_tokenizer, copy_pretrain

    words = ["w" + "".join(chr(97 + (i // 26 ** k) % 26) for k in range(3)) for i in range(300)]
    tok = build_tokenizer([" ".join(words)])
    torch.set_num_threads(1)
    final = {}
    for tied in (True, False):
        cfg = Qwen3Config(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                          num_attention_heads=2, num_key_value_heads=2, head_dim=32, tie_word_embeddings=tied,
                          max_position_embeddings=256, pad_token_id=tok.pad_token_id, bos_token_id=None)
        torch.manual_seed(0)
        losses = copy_pretrain(Qwen3ForCausalLM(cfg), tok, steps=450, batch_size=16, max_span=6, seed=0)
        final[tied] = sum(losses[-20:]) / 20
    assert final[True] < 0.5 * math.log(len(tok)), final
    assert final[True] < final[False] - 1.0, final


def test_copy_batches_put_the_gap_between_the_span_and_its_labelled_copy():
    from oro_assets.training.tiny_model import CopyBatches, build_tokenizer

    words = ["w" + "".join(chr(97 + (i // 26 ** k) % 26) for k in range(3)) for i in range(300)]
    tok = build_tokenizer([" ".join(words)])
    colon, newline, pad = tok.convert_tokens_to_ids(":"), tok.convert_tokens_to_ids("\n"), tok.pad_token_id
    gaps = set()
    ids, labels, mask = CopyBatches(tok, batch_size=64, max_span=6, max_gap=20, seed=1).next()
    for row, lab, att in zip(ids.tolist(), labels.tolist(), mask.tolist(), strict=True):
        n_real = sum(att)
        assert all(t == pad for t in row[n_real:])
        copy = [t for t in lab if t != -100]
        assert 3 <= len(copy) <= 6 and row[n_real - len(copy): n_real] == copy, "the labels are the copy at the end"
        start = row.index(colon) + 1
        assert row[start: start + len(copy)] == copy, "the span follows the colon"
        end_of_gap = n_real - len(copy) - 1
        assert row[end_of_gap] == newline
        gaps.add(end_of_gap - (start + len(copy)))
    assert min(gaps) == 0 and max(gaps) > 10, gaps
    # without a gap the copy follows the span right after the newline
    ids, labels, mask = CopyBatches(tok, batch_size=8, max_span=6, seed=1).next()
    for row, lab, att in zip(ids.tolist(), labels.tolist(), mask.tolist(), strict=True):
        copy = [t for t in lab if t != -100]
        start = row.index(colon) + 1
        assert row[start + len(copy)] == newline and row[start + len(copy) + 1: sum(att)] == copy


def test_copy_batches_with_min_gap_equal_to_max_gap_put_exactly_that_gap():
    from oro_assets.training.tiny_model import CopyBatches, build_tokenizer

    words = ["w" + "".join(chr(97 + (i // 26 ** k) % 26) for k in range(3)) for i in range(300)]
    tok = build_tokenizer([" ".join(words)])
    colon, newline = tok.convert_tokens_to_ids(":"), tok.convert_tokens_to_ids("\n")
    ids, labels, mask = CopyBatches(tok, batch_size=16, max_span=6, min_gap=30, max_gap=30, seed=2).next()
    for row, lab, att in zip(ids.tolist(), labels.tolist(), mask.tolist(), strict=True):
        copy = [t for t in lab if t != -100]
        start = row.index(colon) + 1
        end_of_gap = sum(att) - len(copy) - 1
        assert row[end_of_gap] == newline and end_of_gap - (start + len(copy)) == 30


def _gaps(batch: tuple, colon: int) -> list[int]:
    ids, labels, mask = batch
    out = []
    for row, lab, att in zip(ids.tolist(), labels.tolist(), mask.tolist(), strict=True):
        copy = [t for t in lab if t != -100]
        start = row.index(colon) + 1
        out.append(sum(att) - len(copy) - 1 - (start + len(copy)))
    return out


def test_long_copy_batches_draw_whole_batches_of_long_gaps():
    from oro_assets.training.tiny_model import CopyBatches, build_tokenizer

    words = ["w" + "".join(chr(97 + (i // 26 ** k) % 26) for k in range(3)) for i in range(300)]
    tok = build_tokenizer([" ".join(words)])
    colon = tok.convert_tokens_to_ids(":")
    every = CopyBatches(tok, batch_size=16, max_span=6, max_gap=20, long_share=1.0, long_gap=120, seed=3)
    for _ in range(3):
        gaps = _gaps(every.next(), colon)
        assert min(gaps) >= 20 and max(gaps) <= 120 and max(gaps) > 60, gaps
    half = CopyBatches(tok, batch_size=16, max_span=6, max_gap=20, long_share=0.5, long_gap=120, seed=3)
    kinds = []
    for _ in range(20):
        gaps = _gaps(half.next(), colon)
        assert max(gaps) <= 20 or min(gaps) >= 20, "a batch is short or long as a whole"
        kinds.append(max(gaps) > 20)
    assert 3 <= sum(kinds) <= 17, kinds
    # without long batches no extra draw is made: the batches of every base built before are unchanged
    plain = CopyBatches(tok, batch_size=8, max_span=6, max_gap=20, seed=4)
    off = CopyBatches(tok, batch_size=8, max_span=6, max_gap=20, long_share=0.0, long_gap=500, seed=4)
    for _ in range(3):
        assert plain.next()[0].tolist() == off.next()[0].tolist()
    with pytest.raises(ValueError, match="long_gap"):
        CopyBatches(tok, batch_size=8, max_span=6, max_gap=20, long_share=0.5, long_gap=20)


@pytest.mark.slow
def test_long_copy_batches_teach_a_copy_across_gaps_never_trained_without_them():
    """The gap a base was trained on bounds how far it copies (world 15's base: copy loss 0.17 at gap 60, 8.0 = ln V
    at 250); long batches extend it. Toy version: trained on gaps up to 8, with or without half the batches long
    (gaps 8-48), then scored on copies across 4 and 40 words (measured: 0.03 / 9.1 without, 0.02 / 0.03 with)."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from oro_assets.training.losses import labelled_nll
    from oro_assets.training.tiny_model import CopyBatches, build_tokenizer, copy_pretrain

    words = ["w" + "".join(chr(97 + (i // 26 ** k) % 26) for k in range(3)) for i in range(300)]
    tok = build_tokenizer([" ".join(words)])
    torch.set_num_threads(1)
    loss = {}
    for share in (0.0, 0.5):
        cfg = Qwen3Config(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                          num_attention_heads=2, num_key_value_heads=2, head_dim=32, tie_word_embeddings=True,
                          max_position_embeddings=256, pad_token_id=tok.pad_token_id, bos_token_id=None)
        torch.manual_seed(0)
        model = Qwen3ForCausalLM(cfg)
        copy_pretrain(model, tok, steps=1500, batch_size=16, max_span=6, seed=0, max_gap=8, long_share=share,
                      long_gap=48)
        for gap in (4, 40):
            ids, labels, mask = CopyBatches(tok, batch_size=64, max_span=6, min_gap=gap, max_gap=gap, seed=99).next()
            with torch.no_grad():
                nll, _, targets = labelled_nll(model, labels, input_ids=ids, attention_mask=mask)
            loss[share, gap] = float(nll) / int(targets.numel())
    ln_v = math.log(len(tok))
    assert loss[0.0, 4] < 0.1 * ln_v and loss[0.5, 4] < 0.1 * ln_v, f"both copy across a trained gap: {loss}"
    assert loss[0.5, 40] < 0.1 * ln_v, f"long batches copy across 40 words: {loss}"
    assert loss[0.0, 40] > loss[0.5, 40] + 1.0, f"short batches alone do not reach that far: {loss}"


def test_copy_pretraining_gives_the_same_weights_on_one_and_two_threads():
    """The base's copy pre-training runs on the profile's training threads (tiny: 2); its version does not hash the
    thread count, so the weights must not depend on it. The tiny profile's own arch, batch and gap."""
    import hashlib

    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from oro_assets.training.profiles import get_profile
    from oro_assets.training.tiny_model import build_tokenizer, copy_pretrain

    arch = get_profile("tiny").arch
    words = ["w" + "".join(chr(97 + (i // 26 ** k) % 26) for k in range(3)) for i in range(300)]
    tok = build_tokenizer([" ".join(words)])
    before = torch.get_num_threads()
    digests = {}
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            cfg = Qwen3Config(vocab_size=len(tok), hidden_size=arch.hidden_size, intermediate_size=arch.intermediate_size,
                              num_hidden_layers=arch.num_hidden_layers, num_attention_heads=arch.num_attention_heads,
                              num_key_value_heads=arch.num_key_value_heads, head_dim=arch.head_dim,
                              tie_word_embeddings=arch.tie_word_embeddings, max_position_embeddings=256,
                              pad_token_id=tok.pad_token_id, bos_token_id=None)
            torch.manual_seed(0)
            model = Qwen3ForCausalLM(cfg)
            copy_pretrain(model, tok, steps=12, max_span=arch.copy_pretrain_span, max_gap=arch.copy_pretrain_gap, seed=0)
            digests[threads] = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()
    finally:
        torch.set_num_threads(before)
    assert digests[1] == digests[2]
