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
