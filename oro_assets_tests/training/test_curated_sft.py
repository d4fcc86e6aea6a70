"""Issue 18: curated-only SFT for the tiny profile - the tokenizer covers the corpus's own words, every
training row carries the system prompt evaluation prompts have, the compact view shows the hits the miners
chose among (rows recommending an unshown product are set aside and counted), miner-style drills."""

from __future__ import annotations

import json
import re

import pytest

from oro_assets.training.data import normalise_messages, row_shape, sft_example, sft_training_rows
from oro_assets.training.views import COMPACT_SYSTEM_PROMPT, compact_messages, unseen_recommendations


@pytest.fixture(scope="session")
def miner_rows(world, env):
    """Curated-like rows: the arena's scripted reasoning miners (compare / datum) on the small world, recorded as
    the firehose records them and normalised like any curated trace, without their system message (most
    curated miner traces arrive without one)."""
    from oro_assets.arena.episode import SimClock, run_episode
    from oro_assets.arena.population import make_policy
    from oro_assets.arena.tools import TOOL_SCHEMAS

    rows = []
    for j, p in enumerate(world.problems):
        for kind in ("agentic_compare", "agentic_datum"):
            ep = run_episode(make_policy(kind, p, skill=0.9, seed=j), p, env, clock=SimClock(1_767_225_600_000))
            msgs = [m for m in normalise_messages(ep.to_messages()) if m["role"] != "system"]
            rows.append({"id": f"{kind}_{j}", "messages": msgs, "tools": json.dumps(TOOL_SCHEMAS), "source": "test"})
    return rows


def _assistant_target_ids(tok, rows):
    out = []
    for r in rows:
        for m in sft_example(r, "compact")["messages"]:
            if m["role"] == "assistant":
                text = " ".join([m["reasoning_content"] or "", m["content"]]
                                + [c["function"]["arguments"] for c in m["tool_calls"] or []])
                out.extend(tok(text)["input_ids"])
    return out


def test_tokenizer_built_over_the_corpus_covers_curated_assistant_targets(world, miner_rows):
    from oro_assets.arena.tools import TOOL_SCHEMAS
    from oro_assets.training.corpus import arena_corpus_texts, dataset_corpus_texts
    from oro_assets.training.tiny_model import UNK_TOKEN, build_tokenizer

    arena = arena_corpus_texts(world.catalogue, world.problems, TOOL_SCHEMAS)
    train, held = miner_rows[::2], miner_rows[1::2]  # the vocabulary must carry over to rows it was not built on
    tok = build_tokenizer(arena + dataset_corpus_texts(train, "compact"))
    unk = tok.convert_tokens_to_ids(UNK_TOKEN)
    ids = _assistant_target_ids(tok, train)
    assert len(ids) > 1000 and sum(i == unk for i in ids) / len(ids) < 0.001
    # rows of the same miners it was not built on: only a rare phrase of a step the other half never took
    ids = _assistant_target_ids(tok, held)
    assert len(ids) > 1000 and sum(i == unk for i in ids) / len(ids) < 0.01
    # the arena's text alone misses the miners' own words: the bound above is not met without the corpus
    arena_only = build_tokenizer(arena)
    ids = _assistant_target_ids(arena_only, held)
    assert sum(i == arena_only.convert_tokens_to_ids(UNK_TOKEN) for i in ids) / len(ids) > 0.02
    for word in ("will", "so", "compare", "better"):
        assert tok.convert_tokens_to_ids(word) != unk, word


def test_every_compact_row_starts_with_the_system_prompt(miner_rows):
    assert all(m["role"] != "system" for m in miner_rows[0]["messages"])
    for r in miner_rows[:10]:
        msgs = sft_example(r, "compact")["messages"]
        assert msgs[0]["role"] == "system" and msgs[0]["content"] == COMPACT_SYSTEM_PROMPT
        assert sum(m["role"] == "system" for m in msgs) == 1
        assert set(msgs[0]) == set(msgs[1])  # same key set as every other message
    with_system = [{"role": "system", "content": "You are a miner's agent."}, {"role": "user", "content": "hi"}]
    seen = compact_messages(with_system)[0]
    assert [m["role"] for m in seen] == ["system", "user"] and seen[0]["content"] == COMPACT_SYSTEM_PROMPT
    assert sft_example(miner_rows[0], "full")["messages"][0]["role"] == "user"  # the full view is the data as is


def _hit(i):
    return {"title": f"Hit Number {i}", "price": 10.0 + i, "service": [], "product_id": str(1_000_000_000 + i)}


def _row(recommended: str, n_hits: int = 8):
    return {"id": "r", "tools": "[]", "messages": normalise_messages([
        {"role": "user", "content": "Find hit number"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "find_product", "arguments": json.dumps({"q": "hit number"})}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "find_product",
         "content": json.dumps([_hit(i) for i in range(n_hits)])},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c2", "type": "function", "function": {
            "name": "recommend_product", "arguments": json.dumps({"product_ids": recommended})}}]},
    ])}


def test_compact_view_shows_the_five_hits_the_miners_choose_among():
    shown = compact_messages(_row(_hit(4)["product_id"])["messages"])[0][3]["content"].splitlines()
    assert [line.split(".")[0] for line in shown] == ["1", "2", "3", "4", "5"]  # the 5th hit (rank 5) is shown
    assert unseen_recommendations(_row(_hit(4)["product_id"])["messages"]) == []
    assert unseen_recommendations(_row(_hit(5)["product_id"])["messages"]) == [_hit(5)["product_id"]]


def test_rows_recommending_an_unshown_product_are_set_aside_and_counted():
    rows = [_row(_hit(0)["product_id"]), _row(_hit(6)["product_id"]), _row(_hit(2)["product_id"])]
    kept, report = sft_training_rows(rows, "compact")
    assert len(kept) == 2 and report["dropped"]["recommend_unseen"] == 1 and report["rows_in"] == 3
    assert sft_training_rows(rows, "full")[1]["dropped"]["recommend_unseen"] == 0  # real ids: nothing to hide


def test_row_shape_and_product_only_selection():
    single = _row(_hit(0)["product_id"])
    multi = _row(",".join(_hit(i)["product_id"] for i in (0, 1)))
    assert row_shape(single) == "Product" and row_shape(multi) == "multi"
    kept, report = sft_training_rows([multi, single, multi], "compact", shapes=("Product",))
    assert kept == [single] and report["dropped"]["shape"] == 2
    ordered, _ = sft_training_rows([multi, single], "compact", product_first=True)
    assert ordered == [single, multi]


def test_miner_style_drills_choose_the_one_hit_that_fits(world):
    from oro_assets.training.corpus import copy_drill_rows

    rows = copy_drill_rows(world.catalogue, 60, 3, COMPACT_SYSTEM_PROMPT, [], style="miner")
    assert len(rows) == 60
    for r in rows:
        msgs = r["messages"]
        args = json.loads(msgs[2]["tool_calls"][0]["function"]["arguments"])
        hits = {h["product_id"]: h for h in json.loads(msgs[3]["content"])}
        pick = json.loads(msgs[4]["tool_calls"][0]["function"]["arguments"])["product_ids"]
        chosen = hits[pick]
        assert args["q"] in msgs[1]["content"] and args["q"] in chosen["title"].lower()
        lo, hi = (float(x) if x else None for x in args["price"].split("-"))
        assert (lo is None or chosen["price"] >= lo) and (hi is None or chosen["price"] <= hi)
        for s in args.get("service", "").split(",") if args.get("service") else []:
            assert s in chosen["service"]
        think = msgs[4]["reasoning_content"]
        assert think.rstrip(".").endswith(pick) or think.endswith(f"{pick} is the better choice.")
        assert pick not in re.split(r", so ", think)[0] or think.startswith("Comparing ")
        assert msgs[-2]["tool_calls"][0]["function"]["name"] == "terminate"


def test_extend_tokenizer_appends_missing_words_and_keeps_every_id():
    from oro_assets.training.tiny_model import UNK_TOKEN, build_tokenizer, extend_tokenizer

    tok = build_tokenizer(["zesenu tank top {\"q\": \"x\"}"])
    text = "I will compare zesenu tank top, so it is better"
    assert tok.convert_tokens_to_ids(UNK_TOKEN) in tok(text)["input_ids"]
    bigger, added = extend_tokenizer(tok, [text, "will will so"])
    assert added[0] == "will" and {"so", "compare", "better"} <= set(added) and "zesenu" not in added
    assert all(bigger.convert_tokens_to_ids(t) == i for t, i in tok.get_vocab().items())  # nothing renumbered
    assert len(bigger) == len(tok) + len(added)
    ids = bigger(text)["input_ids"]
    assert bigger.convert_tokens_to_ids(UNK_TOKEN) not in ids
    assert bigger.decode(ids) == text.lower()
    assert bigger.chat_template == tok.chat_template and bigger.eos_token == tok.eos_token
    assert extend_tokenizer(bigger, [text]) == (bigger, [])


def test_run_sft_trains_product_rows_with_the_corpus_words_and_mixed_drills(small_profile, base_ckpt, world,
                                                                             miner_rows, tmp_path):
    from oro_assets.training.checkpoints import load_model_and_tokenizer
    from oro_assets.training.profiles import with_overrides
    from oro_assets.training.stages.sft import run_sft
    from oro_assets.training.tiny_model import UNK_TOKEN

    profile = with_overrides(small_profile, "sft", max_steps=2, copy_drills=0, mixed_drills=6,
                             copy_drill_style="miner", row_shapes=("Product",), extend_vocab=True, word_swaps=1)
    res = run_sft(profile, miner_rows, base_ckpt, tmp_path, catalogue=world.catalogue, log=lambda m: None)
    n_product = sum(row_shape(r) == "Product" for r in miner_rows)
    assert 0 < n_product < len(miner_rows)
    assert res.metrics["rows_in"] == len(miner_rows) and res.metrics["rows_dropped"]["shape"] == len(miner_rows) - n_product
    assert res.metrics["rows_kept"] + res.metrics["rows_dropped"]["recommend_unseen"] == n_product
    # every kept Product row searched the request's words, so each has its one word-swap variant
    assert res.metrics["word_swap_rows"] == res.metrics["rows_kept"]
    assert res.n_examples == 2 * res.metrics["rows_kept"] + 6 and res.metrics["vocab_added"] > 0
    _, tok = load_model_and_tokenizer(res.path, dtype="float32")
    assert tok.convert_tokens_to_ids("will") != tok.convert_tokens_to_ids(UNK_TOKEN)


def test_multi_item_drills_search_each_item_in_turn_and_recommend_all_in_order(world):
    from oro_assets.training.corpus import copy_drill_rows

    rows = copy_drill_rows(world.catalogue, 40, 3, COMPACT_SYSTEM_PROMPT, [], style="miner", multi_item=0.25)
    multi = [r for r in rows if r["id"].endswith("_multi")]
    assert len(multi) == 10 and all(row_shape(r) == "multi" for r in multi)
    # interleaving leaves the one-product drills as they were without multi-item drills
    single = [r for r in rows if not r["id"].endswith("_multi")]
    plain = copy_drill_rows(world.catalogue, 30, 3, COMPACT_SYSTEM_PROMPT, [], style="miner")
    assert [r["messages"] for r in single] == [r["messages"] for r in plain]
    kinds, openers = set(), set()
    for r in multi:
        msgs = r["messages"]
        query = msgs[1]["content"]
        calls = [(m["tool_calls"][0]["function"], msgs[i + 1]) for i, m in enumerate(msgs)
                 if m["role"] == "assistant" and m["tool_calls"]]
        searches = [(json.loads(f["arguments"]), json.loads(res["content"])) for f, res in calls
                    if f["name"] == "find_product"]
        assert 2 <= len(searches) <= 4 and [f["name"] for f, _ in calls[len(searches):]] == ["recommend_product",
                                                                                              "terminate"]
        picks = json.loads(calls[len(searches)][0]["arguments"])["product_ids"].split(",")
        assert len(picks) == len(searches)
        positions = [query.index(args["q"]) for args, _ in searches]
        assert positions == sorted(positions)  # the items are searched in the order the request names them
        for (args, hits), pick in zip(searches, picks, strict=True):
            chosen = next(h for h in hits if h["product_id"] == pick)
            assert args["q"] in chosen["title"].lower()
            lo, hi = (float(x) if x else None for x in args["price"].split("-"))
            assert (lo is None or chosen["price"] >= lo) and (hi is None or chosen["price"] <= hi)
        shop = "First, a" in query
        kinds.add(shop)
        if shop:
            openers.add(query.split(":")[0])
        first_shop = next(h["shop_id"] for h in searches[0][1] if h["product_id"] == picks[0])
        for args, hits in searches[1:]:
            assert (args.get("shop_id") == first_shop and {h["shop_id"] for h in hits} == {first_shop}) if shop \
                else "shop_id" not in args
    assert kinds == {True, False}
    # Shop requests open as the arena's do, not with one fixed phrase
    assert len(openers) >= 2 and openers <= {"I'm looking for a shop that offers all of these",
                                             "Find a shop selling these items", "Which store has all of the following"}


def test_multi_item_drills_are_refused_outside_the_miner_style_or_share_range():
    from oro_assets.training.stages.sft_config import SFTStageConfig

    with pytest.raises(ValueError, match="multi_item_drills must be in"):
        SFTStageConfig(copy_drill_style="miner", multi_item_drills=1.5)
    with pytest.raises(ValueError, match="needs copy_drill_style 'miner'"):
        SFTStageConfig(multi_item_drills=0.25)
    with pytest.raises(ValueError, match="mixed_multi_item_drills must be in"):
        SFTStageConfig(copy_drill_style="miner", mixed_multi_item_drills=-0.5)
    with pytest.raises(ValueError, match="mixed_multi_item_drills needs copy_drill_style 'miner'"):
        SFTStageConfig(mixed_multi_item_drills=0.5)


def test_the_mixed_drills_take_their_own_multi_item_share(small_profile, base_ckpt, world, miner_rows, tmp_path):
    from oro_assets.training.profiles import with_overrides
    from oro_assets.training.stages.sft import run_sft

    profile = with_overrides(small_profile, "sft", max_steps=1, copy_drills=0, mixed_drills=8, word_swaps=0,
                             copy_drill_style="miner", multi_item_drills=0.25, extend_vocab=False)
    inherited = run_sft(profile, miner_rows, base_ckpt, tmp_path / "a", catalogue=world.catalogue, log=lambda m: None)
    own = run_sft(with_overrides(profile, "sft", mixed_multi_item_drills=0.5), miner_rows, base_ckpt, tmp_path / "b",
                  catalogue=world.catalogue, log=lambda m: None)
    assert inherited.metrics["mixed_multi_item_drills"] == 2, "every 4th of 8 drills"
    assert own.metrics["mixed_multi_item_drills"] == 4, "every 2nd of 8 drills"


def test_warm_up_cuts_multi_item_drills_at_a_later_search_too(world):
    """The warm-up's cut drills: one-product drills end at their first search; multi-item drills at the j-th search,
    so some end at a later item's search (the shop handle of the first choice in a Shop request's call)."""
    from oro_assets.training.corpus import copy_drill_rows
    from oro_assets.training.stages.sft import search_turn

    rows = copy_drill_rows(world.catalogue, 80, 3, COMPACT_SYSTEM_PROMPT, [], style="miner", multi_item=0.25)
    later = 0
    for r in rows:
        cut = search_turn(r, 0)
        last = cut["messages"][-1]
        assert last["role"] == "assistant" and last["tool_calls"][0]["function"]["name"] == "find_product"
        assert cut["messages"] == r["messages"][: len(cut["messages"])]
        n_searches = sum(m["role"] == "assistant" for m in cut["messages"])
        if not r["id"].endswith("_multi"):
            assert n_searches == 1
        later += n_searches > 1
    assert later >= 8  # of 20 multi-item drills (j uniform over 2-4 items: about 13 expected)
    assert [search_turn(r, 0)["id"] for r in rows] == [search_turn(r, 0)["id"] for r in rows]  # drawn per row, fixed


def test_quoted_shop_drills_start_each_items_plan_with_the_requests_clause_and_change_nothing_else(world):
    from oro_assets.training.corpus import copy_drill_rows

    plain = copy_drill_rows(world.catalogue, 40, 3, COMPACT_SYSTEM_PROMPT, [], style="miner", multi_item=0.25)
    quoted = copy_drill_rows(world.catalogue, 40, 3, COMPACT_SYSTEM_PROMPT, [], style="miner", multi_item=0.25,
                             quote_shop_items=True)
    changed = 0
    for a, b in zip(plain, quoted, strict=True):
        query = a["messages"][1]["content"]
        if "First, a" not in query:
            assert a == b, "only Shop requests are quoted"
            continue
        changed += 1
        plans_a = [m["reasoning_content"] for m in a["messages"] if m["role"] == "assistant"]
        plans_b = [m["reasoning_content"] for m in b["messages"] if m["role"] == "assistant"]
        searches = sum(1 for m in b["messages"] if m["role"] == "tool" and m["name"] == "find_product")
        ordinals = ("First", "Second", "Third", "Fourth")
        for j in range(searches):
            plan = plans_b[j].splitlines()[-1]
            quote, _, rest = plan.partition(". The user wants ")
            assert quote.startswith(f"{ordinals[j]}, a ") and quote in query, (quote, query)
            assert plans_a[j].splitlines()[-1] == "The user wants " + rest
        assert plans_a[searches:] == plans_b[searches:]
    assert changed >= 3
