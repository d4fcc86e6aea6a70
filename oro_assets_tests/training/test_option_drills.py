"""Option drills: episodes where the hits tie on the list and only the viewed details decide.

The tiny policy learned to view but then recommended the first viewed product whatever its details said; the drills
put the one product carrying every asked option at a random viewed position.
"""

from __future__ import annotations

import collections
import json
import re

from oro_assets.arena.episode import SYSTEM_PROMPT
from oro_assets.arena.tools import TOOL_SCHEMAS
from oro_assets.toolcalls import RECOMMEND_PRODUCT, VIEW_PRODUCT_INFORMATION


def _calls(row, name):
    return [(n, c) for n, m in enumerate(row["messages"]) for c in m.get("tool_calls") or []
            if c["function"]["name"] == name]


def _carries(product, key, value):
    in_variant = any(opt.get(key) == value for opt in product["sku_options"].values())
    return in_variant or value in product["attributes"].get(key, [])


def test_only_the_viewed_details_decide_and_the_fitting_product_is_anywhere_among_them(world):
    from oro_assets.training.corpus import option_drill_rows
    from oro_assets.training.data import sft_example

    rows = option_drill_rows(world.catalogue, 300, 4, SYSTEM_PROMPT, TOOL_SCHEMAS)
    assert len(rows) == 300 and len({r["id"] for r in rows}) == 300
    positions = collections.Counter()
    for row in rows:
        query = row["messages"][1]["content"]
        hits = json.loads(row["messages"][3]["content"])
        (n_view, view), = _calls(row, VIEW_PRODUCT_INFORMATION)
        details = json.loads(row["messages"][n_view + 1]["content"])
        (_, rec), = _calls(row, RECOMMEND_PRODUCT)
        pick = json.loads(rec["function"]["arguments"])["product_ids"]
        # on the list the viewed hits tie: same price, every key word of the search in each title
        q = json.loads(row["messages"][2]["tool_calls"][0]["function"]["arguments"])["q"]
        assert len({h["price"] for h in hits[:3]}) == 1
        assert all(set(q.split()) <= set(h["title"].lower().split()) for h in hits[:3])
        assert json.loads(view["function"]["arguments"])["product_ids"].split(",") == [h["product_id"] for h in hits[:3]]
        # what the assistant says it needs is in the request, and only the recommended viewed product carries it all
        need = re.search(r"need (.*)\. View", row["messages"][n_view]["reasoning_content"]).group(1)
        asked = [tuple(part.split(" ", 1)) for part in need.split("; ")]
        assert asked and all(value in query for _, value in asked), (need, query)
        fits = [d["product_id"] for d in details if all(_carries(d, k, v) for k, v in asked)]
        assert fits == [pick], (query, need, details, pick)
        positions[[h["product_id"] for h in hits].index(pick)] += 1
    assert set(positions) == {0, 1, 2} and min(positions.values()) >= 60, positions
    # they render in the tiny profile's compact view: the verdicts name the viewed handles
    example = sft_example(rows[0], "compact", TOOL_SCHEMAS)
    verdicts = [m for m in example["messages"] if "sku" in (m.get("reasoning_content") or "")]
    assert verdicts and re.search(r"^1: price yes; words yes; service yes; sku (yes|no)$",
                                  verdicts[-1]["reasoning_content"], re.M)


def test_plain_drills_ask_for_no_option_and_choose_from_the_list_without_a_view(world):
    """Drills that all view teach viewing whatever the request; a share that asks for nothing answers from the list.
    The one hit the request fits (by the arena scorer's price and service rules, and every searched word in its
    title) is the recommended one, at any position."""
    from oro_assets.arena.scoring import price_ok, service_ok
    from oro_assets.training.corpus import option_drill_rows

    rows = option_drill_rows(world.catalogue, 200, 1, SYSTEM_PROMPT, TOOL_SCHEMAS, plain_share=0.5)
    plain = [r for r in rows if not _calls(r, VIEW_PRODUCT_INFORMATION)]
    assert 70 <= len(plain) <= 130 and len(rows) == 200
    positions = collections.Counter()
    for row in plain:
        call = json.loads(row["messages"][2]["tool_calls"][0]["function"]["arguments"])
        lo, _, hi = call["price"].partition("-")
        bound = ({"between": [float(lo), float(hi)]} if lo != "0" and hi else {"less than": [None, float(hi)]}
                 if hi else {"greater than": [float(lo), None]})
        wanted = call["service"].split(",") if call.get("service") else []
        hits = json.loads(row["messages"][3]["content"])
        fits = [h["product_id"] for h in hits if price_ok(h["price"], [bound]) and service_ok(h["service"], wanted)
                and set(call["q"].split()) <= set(h["title"].lower().split())]
        (_, rec), = _calls(row, RECOMMEND_PRODUCT)
        pick = json.loads(rec["function"]["arguments"])["product_ids"]
        assert fits == [pick], (call, hits, pick)
        positions[[h["product_id"] for h in hits].index(pick)] += 1
    assert len(positions) >= 3


def _bound(price_arg):
    lo, _, hi = price_arg.partition("-")
    return ({"between": [float(lo), float(hi)]} if lo != "0" and hi else {"less than": [None, float(hi)]}
            if hi else {"greater than": [float(lo), None]})


def test_multi_item_drills_choose_each_item_and_go_on_to_the_next_until_the_last(world):
    """One-product drills teach answering right after the first choice; a request for several products must go on.
    A multi-item drill is a Shop request (a request for several products without a shop is a Voucher request, which
    checks the voucher after its last choice); every choice but the last is followed, in the same turn, by the next
    item's plan and its search; every later item is searched in the shop of the first choice; the recommendation
    names one fitting product per item in the asked order."""
    from oro_assets.arena.generator import SHOP_OPENERS
    from oro_assets.arena.scoring import price_ok, service_ok
    from oro_assets.toolcalls import FIND_PRODUCT
    from oro_assets.training.corpus import option_drill_rows

    rows = option_drill_rows(world.catalogue, 300, 3, SYSTEM_PROMPT, TOOL_SCHEMAS, plain_share=0.3,
                             multi_item_share=0.5)
    multi = [r for r in rows if len(_calls(r, FIND_PRODUCT)) > 1]
    assert 70 <= len(multi) <= 140 and len(rows) == 300
    sizes, viewed_items = collections.Counter(), 0
    for row in multi:
        msgs = row["messages"]
        query = msgs[1]["content"]
        searches = _calls(row, FIND_PRODUCT)
        (n_rec, rec), = _calls(row, RECOMMEND_PRODUCT)
        picks = json.loads(rec["function"]["arguments"])["product_ids"].split(",")
        assert len(picks) == len(searches), (query, picks)
        sizes[len(picks)] += 1
        # the request names each item's search words, in the asked order
        places = [query.lower().index(json.loads(c["function"]["arguments"])["q"]) for _, c in searches]
        assert places == sorted(places), query
        is_shop = any(query.startswith(opener.split("{x}")[0]) for opener in SHOP_OPENERS)
        assert is_shop, query
        first_shop = None
        for j, (n_search, call) in enumerate(searches):
            args = json.loads(call["function"]["arguments"])
            hits = json.loads(msgs[n_search + 1]["content"])
            assert picks[j] in {h["product_id"] for h in hits}
            pick = next(h for h in hits if h["product_id"] == picks[j])
            if is_shop and j == 0:
                first_shop = pick["shop_id"]
            if is_shop and j > 0:
                assert args["shop_id"] == first_shop and {h["shop_id"] for h in hits} == {first_shop}
            else:
                assert "shop_id" not in args
            views = [(n, c) for n, c in _calls(row, VIEW_PRODUCT_INFORMATION)
                     if n_search < n < (searches[j + 1][0] if j + 1 < len(searches) else n_rec)]
            if views:  # an option item: only the chosen viewed product carries what the plan says it needs
                viewed_items += 1
                (n_view, _), = views
                need = re.search(r"need (.*)\. View", msgs[n_view]["reasoning_content"]).group(1)
                asked = [tuple(part.split(" ", 1)) for part in need.split("; ")]
                details = json.loads(msgs[n_view + 1]["content"])
                assert [d["product_id"] for d in details if all(_carries(d, k, v) for k, v in asked)] == [picks[j]]
            else:  # a plain item: the one hit the scorer's price and service rules and the search words fit
                fits = [h["product_id"] for h in hits if price_ok(h["price"], [_bound(args["price"])])
                        and service_ok(h["service"], args["service"].split(",") if args.get("service") else [])
                        and set(args["q"].split()) <= set(h["title"].lower().split())]
                assert fits == [picks[j]], (args, hits)
            # the choice and, unless it is the last item, the next item's plan and search in the same turn
            n_choice = searches[j + 1][0] if j + 1 < len(searches) else n_rec
            think = msgs[n_choice]["reasoning_content"]
            assert f"Choose {picks[j]}." in think
            if j + 1 < len(searches):
                nxt = json.loads(searches[j + 1][1]["function"]["arguments"])["q"]
                assert think.index(f"Choose {picks[j]}.") < think.index(f"Item {j + 2}: words {nxt};")
    assert set(sizes) == {2, 3, 4} and viewed_items > len(multi), sizes


def test_the_one_product_drills_before_the_first_multi_item_drill_are_unchanged_and_the_share_is_checked(world):
    from oro_assets.training.corpus import option_drill_rows
    from oro_assets.training.stages.teacher_sft_config import TeacherSFTStageConfig

    checked = 0
    for seed in range(5, 15):
        before = option_drill_rows(world.catalogue, 60, seed, SYSTEM_PROMPT, TOOL_SCHEMAS, plain_share=0.3)
        after = option_drill_rows(world.catalogue, 60, seed, SYSTEM_PROMPT, TOOL_SCHEMAS, plain_share=0.3,
                                  multi_item_share=0.3)
        first_multi = next(i for i, r in enumerate(after) if r["id"].startswith("omdrill"))
        assert after[:first_multi] == before[:first_multi]
        checked += first_multi
    assert checked >= 10
    assert [r["id"] for r in after if r["id"].startswith("pdrill")] == [r["id"] for r in before
                                                                       if r["id"].startswith("pdrill")]
    for bad in (-0.1, 1.5):
        try:
            TeacherSFTStageConfig(option_drill_multi_share=bad)
        except ValueError as e:
            assert "option_drill_multi_share" in str(e)
        else:
            raise AssertionError(f"{bad} accepted")


def test_listing_drills_name_their_items_first_and_follow_each_choice_with_the_next_items_word(world):
    from oro_assets.training.corpus import option_drill_rows

    def thinking(row):
        return [m.get("reasoning_content") or "" for m in row["messages"] if m["role"] == "assistant"]

    plain = option_drill_rows(world.catalogue, 120, 9, SYSTEM_PROMPT, TOOL_SCHEMAS, plain_share=0.3,
                              multi_item_share=0.3)
    listed = option_drill_rows(world.catalogue, 120, 9, SYSTEM_PROMPT, TOOL_SCHEMAS, plain_share=0.3,
                               multi_item_share=0.3, list_items=True)
    assert [r["id"] for r in listed] == [r["id"] for r in plain]
    sizes = collections.Counter()
    for a, b in zip(plain, listed, strict=True):
        strip = ["\n".join(x for x in t.splitlines() if not x.startswith(("Items: ", "Then "))) for t in thinking(b)]
        assert strip == thinking(a), "only the listing lines are added"
        assert [m.get("tool_calls") for m in b["messages"]] == [m.get("tool_calls") for m in a["messages"]]
        lines = [x for t in thinking(b) for x in t.splitlines()]
        searched = [json.loads(c["function"]["arguments"])["q"].split()[0]
                    for _, c in _calls(b, "find_product")]
        sizes[len(searched)] += 1
        assert lines[0] == f"Items: {', '.join([*searched, 'end'])}."
        assert [x for x in lines if x.startswith("Then ")] == [f"Then {w}." for w in [*searched[1:], "end"]]
    assert sizes[1] > 0 and sum(v for k, v in sizes.items() if k > 1) > 0, sizes
