"""BM25 product search with ShoppingBench's ``find_product`` semantics.

Indexed text: title + SKU option values + attribute values (lower-cased ``\\w+`` tokens).
BM25 (Lucene idf ``log(1 + (N - df + 0.5) / (df + 0.5))``, k1 = 1.2, b = 0.75; each distinct
query term counted once). Filters: ``shop_id``, ``price`` ("lo-hi" inclusive, "lo-", "-hi"),
``service`` ("a,b": the product must offer all). Only documents with a positive score are
hits. Ranking ties break by ``product_id`` (string order). The first 50 hits are then ordered
by ``sort`` (priceasc | pricedesc | order = sold_count desc | default = BM25; stable) and
paged by 10 (pages 1-5).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
from scipy import sparse

MAX_HITS = 50
PAGE_SIZE = 10
MAX_PAGE = MAX_HITS // PAGE_SIZE
SORTS = ("default", "priceasc", "pricedesc", "order")
SERVICES = ("official", "freeShipping", "COD", "flashsale")
_SERVICE_BIT = {s.lower(): 1 << i for i, s in enumerate(SERVICES)}
_TOKEN_RE = re.compile(r"\w+", re.UNICODE)


def tokenize(text: str) -> list[str]:
    return _TOKEN_RE.findall(text.lower())


def product_text(product: dict) -> str:
    parts = [str(product.get("title") or "")]
    for sku in (product.get("sku_options") or {}).values():
        if isinstance(sku, dict):
            parts.extend(str(v) for v in sku.values())
    for values in (product.get("attributes") or {}).values():
        if isinstance(values, list):
            parts.extend(str(v) for v in values)
        else:
            parts.append(str(values))
    return " ".join(parts)


def parse_price_range(price: str | None) -> tuple[float | None, float | None]:
    """``"lo-hi"`` / ``"lo-"`` / ``"-hi"`` -> (lo, hi); raises ValueError on anything else."""
    if price is None or str(price).strip() == "":
        return None, None
    text = str(price).strip().replace(" ", "")
    if "-" not in text:
        raise ValueError(f"price must look like 'lo-hi' or 'lo-', got {price!r}")
    lo_s, hi_s = text.split("-", 1)
    try:
        lo = float(lo_s) if lo_s else None
        hi = float(hi_s) if hi_s else None
    except ValueError as exc:
        raise ValueError(f"price bounds must be numbers, got {price!r}") from exc
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"price lower bound above upper bound in {price!r}")
    return lo, hi


def parse_services(service: str | Sequence[str] | None) -> list[str]:
    if service is None:
        return []
    items = service.split(",") if isinstance(service, str) else list(service)
    out = []
    for s in items:
        s = str(s).strip()
        if not s:
            continue
        if s.lower() not in _SERVICE_BIT:
            raise ValueError(f"unknown service {s!r}; expected a subset of {','.join(SERVICES)}")
        out.append(s)
    return out


def service_mask(services: Sequence[str]) -> int:
    return sum(_SERVICE_BIT.get(str(s).lower(), 0) for s in set(services))


class SearchIndex:
    """BM25 index over a fixed product list (positions are indices into that list)."""

    def __init__(self, products: Sequence[dict], k1: float = 1.2, b: float = 0.75) -> None:
        n = len(products)
        self.n_docs = n
        vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        tfs: list[int] = []
        lengths = np.zeros(n, dtype=np.float64)
        for i, p in enumerate(products):
            toks = tokenize(product_text(p))
            lengths[i] = len(toks)
            for tok, tf in Counter(toks).items():
                j = vocab.get(tok)
                if j is None:
                    j = vocab[tok] = len(vocab)
                rows.append(i)
                cols.append(j)
                tfs.append(tf)
        self.vocab = vocab
        row_a = np.asarray(rows, dtype=np.int64)
        col_a = np.asarray(cols, dtype=np.int64)
        tf_a = np.asarray(tfs, dtype=np.float64)
        df = np.bincount(col_a, minlength=len(vocab)).astype(np.float64)
        idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        avgdl = float(lengths.mean()) if n else 1.0
        norm = k1 * (1.0 - b + b * lengths[row_a] / (avgdl or 1.0))
        weights = idf[col_a] * tf_a * (k1 + 1.0) / (tf_a + norm)
        self._matrix = sparse.csc_matrix((weights, (row_a, col_a)), shape=(n, max(len(vocab), 1)))
        self.price = np.asarray([float(p.get("price") or 0.0) for p in products], dtype=np.float64)
        self.sold = np.asarray([int(p.get("sold_count") or 0) for p in products], dtype=np.int64)
        self.services = np.asarray([service_mask(p.get("service") or []) for p in products], dtype=np.int64)
        shop_codes: dict[str, int] = {}
        self.shop = np.asarray(
            [shop_codes.setdefault(str(p.get("shop_id")), len(shop_codes)) for p in products], dtype=np.int64
        )
        self._shop_codes = shop_codes
        ids = [str(p.get("product_id")) for p in products]
        order = sorted(range(n), key=ids.__getitem__)
        self._id_rank = np.empty(n, dtype=np.int64)
        self._id_rank[order] = np.arange(n)

    def scores(self, q: str) -> np.ndarray:
        cols = sorted({self.vocab[t] for t in tokenize(q) if t in self.vocab})
        if not cols or self.n_docs == 0:
            return np.zeros(self.n_docs)
        return np.asarray(self._matrix[:, cols].sum(axis=1)).reshape(-1)

    def search(
        self,
        q: str,
        *,
        shop_id: str | None = None,
        price: str | None = None,
        service: str | Sequence[str] | None = None,
        sort: str | None = "default",
        limit: int = MAX_HITS,
    ) -> list[int]:
        """Positions of the first ``limit`` hits, ordered by ``sort``. Raises ValueError on bad filters."""
        for name, value in (("sort", sort), ("price", price), ("shop_id", shop_id)):
            if value is not None and (not isinstance(value, str | int) or isinstance(value, bool)
                                      or (name != "shop_id" and not isinstance(value, str))):
                raise ValueError(f"{name} must be a string, got {value!r}")
        sort = (sort or "default").strip().lower()
        if sort not in SORTS:
            raise ValueError(f"sort must be one of {', '.join(SORTS)}, got {sort!r}")
        lo, hi = parse_price_range(price)
        required = service_mask(parse_services(service))
        scores = self.scores(q or "")
        mask = scores > 0
        if shop_id not in (None, ""):
            code = self._shop_codes.get(str(shop_id).strip())
            if code is None:
                return []
            mask &= self.shop == code
        if lo is not None:
            mask &= self.price >= lo
        if hi is not None:
            mask &= self.price <= hi
        if required:
            mask &= (self.services & required) == required
        idx = np.nonzero(mask)[0]
        if idx.size == 0:
            return []
        order = np.lexsort((self._id_rank[idx], -scores[idx]))
        top = idx[order[:limit]]
        if sort == "priceasc":
            top = top[np.argsort(self.price[top], kind="stable")]
        elif sort == "pricedesc":
            top = top[np.argsort(-self.price[top], kind="stable")]
        elif sort == "order":
            top = top[np.argsort(-self.sold[top], kind="stable")]
        return [int(i) for i in top]


def page_slice(hits: list[int], page: int) -> list[int]:
    if not isinstance(page, int) or isinstance(page, bool) or not 1 <= page <= MAX_PAGE:
        raise ValueError(f"page must be an integer from 1 to {MAX_PAGE}, got {page!r}")
    start = (page - 1) * PAGE_SIZE
    return hits[start : start + PAGE_SIZE]


def idf_of(index: SearchIndex, term: str) -> float:
    """Idf of one term (for tests and diagnostics)."""
    j = index.vocab.get(term.lower())
    if j is None:
        return 0.0
    df = index._matrix[:, j].nnz
    return math.log(1.0 + (index.n_docs - df + 0.5) / (df + 0.5))
