"""Shopping environments: one protocol, an in-process implementation and an HTTP client.

HTTP request shape (mirrors ShoppingBench's search server; ORO proxies it under ``/search``):
``GET {base_url}/find_product?q=..&page=1&shop_id=..&price=lo-hi&sort=default&service=a,b``,
``GET {base_url}/view_product_information?product_ids=a,b``,
``GET {base_url}/get_product_raw?product_id=X``; the server also accepts POST with the same
parameters as a JSON object. Responses are JSON. Arguments are read as ORO's search server
reads them (``arena.search``, docs/oro-server-parity.md): what it cannot read is ignored, a bad
page or an empty query is ``[]``, unknown product ids are left out; a 4xx answer makes the client
raise ``ValueError``, a 5xx ``RuntimeError``; an unknown raw product answers 404
(``get_product_raw`` returns ``None``).
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Protocol, runtime_checkable

from oro_assets import jsonio
from oro_assets.arena.catalogue import Catalogue
from oro_assets.arena.search import ServerError, query_value
from oro_assets.toolcalls import FIND_PRODUCT, VIEW_PRODUCT_INFORMATION

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
        positions = self.catalogue.index.find_product(q, page, shop_id=shop_id, price=price, sort=sort,
                                                      service=service)
        products = self.catalogue.products
        return [{f: products[i].get(f) for f in SEARCH_FIELDS} for i in positions]

    def view_product_information(self, product_ids: str) -> list[dict]:
        # as ORO's server: split on "," only (no strip, no dedupe), unknown ids left out without a word
        text = query_value(product_ids)
        if text is None:
            raise ServerError("view_product_information without product_ids")
        found = (self.catalogue.by_id.get(pid) for pid in text.split(","))
        return [{f: p.get(f) for f in VIEW_FIELDS} for p in found if p is not None]

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
                return jsonio.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            body = exc.read().decode("utf-8", "replace")
            try:
                message = jsonio.loads(body).get("error", body)
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
        return self._get(FIND_PRODUCT, params)

    def view_product_information(self, product_ids: str) -> list[dict]:
        return self._get(VIEW_PRODUCT_INFORMATION, {"product_ids": product_ids})

    def get_product_raw(self, product_id: str) -> dict | None:
        return self._get("get_product_raw", {"product_id": product_id})
