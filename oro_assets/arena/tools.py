"""Tool schemas and the dispatcher the episode loop calls.

The four ShoppingBench tools plus the three extras of ORO's reference agent. The extras'
exact upstream signatures are not public in our sources; ours are built over the same
environment calls (documented per schema) so that they work against any ``ShoppingEnv``.

``find_product`` and ``view_product_information`` answer as ORO's search server does on every
input (docs/oro-server-parity.md): an argument it cannot read is ignored without a word, a bad
page is ``[]``; only a call ORO's reference agent could not make (no ``q``, an unknown argument,
a ``q`` that is not a string) is an ``Error: ...`` string.
"""

from __future__ import annotations

from typing import Any

from oro_assets import jsonio
from oro_assets.arena.env import ShoppingEnv
from oro_assets.arena.scoring import budget_ok, price_after_voucher, split_ids, voucher_applies
from oro_assets.arena.search import (
    SERVICES,
    ServerError,
    parse_price_range,
    parse_services,
    process_page,
    query_value,
)
from oro_assets.toolcalls import (
    CALCULATE_VOUCHER,
    CHECK_PRODUCT_MATCH,
    FIND_PRODUCT,
    FIND_PRODUCTS_IN_SAME_SHOP,
    RECOMMEND_PRODUCT,
    TERMINATE,
    VIEW_PRODUCT_INFORMATION,
)


def _fn(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


_S = {"type": "string"}
TOOL_SCHEMAS: list[dict] = [
    _fn(
        FIND_PRODUCT,
        "Search products by keywords (BM25 over title, SKU options and attributes). Returns at most 10 "
        "products per page (title, price, service, sold_count, shop_id, product_id) out of the first 50 hits.",
        {
            "q": {"type": "string", "description": "search keywords"},
            "page": {"type": "integer", "description": "result page, 1 to 5", "default": 1},
            "shop_id": {"type": "string", "description": "only products of this shop"},
            "price": {"type": "string", "description": "price range 'lo-hi' or 'lo-' (e.g. '120-340', '80-')"},
            "sort": {"type": "string", "enum": ["default", "priceasc", "pricedesc", "order"],
                     "description": "default = relevance, order = best-selling first"},
            "service": {"type": "string",
                        "description": f"comma-separated required services from {', '.join(SERVICES)}"},
        },
        ["q"],
    ),
    _fn(
        VIEW_PRODUCT_INFORMATION,
        "Show details of products: descriptions, SKU options, attributes, services, price, shop.",
        {"product_ids": {"type": "string", "description": "comma-separated product ids"}},
        ["product_ids"],
    ),
    _fn(
        RECOMMEND_PRODUCT,
        "Recommend products to the user (call once, with the final choice, in the order the query asks).",
        {"product_ids": {"type": "string", "description": "comma-separated product ids"}},
        ["product_ids"],
    ),
    _fn(
        TERMINATE,
        "End the session.",
        {"status": {"type": "string", "enum": ["success", "failure"]}},
        ["status"],
    ),
    _fn(
        CHECK_PRODUCT_MATCH,
        "Check one product against requirements: keywords in its title/SKU/attributes, price range, "
        "services, SKU options and attributes. Returns per-requirement results and whether all match.",
        {
            "product_id": _S,
            "keywords": {"type": "string", "description": "words the title should contain"},
            "price": {"type": "string", "description": "'lo-hi' or 'lo-'"},
            "service": {"type": "string", "description": "comma-separated services"},
            "sku_options": {"type": "string", "description": "'key:value;key:value' that one SKU must carry"},
            "attributes": {"type": "string", "description": "'key:value;key:value' required attributes"},
        },
        ["product_id"],
    ),
    _fn(
        FIND_PRODUCTS_IN_SAME_SHOP,
        "Search within the shop of a given product (same filters as find_product).",
        {
            "product_id": {"type": "string", "description": "a product whose shop to search"},
            "q": _S,
            "price": _S,
            "service": _S,
            "sort": _S,
            "page": {"type": "integer", "default": 1},
        },
        ["product_id", "q"],
    ),
    _fn(
        CALCULATE_VOUCHER,
        "Total price of products and the price after a voucher; says whether the budget is met.",
        {
            "product_ids": {"type": "string", "description": "comma-separated product ids"},
            "budget": {"type": "number"},
            "voucher_type": {"type": "string", "enum": ["platform", "shop"]},
            "threshold": {"type": "number"},
            "discount_type": {"type": "string", "enum": ["fixed", "percentage"]},
            "face_value": {"type": "number", "description": "fixed discount amount"},
            "discount": {"type": "number", "description": "percentage as a fraction, e.g. 0.2"},
            "cap": {"type": "number", "description": "largest discount of a percentage voucher"},
        },
        ["product_ids"],
    ),
]
CORE_TOOL_NAMES: tuple[str, ...] = (FIND_PRODUCT, VIEW_PRODUCT_INFORMATION, RECOMMEND_PRODUCT, TERMINATE)
EXTRA_TOOL_NAMES: tuple[str, ...] = (CHECK_PRODUCT_MATCH, FIND_PRODUCTS_IN_SAME_SHOP, CALCULATE_VOUCHER)
TOOL_NAMES = CORE_TOOL_NAMES + EXTRA_TOOL_NAMES
CORE_TOOL_SCHEMAS: list[dict] = [s for s in TOOL_SCHEMAS if s["function"]["name"] in CORE_TOOL_NAMES]

RECOMMEND_RESULT = "The products have been recommended to the user."
TERMINATE_RESULT = "The interaction has been terminated."


def _pairs(text: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in (text or "").split(";"):
        if not part.strip():
            continue
        if ":" not in part:
            raise ValueError(f"expected 'key:value' pairs separated by ';', got {part!r}")
        k, v = part.split(":", 1)
        out[k.strip().lower()] = v.strip().lower()
    return out


def check_product_match(env: ShoppingEnv, product_id: str, keywords: str | None = None, price: str | None = None,
                        service: str | None = None, sku_options: str | None = None,
                        attributes: str | None = None) -> dict:
    product = env.get_product_raw(str(product_id).strip())
    if product is None:
        return {"product_id": product_id, "error": "product not found"}
    checks: dict[str, Any] = {}
    if keywords:
        from oro_assets.arena.search import product_text, tokenize

        have = set(tokenize(product_text(product)))
        missing = [w for w in tokenize(keywords) if w not in have]
        checks["keywords"] = {"match": not missing, "missing": missing}
    if price:
        lo, hi = parse_price_range(price)
        p = float(product.get("price") or 0.0)
        checks["price"] = {"match": (lo is None or p >= lo) and (hi is None or p <= hi), "price": p}
    if service:
        req = parse_services(service)
        have_s = set(product.get("service") or [])
        checks["service"] = {"match": all(s in have_s for s in req), "service": sorted(have_s)}
    if sku_options:
        req = _pairs(sku_options)
        best = None
        for key, sku in (product.get("sku_options") or {}).items():
            have = {str(k).lower(): str(v).lower() for k, v in sku.items()}
            if all(have.get(k) == v for k, v in req.items()):
                best = key
                break
        checks["sku_options"] = {"match": best is not None, "sku": best}
    if attributes:
        req = _pairs(attributes)
        attrs = {str(k).lower(): [str(v).lower() for v in vs] for k, vs in (product.get("attributes") or {}).items()}
        missing_a = [f"{k}:{v}" for k, v in req.items() if v not in attrs.get(k, [])]
        checks["attributes"] = {"match": not missing_a, "missing": missing_a}
    return {"product_id": product["product_id"], "checks": checks,
            "all_match": all(c["match"] for c in checks.values())}


def find_product(env: ShoppingEnv, q: str, page: Any = 1, shop_id: Any = None, price: Any = None,
                 sort: Any = None, service: Any = None) -> list[dict]:
    """``find_product`` as ORO's reference agent runs it against ORO's server: page 1 unless given;
    every argument sent as the query-string value the server reads (``search.query_value``); what
    the server cannot read it ignores without a word, and where the server itself fails the agent
    gets ``[]``. No warning text: the real arena gives none."""
    values = {k: query_value(v) for k, v in
              {"page": page, "shop_id": shop_id, "price": price, "sort": sort, "service": service}.items()}
    try:
        process_page(values["page"])
    except ServerError:
        return []
    return env.find_product(q=q, **values)


def view_product_information(env: ShoppingEnv, product_ids: Any) -> list[dict]:
    """As ORO's server answers ``/view_product_information``: ids split on "," as given, unknown
    ids left out; ``None`` (not sent) fails on ORO's server, which its reference agent sees as []."""
    text = query_value(product_ids)
    if text is None:
        return []
    return env.view_product_information(text)


def find_products_in_same_shop(env: ShoppingEnv, product_id: str, q: str, price: str | None = None,
                               service: str | None = None, sort: str = "default", page: int = 1) -> Any:
    product = env.get_product_raw(str(product_id).strip())
    if product is None:
        return f"Error: product {product_id} not found"
    return find_product(env, q=str(q), page=page, shop_id=product["shop_id"], price=price, sort=sort, service=service)


def calculate_voucher(env: ShoppingEnv, product_ids: str, budget: float | None = None,
                      voucher_type: str = "platform", threshold: float = 0.0, discount_type: str | None = None,
                      face_value: float | None = None, discount: float | None = None,
                      cap: float | None = None) -> dict:
    ids = split_ids(product_ids)
    if not ids:
        raise ValueError("product_ids must name at least one product")
    products = [env.get_product_raw(pid) for pid in ids]
    missing = [pid for pid, p in zip(ids, products, strict=True) if p is None]
    if missing:
        return {"error": f"products not found: {','.join(missing)}"}
    total = round(sum(float(p["price"]) for p in products), 2)
    n_shops = len({p["shop_id"] for p in products})
    out: dict[str, Any] = {"total": total, "n_shops": n_shops}
    if discount_type:
        if discount_type not in ("fixed", "percentage"):
            raise ValueError("discount_type must be 'fixed' or 'percentage'")
        if voucher_type not in ("platform", "shop"):
            raise ValueError(f"voucher_type must be 'platform' or 'shop', got {voucher_type!r}")
        if discount_type == "percentage" and not (isinstance(discount, int | float) and 0 <= discount <= 1):
            raise ValueError(f"a percentage discount is a fraction from 0 to 1 (0.21 for 21%), got {discount!r}")
        voucher = {"voucher_type": voucher_type, "threshold": threshold, "discount_type": discount_type,
                   "face_value": face_value, "discount": discount, "cap": cap, "budget": budget or 0.0}
        applies = voucher_applies(total, voucher, n_shops)
        out["voucher_applies"] = applies
        out["price_after_voucher"] = round(price_after_voucher(total, voucher), 2) if applies else total
        if budget is not None:
            out["within_budget"] = budget_ok(total, voucher, n_shops)
    elif budget is not None:
        out["within_budget"] = total <= float(budget)
    return out


def execute_tool(env: ShoppingEnv, name: str, arguments: dict | str | None) -> Any:
    """Run one tool call. Bad calls return an ``"Error: ..."`` string; never raises."""
    try:
        if isinstance(arguments, str):
            try:
                arguments = jsonio.loads(arguments) if arguments.strip() else {}
            except jsonio.JSONDecodeError:
                return "Error: arguments are not valid JSON"
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return "Error: arguments must be a JSON object"
        args = dict(arguments)
        if name == FIND_PRODUCT:
            allowed = {"q", "page", "shop_id", "price", "sort", "service"}
            _reject_unknown(args, allowed)
            if "q" not in args:
                return "Error: find_product needs 'q'"
            if not isinstance(args["q"], str):
                return f"Error: q must be a string, got {args['q']!r}"
            return find_product(env, **args)
        if name == VIEW_PRODUCT_INFORMATION:
            _reject_unknown(args, {"product_ids"})
            if "product_ids" not in args:
                return "Error: view_product_information needs 'product_ids'"
            return view_product_information(env, args["product_ids"])
        if name == RECOMMEND_PRODUCT:
            _reject_unknown(args, {"product_ids"})
            if not split_ids(ids_argument(args)):
                return "Error: recommend_product needs product_ids"
            return RECOMMEND_RESULT
        if name == TERMINATE:
            _reject_unknown(args, {"status"})
            if args.get("status") not in ("success", "failure"):
                return f"Error: terminate needs status 'success' or 'failure', got {args.get('status')!r}"
            return TERMINATE_RESULT
        if name == CHECK_PRODUCT_MATCH:
            _reject_unknown(args, {"product_id", "keywords", "price", "service", "sku_options", "attributes"})
            return check_product_match(env, **args)
        if name == FIND_PRODUCTS_IN_SAME_SHOP:
            _reject_unknown(args, {"product_id", "q", "price", "service", "sort", "page"})
            return find_products_in_same_shop(env, **args)
        if name == CALCULATE_VOUCHER:
            _reject_unknown(args, {"product_ids", "budget", "voucher_type", "threshold", "discount_type",
                                   "face_value", "discount", "cap"})
            return calculate_voucher(env, **args)
        return f"Error: unknown tool {name!r}; available: {', '.join(TOOL_NAMES)}"
    except (ValueError, TypeError, KeyError) as exc:
        return f"Error: {exc}"
    except Exception as exc:  # noqa: BLE001 - a tool failure must never crash the episode loop
        return f"Error: {type(exc).__name__}: {exc}"


def ids_argument(args: dict) -> str:
    """A ``recommend_product`` call's ``product_ids`` as one "a,b" string (a list is joined)."""
    ids = args.get("product_ids")
    if isinstance(ids, list):
        return ",".join(str(x) for x in ids)
    if ids is None:
        raise ValueError("missing 'product_ids'")
    if not isinstance(ids, str | int) or isinstance(ids, bool):
        raise ValueError(f"product_ids must be ids like '123,456' or a list of them, got {ids!r}")
    return str(ids)


def _reject_unknown(args: dict, allowed: set[str]) -> None:
    unknown = sorted(set(args) - allowed)
    if unknown:
        raise ValueError(f"unexpected argument(s) {', '.join(unknown)}")
