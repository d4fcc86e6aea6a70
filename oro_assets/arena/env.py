"""Shopping environments: one protocol, an in-process implementation and an HTTP client.

HTTP request shape (mirrors ShoppingBench's search server; ORO proxies it under ``/search``):
``GET {base_url}/find_product?q=..&page=1&shop_id=..&price=lo-hi&sort=default&service=a,b``,
``GET {base_url}/view_product_information?product_ids=a,b``,
``GET {base_url}/get_product_raw?product_id=X``; the server also accepts POST with the same
parameters as a JSON object. Responses are JSON; a bad request answers 400 with
``{"error": "..."}`` (the client raises ``ValueError`` with that message), an unknown raw
product answers 404 (``get_product_raw`` returns ``None``).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Protocol, runtime_checkable

from oro_assets.arena.catalogue import Catalogue
from oro_assets.arena.scoring import split_ids
from oro_assets.arena.search import page_slice

# Search results put product_id after the fields an agent must check (title, price, service):
# a from-scratch tiny model learned to pick ids only in this order (stack notes).
SEARCH_FIELDS = ("title", "price", "service", "sold_count", "shop_id", "product_id")
VIEW_FIELDS = (
    "title",
    "brand",
    "category",
    "price",
    "service",
    "shop_id",
    "short_description",
    "description",
    "specification",
    "sku_options",
    "attributes",
    "sold_count",
    "product_id",
)
MAX_VIEW_IDS = 20


@runtime_checkable
class ShoppingEnv(Protocol):
    def find_product(
        self,
        q: str,
        page: int = 1,
        shop_id: str | None = None,
        price: str | None = None,
        sort: str = "default",
        service: str | None = None,
    ) -> list[dict]: ...

    def view_product_information(self, product_ids: str) -> list[dict]: ...

    def get_product_raw(self, product_id: str) -> dict | None: ...


def _coerce_page(page: Any) -> int:
    """A page given as "2", 2.0 or "2.0" (query strings, JSON numbers) is page 2; anything else is
    passed on for ``page_slice`` to reject with a clear message."""
    if isinstance(page, str):
        try:
            page = float(page.strip())
        except ValueError:
            return page
    if isinstance(page, float) and page.is_integer():
        return int(page)
    return page


class InProcessEnv:
    """The embedded catalogue as an environment (no network)."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue

    def find_product(
        self,
        q: str,
        page: int = 1,
        shop_id: str | None = None,
        price: str | None = None,
        sort: str = "default",
        service: str | None = None,
    ) -> list[dict]:
        if not isinstance(q, str) or not q.strip():
            raise ValueError("q must be a non-empty search string")
        page = _coerce_page(page if page is not None else 1)
        hits = self.catalogue.index.search(q, shop_id=shop_id, price=price, service=service, sort=sort)
        products = self.catalogue.products
        return [{f: products[i].get(f) for f in SEARCH_FIELDS} for i in page_slice(hits, page)]

    def view_product_information(self, product_ids: str) -> list[dict]:
        ids = split_ids(product_ids)
        if not ids:
            raise ValueError("product_ids must name at least one product id, e.g. '123,456'")
        if len(ids) > MAX_VIEW_IDS:
            raise ValueError(f"at most {MAX_VIEW_IDS} product ids per call")
        out = []
        for pid in ids:
            p = self.catalogue.get(pid)
            if p is None:
                out.append({"product_id": pid, "error": "product not found"})
            else:
                out.append({f: p.get(f) for f in VIEW_FIELDS})
        return out

    def get_product_raw(self, product_id: str) -> dict | None:
        p = self.catalogue.get(str(product_id))
        return dict(p) if p is not None else None


class HttpEnv:
    """Client for a ShoppingBench/ORO search server or ``oro-assets arena serve`` (stdlib urllib)."""

    def __init__(self, base_url: str, timeout: float = 30.0) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def _get(self, path: str, params: dict[str, Any]) -> Any:
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        url = f"{self.base_url}/{path}?{query}"
        try:
            with urllib.request.urlopen(url, timeout=self.timeout) as resp:
                return json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            body = exc.read().decode("utf-8", "replace")
            try:
                message = json.loads(body).get("error", body)
            except (ValueError, AttributeError):
                message = body
            if exc.code == 404 and path == "get_product_raw":
                return None
            if 400 <= exc.code < 500:
                raise ValueError(message) from exc
            raise RuntimeError(f"search server error {exc.code} on /{path}: {message[:200]}") from exc

    def find_product(
        self,
        q: str,
        page: int = 1,
        shop_id: str | None = None,
        price: str | None = None,
        sort: str = "default",
        service: str | None = None,
    ) -> list[dict]:
        params = {"q": q, "page": page, "shop_id": shop_id, "price": price, "sort": sort, "service": service}
        return self._get("find_product", params)

    def view_product_information(self, product_ids: str) -> list[dict]:
        return self._get("view_product_information", {"product_ids": product_ids})

    def get_product_raw(self, product_id: str) -> dict | None:
        return self._get("get_product_raw", {"product_id": product_id})
