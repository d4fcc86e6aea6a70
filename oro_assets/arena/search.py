"""BM25 product search that reads its arguments as ORO's search server does.

Indexed text: title + SKU option values + attribute values (lower-cased ``\\w+`` tokens).
BM25 (Lucene idf ``log(1 + (N - df + 0.5) / (df + 0.5))``, k1 = 1.2, b = 0.75; each distinct
query term counted once). Filters: ``shop_id`` (exact), ``price`` ("lo-hi" inclusive, "lo-",
"-hi"), ``service`` ("a,b": the product must offer all). Only documents with a positive score
are hits. Ranking ties break by ``product_id`` (string order). The first 50 hits are then
ordered by ``sort`` (priceasc | pricedesc | order = sold_count desc; anything else = BM25;
stable) and paged by 10 (pages 1-5).

Arguments are read as ORO's server reads them (``process_*`` below; docs/oro-server-parity.md):
a filter it cannot read is ignored, a page outside 1-5 or an empty query gives ``[]``; nothing
raises except the one input that makes ORO's server itself fail (:class:`ServerError`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import sparse

MAX_HITS = 50
PAGE_SIZE = 10
MAX_PAGE = MAX_HITS // PAGE_SIZE
SORTS = ("default", "priceasc", "pricedesc", "order")  # what the tool schema offers
SERVER_SORTS = ("order", "priceasc", "pricedesc")  # what ORO's server applies ("default" and the rest: BM25)
SERVICES = ("official", "freeShipping", "COD", "flashsale")
_SERVICE_BIT = {s: 1 << i for i, s in enumerate(SERVICES)}
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
    """Strict ``"lo-hi"`` / ``"lo-"`` / ``"-hi"`` -> (lo, hi) for our own ``check_product_match``;
    raises ValueError on anything else. ``find_product`` reads prices with :func:`process_price`."""
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
    """Strict service list for our own ``check_product_match`` (``find_product`` uses :func:`process_service`)."""
    if service is None:
        return []
    items = service.split(",") if isinstance(service, str) else list(service)
    out = []
    for s in items:
        s = str(s).strip()
        if not s:
            continue
        if s.lower() not in {x.lower() for x in SERVICES}:
            raise ValueError(f"unknown service {s!r}; expected a subset of {','.join(SERVICES)}")
        out.append(s)
    return out


# --- ORO's search server (src/search_engine/server.py, ORO-AI/oro a6b1cf3; docs/oro-server-parity.md) ---
# Every argument reaches that server as a query-string value (a string, or absent); an argument it
# cannot read is ignored without a word, an unusable page or an empty query gives [].


class ServerError(Exception):
    """An input on which ORO's search server itself fails (HTTP 500); ORO's reference agent
    turns the failed request into an empty result."""


def query_value(value: Any) -> str | None:
    """The string ORO's server reads for an argument an agent sent: None is not sent; a list (or
    object) becomes one query parameter per element, of which the server reads the first; any
    other value is sent as ``str(value)`` (so 2 -> "2", 1.0 -> "1.0", True -> "True")."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list | tuple | dict):
        for item in value:
            return item if isinstance(item, str) else str(item)
        return None
    return str(value)


def process_page(page: Any) -> int | None:
    """Page 1-5 given as ASCII-or-Unicode decimal digits; anything else -> None (an empty result)."""
    text = query_value(page)
    if not text or not text.isdigit():
        return None
    try:
        n = int(text)
    except ValueError as exc:  # str.isdigit admits digits int() refuses ("²"): ORO's server fails there
        raise ServerError(f"page {text!r} is digits int() cannot read") from exc
    return n if 1 <= n <= MAX_PAGE else None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def process_price(price: Any) -> tuple[float | None, float | None]:
    """Exactly one "-" splits the bounds; each side that float() reads is a bound, any other side
    (empty, text) is no bound; no "-" or more than one -> no price filter."""
    text = query_value(price)
    if not text or "-" not in text:
        return None, None
    parts = text.split("-")
    if len(parts) != 2:
        return None, None
    return _number(parts[0]), _number(parts[1])


def process_sort(sort: Any) -> str | None:
    text = query_value(sort)
    return text if text in SERVER_SORTS else None


def process_service(service: Any) -> list[str]:
    """Comma-separated, exact (case-sensitive, unstripped) service names; unknown ones are dropped."""
    text = query_value(service)
    out: list[str] = []
    for name in (text or "").split(","):
        if name in _SERVICE_BIT and name not in out:
            out.append(name)
    return out


_LUCENE_SPECIALS = str.maketrans({c: " " for c in '+-&|!(){}[]^"~*?:\\/'})


def sanitize_query(q: Any) -> str:
    """Lucene's query-syntax characters become spaces, then the ends are stripped."""
    text = query_value(q)
    return text.translate(_LUCENE_SPECIALS).strip() if text else ""


def service_mask(services: Sequence[str]) -> int:
    return sum(_SERVICE_BIT.get(str(s), 0) for s in set(services))


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
        q: Any,
        *,
        shop_id: Any = None,
        price: Any = None,
        service: Any = None,
        sort: Any = None,
        limit: int = MAX_HITS,
    ) -> list[int]:
        """Positions of the first ``limit`` hits, ordered by ``sort``; arguments read as ORO's server reads them."""
        query = sanitize_query(q)
        if not query or self.n_docs == 0:
            return []
        lo, hi = process_price(price)
        required = service_mask(process_service(service))
        order_by = process_sort(sort)
        scores = self.scores(query)
        mask = scores > 0
        shop = query_value(shop_id)
        if shop:
            code = self._shop_codes.get(shop)
            if code is None:
                return []
            mask &= self.shop == code
        # "drop when price < lo / > hi", so a NaN bound (float("nan")) drops nothing, as on ORO
        if lo is not None:
            mask &= ~(self.price < lo)
        if hi is not None:
            mask &= ~(self.price > hi)
        if required:
            mask &= (self.services & required) == required
        idx = np.nonzero(mask)[0]
        if idx.size == 0:
            return []
        order = np.lexsort((self._id_rank[idx], -scores[idx]))
        top = idx[order[:limit]]
        if order_by == "priceasc":
            top = top[np.argsort(self.price[top], kind="stable")]
        elif order_by == "pricedesc":
            top = top[np.argsort(-self.price[top], kind="stable")]
        elif order_by == "order":
            top = top[np.argsort(-self.sold[top], kind="stable")]
        return [int(i) for i in top]

    def find_product(
        self,
        q: Any,
        page: Any = 1,
        *,
        shop_id: Any = None,
        price: Any = None,
        sort: Any = None,
        service: Any = None,
    ) -> list[int]:
        """Positions on one result page, as ORO's ``/find_product`` answers: page first (outside
        1-5 -> []), then the query (empty after sanitising -> []), then filters, sort, slice."""
        n = process_page(page)
        if n is None:
            return []
        hits = self.search(q, shop_id=shop_id, price=price, service=service, sort=sort)
        return hits[(n - 1) * PAGE_SIZE : n * PAGE_SIZE]
