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
