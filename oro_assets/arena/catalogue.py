"""Product catalogue with the real ShoppingBench field set (docs/architecture.md, "Catalogue products")."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from oro_assets import jsonio
from oro_assets.arena.search import SERVICES, SearchIndex

PRODUCT_FIELDS = (
    "product_id",
    "shop_id",
    "brand",
    "category",
    "title",
    "short_description",
    "description",
    "specification",
    "price",
    "sold_count",
    "sku_options",
    "attributes",
    "service",
)


class CatalogueError(ValueError):
    pass


def validate_product(p: dict) -> None:
    if not isinstance(p, dict):
        raise CatalogueError(f"product is {type(p).__name__}, expected an object")
    missing = [f for f in ("product_id", "shop_id", "title", "price") if f not in p]
    if missing:
        raise CatalogueError(f"product {p.get('product_id')!r} lacks {', '.join(missing)}")
    if not isinstance(p["product_id"], str) or not p["product_id"]:
        raise CatalogueError(f"product_id must be a non-empty string, got {p['product_id']!r}")
    if not isinstance(p["price"], int | float):
        raise CatalogueError(f"product {p['product_id']}: price must be a number")
    bad = [s for s in p.get("service") or [] if s not in SERVICES]
    if bad:
        raise CatalogueError(f"product {p['product_id']}: unknown service {bad}")


class Catalogue:
    """Products in a fixed order plus a dict by id; the BM25 index is built on first search."""

    def __init__(self, products: Iterable[dict]) -> None:
        self.products: list[dict] = []
        self.by_id: dict[str, dict] = {}
        for p in products:
            validate_product(p)
            if p["product_id"] in self.by_id:
                raise CatalogueError(f"duplicate product_id {p['product_id']}")
            self.products.append(p)
            self.by_id[p["product_id"]] = p
        self._index: SearchIndex | None = None

    def __len__(self) -> int:
        return len(self.products)

    def __contains__(self, product_id: object) -> bool:
        return product_id in self.by_id

    def __iter__(self) -> Iterator[dict]:
        return iter(self.products)

    def get(self, product_id: str) -> dict | None:
        return self.by_id.get(str(product_id).strip())

    @property
    def index(self) -> SearchIndex:
        if self._index is None:
            self._index = SearchIndex(self.products)
        return self._index

    def shop_products(self, shop_id: str) -> list[dict]:
        return [p for p in self.products if p["shop_id"] == shop_id]

    def to_jsonl(self, path: str | Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        with tmp.open("wb") as fh:
            for p in self.products:
                fh.write(jsonio.dumps_bytes(p) + b"\n")
        tmp.replace(path)

    @classmethod
    def from_jsonl(cls, path: str | Path) -> Catalogue:
        path = Path(path)
        products = []
        with path.open("rb") as fh:
            for n, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    products.append(jsonio.loads(line))
                except jsonio.JSONDecodeError as exc:
                    raise CatalogueError(f"{path}:{n}: not valid JSON: {exc}") from exc
        try:
            return cls(products)
        except CatalogueError as exc:
            raise CatalogueError(f"{path}: {exc}") from exc
