"""ORO's search server, input by input: the embedded tools and ``arena serve`` must answer as it does.

Each row is (call arguments, what ORO answers), the answer read from ORO-AI/oro at a6b1cf3
(``src/search_engine/server.py``; the processing functions are the same at 2539ddb and 57929c2)
and, for how a tool call becomes a request, ``src/agent/agent.py`` (``find_product``: page 1 unless
given) and ``src/agent/proxy_client.py`` (``_build_url``: ``None`` not sent, ``urlencode(doseq=True)``
so a list is a repeated parameter and any other value is ``str(value)``). The comment on each row
names the ORO function that decides it. docs/oro-server-parity.md has the same table.

Every row runs three ways: the in-process tool (``execute_tool`` over ``InProcessEnv``), the same
tool over HTTP (``HttpEnv`` against ``arena serve``), and a raw GET to ``arena serve`` carrying the
query string ORO's reference agent would send.

The catalogue: twelve products with the same title, so BM25 ties and relevance order is id order
(p01..p12); prices, shops, services and sales differ so that each filter and sort is visible.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

import pytest

from oro_assets.arena.catalogue import Catalogue
from oro_assets.arena.env import VIEW_FIELDS, HttpEnv, InProcessEnv
from oro_assets.arena.server import running_server
from oro_assets.arena.tools import execute_tool

#            id     price  shop  service                    sold
_ROWS = [("p01", 250.0, "S1", [], 10),
         ("p02", 10.0, "S2", ["COD"], 500),
         ("p03", 15.0, "S1", ["official"], 30),
         ("p04", 20.0, "S2", ["official", "COD"], 40),
         ("p05", 30.0, "S1", ["freeShipping"], 50),
         ("p06", 50.0, "S2", ["COD"], 60),
         ("p07", 75.0, "S1", ["official", "flashsale"], 70),
         ("p08", 100.0, "S2", [], 80),
         ("p09", 104.0, "S1", ["official", "COD"], 90),
         ("p10", 150.0, "S2", ["freeShipping", "COD"], 100),
         ("p11", 200.0, "S1", ["official"], 110),
         ("p12", 500.0, "S2", ["COD"], 120)]

Q = "dental elastics"
R1 = [f"p{i:02d}" for i in range(1, 11)]  # relevance page 1, no filter
P2 = ["p11", "p12"]
OFFICIAL = ["p03", "p04", "p07", "p09", "p11"]
COD = ["p02", "p04", "p06", "p09", "p10", "p12"]
S1 = ["p01", "p03", "p05", "p07", "p09", "p11"]
ERROR = "error"  # the tool answers "Error: ..." (a call ORO's reference agent cannot make)
E500 = 500  # ORO's server fails (Flask answers 500); its reference agent then returns []


def _catalogue() -> Catalogue:
    return Catalogue([{"product_id": pid, "shop_id": shop, "brand": "", "category": "Health > Dental > Orthodontics",
                       "title": "dental elastics orthodontic", "short_description": f"short {pid}",
                       "description": f"about {pid}", "specification": "", "price": price, "sold_count": sold,
                       "sku_options": {}, "attributes": {}, "service": svc}
                      for pid, price, shop, svc, sold in _ROWS])


def _fp(**kw):
    return {"q": Q, **kw}


# (row id, find_product arguments, tool answer, raw-HTTP answer if it differs, ORO function that decides)
FIND = [
    ("plain", _fp(), R1, None, "agent.find_product page=1 default"),
    # the call: a price with no "-" and an unknown service are both ignored
    ("issue-call", _fp(price="above:10", service="lazmall"), R1, None, "process_price no '-'; process_service"),
    # --- price: process_price (exactly one "-", each side float() or no bound) + is_filter_by_price
    ("price-no-dash", _fp(price="104"), R1, None, "process_price: no '-' -> [None, None]"),
    ("price-reversed", _fp(price="50-10"), [], None, "process_price [50, 10]: every price < 50 or > 10"),
    ("price-range", _fp(price="10-50"), ["p02", "p03", "p04", "p05", "p06"], None, "is_filter_by_price inclusive"),
    ("price-lo-only", _fp(price="100-"), ["p01", "p08", "p09", "p10", "p11", "p12"], None, "float('') -> None"),
    ("price-hi-only", _fp(price="-15"), ["p02", "p03"], None, "float('') -> None"),
    ("price-spaces", _fp(price=" 10 - 20 "), ["p02", "p03", "p04"], None, "float() strips blanks"),
    ("price-three-parts", _fp(price="1-2-3"), R1, None, "split gives 3 parts -> [None, None]"),
    ("price-text-side", _fp(price="abc-20"), ["p02", "p03", "p04"], None, "float('abc') -> None, hi kept"),
    ("price-currency", _fp(price="$10-$20"), R1, None, "both sides unreadable -> no bound"),
    ("price-en-dash", _fp(price="10\u201320"), R1, None, "no ASCII '-' -> [None, None]"),
    ("price-nan-side", _fp(price="nan-20"), ["p02", "p03", "p04"], None, "price < nan is False: no lower bound"),
    ("price-exponent", _fp(price="1e2-2e2"), ["p08", "p09", "p10", "p11"], None, "float('1e2') = 100"),
    ("price-exact", _fp(price="104-104"), ["p09"], None, "inclusive bounds"),
    ("price-inf", _fp(price="inf-"), [], None, "float('inf'): nothing is >= inf"),
    ("price-dash-only", _fp(price="-"), R1, None, "['', ''] -> [None, None]"),
    ("price-empty", _fp(price=""), R1, None, "process_price: not price"),
    ("price-null", _fp(price=None), R1, None, "None is not sent (_build_url)"),
    ("price-json-number", _fp(price=104), R1, None, "sent as '104': no '-'"),
    ("price-json-negative", _fp(price=-15), ["p02", "p03"], None, "sent as '-15' -> [None, 15]"),
    # --- sort: process_sort (exact "order" | "priceasc" | "pricedesc", else relevance)
    ("sort-priceasc", _fp(sort="priceasc"), ["p02", "p03", "p04", "p05", "p06", "p07", "p08", "p09", "p10", "p11"],
     None, "products.sort(price)"),
    ("sort-priceasc-page2", _fp(sort="priceasc", page=2), ["p01", "p12"], None, "sort before the page slice"),
    ("sort-pricedesc", _fp(sort="pricedesc"), ["p12", "p01", "p11", "p10", "p09", "p08", "p07", "p06", "p05", "p04"],
     None, "products.sort(price, reverse)"),
    ("sort-order", _fp(sort="order"), ["p02", "p12", "p11", "p10", "p09", "p08", "p07", "p06", "p05", "p04"],
     None, "products.sort(sold_count, reverse)"),
    ("sort-default", _fp(sort="default"), R1, None, "process_sort: not in the set -> None"),
    ("sort-unknown", _fp(sort="random"), R1, None, "process_sort -> None"),
    ("sort-case", _fp(sort="PriceDesc"), R1, None, "process_sort is case-sensitive"),
    ("sort-empty", _fp(sort=""), R1, None, "process_sort -> None"),
    ("sort-json-number", _fp(sort=1), R1, None, "sent as '1' -> None"),
    # --- service: process_service (split on ",", exact names, unknown dropped, deduped) + is_filter_by_service
    ("service-one", _fp(service="official"), OFFICIAL, None, "is_filter_by_service"),
    ("service-all-of", _fp(service="official,COD"), ["p04", "p09"], None, "every named service required"),
    ("service-unknown-dropped", _fp(service="official,lazmall"), OFFICIAL, None, "unknown name skipped"),
    ("service-space-not-stripped", _fp(service="official, COD"), OFFICIAL, None, "' COD' is not a service name"),
    ("service-case", _fp(service="cod"), R1, None, "names are case-sensitive"),
    ("service-duplicate", _fp(service="COD,COD"), COD, None, "deduped"),
    ("service-default", _fp(service="default"), R1, None, "unknown name"),
    ("service-default-mixed", _fp(service="official,default"), OFFICIAL, None, "unknown name skipped"),
    ("service-flashsale", _fp(service="flashsale"), ["p07"], None, "is_filter_by_service"),
    ("service-json-list", _fp(service=["COD", "official"]), COD, None, "repeated parameter; args.get -> first"),
    # --- shop_id: is_filter_by_shop_id (exact string, empty = no filter)
    ("shop", _fp(shop_id="S1"), S1, None, "is_filter_by_shop_id"),
    ("shop-leading-space", _fp(shop_id=" S1"), [], None, "exact comparison, no strip"),
    ("shop-case", _fp(shop_id="s1"), [], None, "exact comparison"),
    ("shop-empty", _fp(shop_id=""), R1, None, "'' -> no shop filter"),
    ("shop-unknown", _fp(shop_id="nope"), [], None, "no product of that shop"),
    # --- page: process_page (not empty, str.isdigit(), 1 <= int <= 5), else []
    ("page-1", _fp(page=1), R1, None, "sent as '1'"),
    ("page-2", _fp(page=2), P2, None, "slice (page-1)*10 : page*10"),
    ("page-2-string", _fp(page="2"), P2, None, "isdigit"),
    ("page-3-empty", _fp(page=3), [], None, "past the hits"),
    ("page-6", _fp(page=6), [], None, "int > MAX_PAGE -> None -> []"),
    ("page-0", _fp(page=0), [], None, "int < 1 -> []"),
    ("page-negative", _fp(page=-1), [], None, "'-1'.isdigit() is False -> []"),
    ("page-float", _fp(page=1.0), [], None, "sent as '1.0': not isdigit -> []"),
    ("page-float-string", _fp(page="1.0"), [], None, "not isdigit -> []"),
    ("page-leading-space", _fp(page=" 1"), [], None, "not isdigit -> []"),
    ("page-leading-zero", _fp(page="01"), R1, None, "isdigit, int('01') = 1"),
    ("page-text", _fp(page="abc"), [], None, "not isdigit -> []"),
    ("page-bool", _fp(page=True), [], None, "sent as 'True' -> []"),
    ("page-null", _fp(page=None), [], None, "None is not sent; process_page(None) -> []"),
    ("page-fullwidth-digit", _fp(page="\uff11"), R1, None, "isdigit and int('\uff11') = 1"),
    ("page-huge", _fp(page="99999999999999999999"), [], None, "int > MAX_PAGE -> []"),
    ("page-json-list", _fp(page=[2, 1]), P2, None, "repeated parameter; args.get -> first"),
    ("page-superscript", _fp(page="\u00b2"), [], E500, "isdigit but int('\u00b2') raises: server 500, agent []"),
    # --- q: sanitize_query (Lucene specials -> spaces, strip; empty -> [])
    ("q-empty", {"q": ""}, [], None, "sanitize_query('') -> '' -> []"),
    ("q-blank", {"q": "   "}, [], None, "strip -> '' -> []"),
    ("q-specials-only", {"q": '+-&|!(){}[]^"~*?:\\/'}, [], None, "all specials -> '' -> []"),
    ("q-plus", {"q": "dental+elastics"}, R1, None, "'+' -> space"),
    ("q-phrase-syntax", {"q": '"dental elastics"~2'}, R1, None, "quotes and '~' -> spaces: plain words"),
    ("q-no-match", {"q": "zzzz"}, [], None, "no hit"),
    ("q-very-long", {"q": Q + " " + " ".join(f"w{i}" for i in range(900))}, R1, None,
     "no length limit in server.py (902 distinct terms < Lucene's 1024 clauses)"),
    ("combined", _fp(price="10-50", sort="pricedesc", service="COD"), ["p06", "p04", "p02"], None,
     "filters, then sort"),
    # --- calls ORO's reference agent cannot make (TypeError in the agent); the raw request is answered
    ("q-missing", {"page": 1}, ERROR, [], "agent: find_product() missing 'q'; server: q None -> []"),
    ("unknown-argument", _fp(bogus="x"), ERROR, R1, "agent: unexpected keyword; server ignores the parameter"),
    ("q-number", {"q": 123}, ERROR, [], "agent: quote_plus(123) raises; server: q '123' -> no hit"),
    ("q-null", {"q": None}, ERROR, [], "agent: quote_plus(None) raises; server: q not sent -> []"),
]

VIEW = [
    ("two-ids", {"product_ids": "p01,p02"}, ["p01", "p02"], None, "information(): one doc per id, in order"),
    ("order-kept", {"product_ids": "p02,p01"}, ["p02", "p01"], None, "in the order asked"),
    ("unknown-id-left-out", {"product_ids": "p01,zzz"}, ["p01"], None, "searcher.doc() None -> skipped"),
    ("space-not-stripped", {"product_ids": "p01, p02"}, ["p01"], None, "' p02' is no docid"),
    ("duplicates-kept", {"product_ids": "p01,p01"}, ["p01", "p01"], None, "no dedupe"),
    ("empty", {"product_ids": ""}, [], None, "[''] -> nothing found"),
    ("commas-only", {"product_ids": ","}, [], None, "['', ''] -> nothing found"),
    ("no-count-limit", {"product_ids": ",".join(r[0] for r in _ROWS * 2)}, [r[0] for r in _ROWS * 2], None,
     "no limit on ids"),
    ("json-list", {"product_ids": ["p02", "p01"]}, ["p02"], None, "repeated parameter; args.get -> first"),
    ("null", {"product_ids": None}, [], E500, "not sent: None.split raises (500); agent []"),
    ("missing", {}, ERROR, E500, "agent: missing argument; server: None.split raises"),
]


@pytest.fixture(scope="module")
def arena():
    cat = _catalogue()
    with running_server(cat) as url:
        yield cat, url


def _agent_query(args: dict, page_default: bool) -> str:
    """The query string ORO's reference agent sends (agent.find_product + ProxyClient._build_url)."""
    params = dict(args)
    if page_default and "page" not in params:
        params["page"] = 1
    return urllib.parse.urlencode({k: v for k, v in params.items() if v is not None}, doseq=True)


def _get(url: str) -> tuple[int, object]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _ids(result: object, fields: set[str]) -> object:
    if isinstance(result, str):
        assert result.startswith("Error"), result
        return ERROR
    assert isinstance(result, list), result
    for item in result:  # nothing but the product fields: no warning or note on an ignored argument
        assert set(item) == fields, item
    return [item["product_id"] for item in result]


SEARCH_KEYS = {"product_id", "shop_id", "title", "price", "service", "sold_count"}


@pytest.mark.parametrize("mode", ["tool", "tool_over_http", "http"])
@pytest.mark.parametrize(("args", "tool_expect", "http_expect"),
                         [pytest.param(a, t, h, id=i) for i, a, t, h, _ in FIND])
def test_find_product_answers_as_oro(arena, mode, args, tool_expect, http_expect):
    cat, url = arena
    if mode == "http":
        status, body = _get(f"{url}/find_product?{_agent_query(args, page_default=True)}")
        expect = tool_expect if http_expect is None else http_expect
        if expect == E500:
            assert status == 500
            return
        assert status == 200, body
        got = _ids(body, SEARCH_KEYS)
        assert got == ([] if expect == ERROR else expect)
        return
    env = InProcessEnv(cat) if mode == "tool" else HttpEnv(url, timeout=10)
    assert _ids(execute_tool(env, "find_product", args), SEARCH_KEYS) == tool_expect


@pytest.mark.parametrize("mode", ["tool", "tool_over_http", "http"])
@pytest.mark.parametrize(("args", "tool_expect", "http_expect"),
                         [pytest.param(a, t, h, id=i) for i, a, t, h, _ in VIEW])
def test_view_product_information_answers_as_oro(arena, mode, args, tool_expect, http_expect):
    cat, url = arena
    keys = set(VIEW_FIELDS)  # our view's field set (ORO's is smaller; docs/oro-server-parity.md)
    if mode == "http":
        status, body = _get(f"{url}/view_product_information?{_agent_query(args, page_default=False)}")
        expect = tool_expect if http_expect is None else http_expect
        if expect == E500:
            assert status == 500
            return
        assert status == 200
        assert _ids(body, keys) == expect
        return
    env = InProcessEnv(cat) if mode == "tool" else HttpEnv(url, timeout=10)
    assert _ids(execute_tool(env, "view_product_information", args), keys) == tool_expect


# Raw requests no tool call produces: ORO's server answers them from request.args alone.
RAW = [
    ("/find_product?q=dental+elastics", 200, [], "process_page(None) -> []: the server has no page default"),
    ("/find_product?q=dental+elastics&page=", 200, [], "process_page('') -> []"),
    ("/find_product?q=dental+elastics&page=1&page=2", 200, R1, "args.get: first of a repeated parameter"),
    ("/find_product?q=dental+elastics&page=2&page=1", 200, P2, "args.get: first"),
    ("/find_product?q=dental+elastics&page=1&service=official&service=COD", 200, OFFICIAL, "args.get: first"),
    ("/find_product?q=dental+elastics&page=1&price=10-50&price=100-", 200,
     ["p02", "p03", "p04", "p05", "p06"], "args.get: first"),
    ("/find_product?page=1", 200, [], "sanitize_query(None) -> '' -> []"),
    ("/find_product?q=dental%20elastics&page=%C2%B2", 500, None, "int('\u00b2') raises"),
    ("/search/find_product?q=dental+elastics&page=1", 200, R1, "ORO's proxy prefix /search"),
    ("/view_product_information", 500, None, "None.split raises"),
    ("/view_product_information?product_ids=", 200, [], "[''] -> nothing found"),
    ("/get_product_raw?product_ids=p02,zzz,p01", 200, ["p02", "p01"], "get_product_raw: full docs, unknown skipped"),
    ("/get_product_raw", 200, [], "product_ids defaults to ''"),
]


@pytest.mark.parametrize(("path", "status", "ids"), [pytest.param(p, s, i, id=p) for p, s, i, _ in RAW])
def test_raw_requests_answer_as_oro(arena, path, status, ids):
    cat, url = arena
    got_status, body = _get(url + path)
    assert got_status == status, body
    if ids is None:
        return
    assert [item["product_id"] for item in body] == ids
    if path.startswith("/get_product_raw") and body:
        assert body[0] == cat.by_id[ids[0]]  # the whole document, as ORO's scoring endpoint gives


def test_index_lists_the_endpoints(arena):
    _, url = arena
    status, body = _get(url + "/")
    assert status == 200
    assert body == {"/find_product": "q,page,shop_id,price,sort,service", "/view_product_information": "product_ids"}
