"""Tool semantics over a hand-built catalogue: BM25 values, filters, sort, paging, errors, extras."""

from __future__ import annotations

import math

import pytest

from oro_assets.arena.catalogue import Catalogue, CatalogueError
from oro_assets.arena.env import InProcessEnv
from oro_assets.arena.search import SearchIndex, parse_price_range
from oro_assets.arena.tools import CORE_TOOL_NAMES, TOOL_SCHEMAS, execute_tool


def _p(pid, title, price=100.0, shop="S1", service=(), sold=0, sku=None, attrs=None):
    return {"product_id": pid, "shop_id": shop, "brand": "", "category": "A > B > C", "title": title,
            "short_description": "", "description": "", "specification": "", "price": float(price),
            "sold_count": sold, "sku_options": sku or {}, "attributes": attrs or {}, "service": list(service)}


def test_bm25_matches_hand_computation():
    idx = SearchIndex([_p("a", "apple banana"), _p("b", "apple"), _p("c", "cherry")])
    # N=3, avgdl=4/3. "banana": df=1, idf=ln(1+2.5/1.5)=0.98083; doc a dl=2:
    # norm=1.2*(0.25+0.75*2/(4/3))=1.65; score=0.98083*2.2/(1+1.65)=0.81428
    s = idx.scores("banana")
    assert s[0] == pytest.approx(math.log(1 + 2.5 / 1.5) * 2.2 / 2.65, rel=1e-9)
    assert s[0] == pytest.approx(0.81428, abs=1e-4)
    assert s[1] == 0.0 and s[2] == 0.0
    # "apple": idf=ln(1.6)=0.47000; doc b (dl=1): 0.47*2.2/1.975=0.52354 > doc a: 0.47*2.2/2.65=0.39019
    s = idx.scores("APPLE apple")  # case-insensitive, repeated query terms count once
    assert s[1] == pytest.approx(0.52354, abs=1e-4) and s[0] == pytest.approx(0.39019, abs=1e-4)
    assert idx.search("apple") == [1, 0]


def test_sku_and_attribute_values_are_indexed():
    cat = Catalogue([_p("1", "tote bag", sku={"1": {"color_family": "crimson"}}), _p("2", "tote bag", attrs={"material": ["jute"]})])
    env = InProcessEnv(cat)
    assert [h["product_id"] for h in env.find_product("crimson")] == ["1"]
    assert [h["product_id"] for h in env.find_product("jute")] == ["2"]


def _lamps():
    # 60 identical titles: ties break by product_id string order; prices 10..600, sold reversed
    return Catalogue([_p(f"{100 + i}", "desk lamp", price=10.0 * (i + 1), shop="S1" if i % 2 else "S2",
                         service=["COD"] if i % 3 == 0 else [], sold=600 - i) for i in range(60)])


def test_ties_paging_and_fifty_hit_cap():
    env = InProcessEnv(_lamps())
    pages = [env.find_product("desk lamp", page=p) for p in range(1, 6)]
    ids = [h["product_id"] for page in pages for h in page]
    assert ids == [str(100 + i) for i in range(50)]  # only the first 50 hits, id order on ties
    assert all(len(p) == 10 for p in pages)
    assert set(pages[0][0]) == {"product_id", "shop_id", "title", "price", "service", "sold_count"}
    assert env.find_product("desk lamp", page=6) == []  # ORO's process_page: outside 1-5 is an empty page


def test_filters_and_sorts():
    env = InProcessEnv(_lamps())
    hits = env.find_product("lamp", price="100-150")  # inclusive: 100,110,...,150
    assert [h["price"] for h in hits] == [100.0, 110.0, 120.0, 130.0, 140.0, 150.0]
    assert all(h["price"] >= 550 for h in env.find_product("lamp", price="550-"))
    assert len(env.find_product("lamp", price="550-")) == 6
    assert {h["shop_id"] for h in env.find_product("lamp", shop_id="S1")} == {"S1"}
    assert env.find_product("lamp", shop_id="nope") == []
    cod = env.find_product("lamp", service="COD")
    assert cod and all("COD" in h["service"] for h in cod)
    assert env.find_product("lamp", service="COD,official") == []
    # sort applies to the first 50 hits (prices 10..500)
    assert env.find_product("lamp", sort="pricedesc")[0]["price"] == 500.0
    assert env.find_product("lamp", sort="priceasc")[0]["price"] == 10.0
    assert env.find_product("lamp", sort="order")[0]["sold_count"] == 600
    assert env.find_product("no such words") == []


def test_price_range_parser():
    assert parse_price_range("120-340") == (120.0, 340.0)
    assert parse_price_range("80-") == (80.0, None)
    assert parse_price_range(None) == (None, None)
    for bad in ("abc", "5-2", "x-3"):
        with pytest.raises(ValueError):
            parse_price_range(bad)


def test_execute_tool_errors_are_strings():
    env = InProcessEnv(_lamps())
    for name, args in [
        ("find_product", {"page": 1}),
        ("find_product", {"q": "lamp", "bogus": 1}),
        ("find_product", {"q": 7}),
        ("find_product", "{not json"),
        ("view_product_information", {}),
        ("recommend_product", {"product_ids": " , "}),
        ("fly_to_moon", {}),
    ]:
        out = execute_tool(env, name, args)
        assert isinstance(out, str) and out.startswith("Error"), (name, args, out)
    assert len(execute_tool(env, "find_product", '{"q": "lamp", "page": "2"}')) == 10  # JSON string args
    # arguments ORO's server cannot read are ignored (filters) or give [] (page), never an error text
    assert execute_tool(env, "find_product", {"q": "lamp", "page": 9}) == []
    plain = execute_tool(env, "find_product", {"q": "lamp"})
    assert len(plain) == 10
    for odd in ({"price": "cheap"}, {"sort": "random"}, {"service": "teleport"}):
        assert execute_tool(env, "find_product", {"q": "lamp", **odd}) == plain, odd
    # unknown ids are left out; "100, 101" asks for "100" and " 101" (ORO does not strip)
    view = execute_tool(env, "view_product_information", {"product_ids": "100,999, 101"})
    assert [v["product_id"] for v in view] == ["100"]
    assert "recommended" in execute_tool(env, "recommend_product", {"product_ids": "100"})
    assert "terminated" in execute_tool(env, "terminate", {"status": "success"})


def test_schemas():
    names = [s["function"]["name"] for s in TOOL_SCHEMAS]
    assert names[:4] == list(CORE_TOOL_NAMES) and len(names) == 7
    assert all(s["type"] == "function" and s["function"]["parameters"]["type"] == "object" for s in TOOL_SCHEMAS)


def test_extra_tools():
    cat = Catalogue([
        _p("1", "red tote bag", 200, "S1", ["COD"], sku={"1": {"color_family": "red", "size": "m"}}, attrs={"material": ["canvas"]}),
        _p("2", "steel pan", 120, "S1"),
        _p("3", "steel pan", 90, "S2"),
    ])
    env = InProcessEnv(cat)
    m = execute_tool(env, "check_product_match", {"product_id": "1", "keywords": "red bag", "price": "100-250",
                                                  "service": "COD", "sku_options": "color_family:red;size:m",
                                                  "attributes": "material:canvas"})
    assert m["all_match"] is True
    m2 = execute_tool(env, "check_product_match", {"product_id": "1", "keywords": "blue bag", "price": "300-"})
    assert m2["all_match"] is False and m2["checks"]["keywords"]["missing"] == ["blue"]
    same = execute_tool(env, "find_products_in_same_shop", {"product_id": "1", "q": "steel pan"})
    assert [h["product_id"] for h in same] == ["2"]
    # 200 + 90 = 290, two shops; platform fixed 40 from 250 -> 250 <= 260
    v = execute_tool(env, "calculate_voucher", {"product_ids": "1,3", "budget": 260, "threshold": 250,
                                                "discount_type": "fixed", "face_value": 40})
    assert v == {"total": 290.0, "n_shops": 2, "voucher_applies": True, "price_after_voucher": 250.0, "within_budget": True}
    v2 = execute_tool(env, "calculate_voucher", {"product_ids": "1,3", "budget": 260, "threshold": 250, "voucher_type": "shop",
                                                 "discount_type": "fixed", "face_value": 40})
    assert v2["voucher_applies"] is False and v2["within_budget"] is False
    # a voucher the tool cannot read is an error, not a platform voucher or a negative price
    odd_type = execute_tool(env, "calculate_voucher", {"product_ids": "1,3", "voucher_type": "Shop",
                                                       "discount_type": "fixed", "face_value": 40})
    assert odd_type.startswith("Error: voucher_type must be 'platform' or 'shop'")
    percent = execute_tool(env, "calculate_voucher", {"product_ids": "1,3", "discount_type": "percentage",
                                                      "discount": 21, "cap": 100})
    assert percent.startswith("Error: a percentage discount is a fraction")


def test_catalogue_roundtrip_and_validation(tmp_path):
    cat = _lamps()
    path = tmp_path / "cat.jsonl"
    cat.to_jsonl(path)
    back = Catalogue.from_jsonl(path)
    assert back.products == cat.products
    with pytest.raises(CatalogueError):
        Catalogue([_p("1", "x"), _p("1", "y")])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"product_id": "1"}\n')
    with pytest.raises(CatalogueError, match="bad.jsonl"):
        Catalogue.from_jsonl(bad)
