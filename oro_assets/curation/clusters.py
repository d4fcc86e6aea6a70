"""Leak clusters and the persistent cluster registry (reference §1, §5.5).

A leak cluster groups problems that are variants of one underlying task (paraphrases, reordered
attributes, whitespace/case changes). Two problems are linked when

* their normalised query token *sets* (order-invariant shingles, template words dropped,
  comparators and currencies canonicalised, plural ``s`` stripped) have Jaccard ≥
  ``jaccard_threshold`` - candidates come from datasketch MinHash-LSH, every candidate pair is
  verified with the exact Jaccard so LSH false positives never merge anything, and their *rare*
  tokens (in ≤ ``rare_df`` distinct queries: invented brand words, exact prices) must agree too,
  so "zatax seat cover over 561" never meets "talolun seat cover over 561"; or
* they share any ground-truth product id (when rewards are known).

Links are merged by union-find. Work scales with *unique problems*, never with traces.

The registry is persistent across days (``<state_dir>/leak_clusters/registry.parquet``, written
atomically). A problem, once registered, never moves; a cluster, once created, keeps its id and
its pool for ever. The pool is a stable hash (seeded, fractions configurable) of a key fixed at
creation, so reruns and backfills never move a cluster:

* a cluster with ground-truth ids (problems of the problem pool, registered whole in one batch)
  has id and pool key ``"lc_" + sha256(smallest member key)[:16]``;
* a text-only cluster (problems unknown to the pool, matched by query text, arriving day by day)
  takes both from its *text signature* - the query tokens minus scaffolding words that variants
  add, drop or rephrase (:func:`text_signature`) - so whichever variant of a task arrives first,
  and whatever order days are backfilled in, the cluster gets the same id and pool. Two unlinked
  clusters with one signature share the pool; the later gets a numbered id. A problem with no
  signature (no content tokens) falls back to its key.

New problems linked to one existing cluster join it; linked to
several clusters of one pool they join the smallest id (the clusters stay separate but the pool
is consistent); linked to clusters of *different* pools they are a **leak conflict**: registered
with ``status="leak_conflict"`` and no pool, reported, and their traces quarantined - never
silently resolved. A later problem linked to a conflicted problem inherits its bridged clusters.

Order independence: a problem already registered keeps its cluster and pool, and all variants of
it join the same pool. Which cluster a new problem joins is first-come only where linking is not
transitive (A~B, B~C, A!~C) or where variants differ in more than scaffolding words.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from datasketch import MinHashLSH

from oro_assets import jsonio
from oro_assets.layout import StateLayout


def _words(text: str) -> list[str]:
    return text.split()


POOLS = ("train", "eval", "never_touch")  # what the registry stores per cluster
HELDOUT_SIDES = ("dev", "test")  # an eval cluster's side (:func:`heldout_side`)
PROBLEM_POOLS = ("train", "dev", "test", "heldout", "never_touch")  # what :meth:`Registry.problems_in` accepts
ASSIGNED = "assigned"
CONFLICT = "leak_conflict"
REGISTRY_SCHEMA = pa.schema(
    [
        ("problem_key", pa.string()),
        ("problem_id", pa.string()),
        ("query", pa.string()),
        ("tokens", pa.string()),  # JSON list, sorted
        ("product_ids", pa.string()),  # JSON list, sorted
        ("cluster_id", pa.string()),
        ("pool", pa.string()),
        ("status", pa.string()),
        ("conflict_clusters", pa.string()),  # JSON list of cluster ids bridged (conflicts only)
        ("first_seen", pa.string()),
    ]
)

# Template words that paraphrases swap freely; they carry no identity of the task.
_STOP = frozenset(
    _words(
        """a an the i im i'm me my we our you your us for of to and or with in on at by from as is are be
    that this these those it its can could would will please show find looking look want need get
    some any options option one ones something item items product products buy search searching
    give see like would also which who where what there here have has do does just only
    priced price prices cost costs costing costed pesos peso php p currency budget around about than
    hi hey help recommend recommending suggest me
    store stores shop shops selling sells sell seller following all first second third fourth fifth lastly
    next then additionally also deal deals size sized kind type available having on both each per
    voucher vouchers rules rule applies apply applied valid when total provides provide discount but
    exceeds exceed"""
    )
)
_CANON = {
    "above": "gt",
    "over": "gt",
    "more": "gt",
    "greater": "gt",
    "exceeding": "gt",
    "exceed": "gt",
    "exceeds": "gt",
    "higher": "gt",
    "least": "gt",
    "minimum": "gt",
    "min": "gt",
    "under": "lt",
    "below": "lt",
    "less": "lt",
    "cheaper": "lt",
    "lower": "lt",
    "most": "lt",
    "maximum": "lt",
    "max": "lt",
    "within": "lt",
    "between": "range",
    "range": "range",
}
_NON_WORD = re.compile(r"[^0-9a-z]+")
_ENUMERATOR = re.compile(r"(?m)^\s*\d+\.\s")


def normalise_query(query: str) -> str:
    """Lowercase, NFKC, list enumerators ("1. ") dropped, punctuation and whitespace collapsed."""
    text = unicodedata.normalize("NFKC", str(query or "")).lower()
    text = _ENUMERATOR.sub(" ", text)
    return _NON_WORD.sub(" ", text).strip()


_TOKEN_CACHE: dict[str, str] = {}  # word -> canonical token ("" = stop word)


def _stem(token: str) -> str:
    if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


def query_tokens(query: str) -> list[str]:
    """The order-invariant shingle set of a query: sorted unique content tokens."""
    cache = _TOKEN_CACHE
    words = normalise_query(query).split()
    try:
        out = set(map(cache.__getitem__, words))
    except KeyError:
        for tok in words:
            if tok not in cache:
                cache[tok] = "" if tok in _STOP else (_CANON.get(tok) or _stem(tok))
        out = set(map(cache.__getitem__, words))
    if len(cache) > 1_000_000:
        cache.clear()
    out.discard("")
    return sorted(out)


def reward_product_ids(problem: dict) -> list[str]:
    reward = problem.get("reward")
    items = reward if isinstance(reward, list) else [reward] if isinstance(reward, dict) else []
    return sorted({str(r["product_id"]) for r in items if isinstance(r, dict) and r.get("product_id")})


def problem_key(problem: dict) -> str:
    """``problem_id`` when present, else ``"q_" + sha256(normalised query)[:16]``."""
    pid = problem.get("problem_id")
    if pid:
        return str(pid)
    return "q_" + hashlib.sha256(normalise_query(problem.get("query", "")).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ClusterConfig:
    # 50% held out (eval), split 40/60 into dev and test: the locked test pool needs >= 150 Product problems per
    # world (issue 30). On the embedded worlds (1,500 problems, 557-656 Product) this holds out 163-195 Product
    # problems on test and 91-130 on dev (seeds 15, 1, 2, 3; test 164 and dev 103 on the default seed 15), and
    # trains on 270-313. The earlier 35% (178 held-out Product on seed 15, issue 18) would leave test 110.
    train: float = 0.45
    eval: float = 0.50
    never_touch: float = 0.05
    #: share of the held-out (eval) clusters on the locked ``test`` side; the rest are ``dev``
    test: float = 0.60
    seed: int = 15
    jaccard_threshold: float = 0.7
    lsh_threshold: float = 0.5
    num_perm: int = 64
    #: tokens in at most ``rare_df`` distinct query sets identify a task (invented brand words,
    #: exact prices); linked sets must also share ≥ ``rare_jaccard`` of their rare tokens
    rare_df: int = 8
    rare_jaccard: float = 0.5
    #: tokens in more than this share of distinct queries (and ≥ common_min_df) are left out of
    #: the LSH sketches (kept for the exact check)
    common_share: float = 0.002
    common_min_df: int = 50

    def __post_init__(self) -> None:
        total = self.train + self.eval + self.never_touch
        if min(self.train, self.eval, self.never_touch) < 0 or abs(total - 1.0) > 1e-9:
            raise ValueError(f"pool fractions must be ≥0 and sum to 1, got {total}")
        if not 0 <= self.test <= 1:
            raise ValueError(f"test share of the held-out clusters must be in [0, 1], got {self.test}")
        if not 0 < self.jaccard_threshold <= 1 or not 0 < self.lsh_threshold <= self.jaccard_threshold:
            raise ValueError("need 0 < lsh_threshold ≤ jaccard_threshold ≤ 1")


def cluster_id_for(smallest_key: str) -> str:
    return "lc_" + hashlib.sha256(smallest_key.encode()).hexdigest()[:16]


# Scaffolding words that variants of one task add, drop or phrase differently (attribute keys,
# service phrasing, filler adjectives, the "between/from-to" comparator); left out of the text
# signature so that whichever variant of a task arrives first, its cluster gets the same id and pool.
_SOFT = frozenset(
    _words(
        """range color colour family size variation volume weight text model compatibility type style
    offer offering ship shipping sold store official free deal sale flash cash delivery cod
    new original best quality good nice decent affordable durable reliable stylish great thank
    fashion trendy hot authentic gift value pack edition classic modern everyday"""
    )
)


def text_signature(tokens: Iterable[str]) -> str:
    """What every variant of a task shares, from its query tokens alone: the content tokens minus
    scaffolding words and one-character tokens (enumerators, sizes lost in tokenising). ``""``
    when nothing is left."""
    return " ".join(sorted(t for t in tokens if len(t) > 1 and t not in _SOFT))


def text_cluster_id(signature: str, taken: set[str]) -> tuple[str, str]:
    """``(cluster_id, pool_key)`` of a new text-only cluster: both from its text signature, so
    they do not depend on which variant arrived first. Two unlinked clusters with one signature
    (rare) share the pool; the later one gets a numbered id."""
    base = "lc_" + hashlib.sha256(f"text:{signature}".encode()).hexdigest()[:16]
    cid, n = base, 1
    while cid in taken:
        cid = "lc_" + hashlib.sha256(f"text:{signature}#{n}".encode()).hexdigest()[:16]
        n += 1
    return cid, base


def pool_for(cluster_id: str, config: ClusterConfig = ClusterConfig()) -> str:
    """Stable pool of a cluster: a seeded hash of its id mapped onto the fractions."""
    digest = hashlib.sha256(f"{config.seed}:{cluster_id}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    if u < config.train:
        return "train"
    if u < config.train + config.eval:
        return "eval"
    return "never_touch"


def heldout_side(cluster_id: str, config: ClusterConfig = ClusterConfig()) -> str:
    """``"dev"`` or ``"test"``: the side of a held-out (eval-pool) cluster, a seeded hash of its permanent id
    mapped onto ``config.test`` - like its pool, fixed when the cluster is created and the same for every member,
    whatever joins the registry later."""
    digest = hashlib.sha256(f"{config.seed}:heldout:{cluster_id}".encode()).digest()
    return "test" if int.from_bytes(digest[:8], "big") / 2**64 < config.test else "dev"


class UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        parent = self.parent
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            if ra < rb:
                ra, rb = rb, ra
            self.parent[ra] = rb


def _jaccard(a: frozenset, b: frozenset) -> float:
    if not a and not b:
        return 1.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


class _Sketch:
    """A precomputed MinHash signature as datasketch's LSH index reads it (``hashvalues``, ``len``)."""

    __slots__ = ("hashvalues",)

    def __init__(self, hashvalues: np.ndarray) -> None:
        self.hashvalues = hashvalues

    def __len__(self) -> int:
        return len(self.hashvalues)


def signatures(sets: list[frozenset], num_perm: int, seed: int, chunk_tokens: int = 200_000) -> np.ndarray:
    """MinHash signatures of non-empty token sets, vectorised over all sets at once.

    Each distinct token is hashed once (first 8 bytes of sha1); permutation i is
    ``h -> a_i*h + b_i mod 2^64`` with odd ``a_i`` (seeded), so signatures are deterministic and
    sets sharing a token share its hash. Work is chunked to bound memory."""
    vocab: dict[str, int] = {}
    flat: list[int] = []
    lengths = np.empty(len(sets), dtype=np.int64)
    for n, tokens in enumerate(sets):
        flat.extend(vocab.setdefault(t, len(vocab)) for t in tokens)
        lengths[n] = len(tokens)
    if len(sets) and lengths.min() == 0:
        raise ValueError("signatures() needs non-empty sets")
    token_hash = np.fromiter(
        (int.from_bytes(hashlib.sha1(t.encode()).digest()[:8], "little") for t in vocab),
        dtype=np.uint64,
        count=len(vocab),
    )
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2**63, size=num_perm, dtype=np.uint64) | np.uint64(1)
    b = rng.integers(0, 2**63, size=num_perm, dtype=np.uint64)
    hv_all = token_hash[np.asarray(flat, dtype=np.int64)]
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    out = np.empty((len(sets), num_perm), dtype=np.uint64)
    i = 0
    while i < len(sets):
        j = int(np.searchsorted(starts, starts[i] + chunk_tokens, side="right"))
        j = max(j, i + 1)
        lo = starts[i]
        hi = starts[j] if j < len(sets) else len(hv_all)
        phv = hv_all[lo:hi, None] * a + b  # wraps modulo 2^64
        out[i:j] = np.minimum.reduceat(phv, starts[i:j] - lo, axis=0)
        i = j
    return out


def similar_pairs(
    token_sets: list[frozenset], query_idx: Iterable[int], config: ClusterConfig = ClusterConfig()
) -> list[tuple[int, int]]:
    """Verified similar pairs ``(i, j)`` for every ``i`` in ``query_idx`` against all sets.

    Identical sets are grouped directly; distinct sets go through MinHash-LSH and each candidate
    is checked with the exact Jaccard."""
    by_set: dict[frozenset, list[int]] = {}
    for i, s in enumerate(token_sets):
        by_set.setdefault(s, []).append(i)
    uniq = list(by_set)
    uniq_index = {s: k for k, s in enumerate(uniq)}
    pairs: list[tuple[int, int]] = []
    wanted_uniq: set[int] = set()
    for i in query_idx:
        if not token_sets[i]:
            continue  # a query with no content tokens links to nothing by text
        members = by_set[token_sets[i]]
        pairs.extend((i, j) for j in members if j != i)
        wanted_uniq.add(uniq_index[token_sets[i]])
    nonempty = [k for k, s in enumerate(uniq) if s]
    if len(nonempty) < 2:
        return pairs
    df: dict[str, int] = {}
    for u in uniq:
        for t in u:
            df[t] = df.get(t, 0) + 1
    # Tokens in more than ``common_share`` of the queries (comparators, services, template
    # words the stop list missed) say nothing about identity; left in the sketches they make
    # unrelated queries collide in LSH bands, and the candidate lists grow with the pool. The
    # exact Jaccard check below still uses the full sets.
    common_df = max(config.common_min_df, int(config.common_share * len(uniq)))
    sketch_sets = []
    for k in nonempty:
        distinctive = frozenset(t for t in uniq[k] if df[t] <= common_df)
        sketch_sets.append(distinctive or uniq[k])
    hashes = [_Sketch(row) for row in signatures(sketch_sets, config.num_perm, config.seed)]
    lsh = MinHashLSH(threshold=config.lsh_threshold, num_perm=config.num_perm)
    with lsh.insertion_session() as session:
        for k, mh in zip(nonempty, hashes, strict=True):
            session.insert(k, mh, check_duplication=False)
    pos = {k: n for n, k in enumerate(nonempty)}
    for k in sorted(wanted_uniq):
        if k not in pos:
            continue
        a = uniq[k]
        for other in lsh.query(hashes[pos[k]]):
            # pairs inside the wanted set are seen from both sides: verify them once
            if other == k or (other < k and other in wanted_uniq):
                continue
            b = uniq[other]
            if not _near(a, b, df, config):
                continue
            for i in by_set[a]:
                pairs.extend((i, j) for j in by_set[b])
    return pairs


def _near(a: frozenset, b: frozenset, df: dict[str, int], config: ClusterConfig) -> bool:
    """The near-duplicate test: token Jaccard ≥ ``jaccard_threshold`` and, when either query has
    rare tokens (df ≤ ``rare_df``: product names), their rare tokens agree (Jaccard ≥ ``rare_jaccard``)."""
    if _jaccard(a, b) < config.jaccard_threshold:
        return False
    rare_a = frozenset(t for t in a if df[t] <= config.rare_df)
    rare_b = frozenset(t for t in b if df[t] <= config.rare_df)
    return not (rare_a or rare_b) or _jaccard(rare_a, rare_b) >= config.rare_jaccard


def exact_similar_pairs(token_sets: list[frozenset], query_idx: Iterable[int], target_idx: Iterable[int],
                        config: ClusterConfig = ClusterConfig()) -> list[tuple[int, int]]:
    """Every near-duplicate pair ``(i, j)``, ``i`` in ``query_idx``, ``j`` in ``target_idx``, found
    exactly (no LSH): the guard must not inherit the sketches' misses. Prefix filtering: with tokens
    ordered rarest first, two sets with Jaccard ≥ t share a token among each one's first
    ``|s| - ceil(t·|s|) + 1`` tokens, so only those are indexed and probed."""
    t = config.jaccard_threshold
    df: dict[str, int] = {}
    for u in set(token_sets):
        for tok in u:
            df[tok] = df.get(tok, 0) + 1

    rank = {tok: n for n, tok in enumerate(sorted(df, key=lambda tok: (df[tok], tok)))}

    def prefix(s: frozenset) -> list[str]:
        return sorted(s, key=rank.__getitem__)[: len(s) - math.ceil(t * len(s) - 1e-9) + 1]

    index: dict[str, list[int]] = {}
    for j in target_idx:
        if token_sets[j]:
            for tok in prefix(token_sets[j]):
                index.setdefault(tok, []).append(j)
    pairs: list[tuple[int, int]] = []
    for i in query_idx:
        a = token_sets[i]
        if not a:
            continue
        lo, hi = t * len(a) - 1e-9, len(a) / t + 1e-9  # Jaccard ≥ t needs t·|a| ≤ |b| ≤ |a| / t
        seen: set[int] = {i}
        for tok in prefix(a):
            for j in index.get(tok, ()):
                if j not in seen:
                    seen.add(j)
                    b = token_sets[j]
                    if lo <= len(b) <= hi and _near(a, b, df, config):
                        pairs.append((i, j))
    return sorted(pairs)


def cluster_problems(problems: list[dict], config: ClusterConfig = ClusterConfig()) -> list[int]:
    """Stateless clustering: a component label (index of the component's first member) per problem."""
    sets = [frozenset(query_tokens(p.get("query", ""))) for p in problems]
    uf = UnionFind(len(problems))
    for i, j in similar_pairs(sets, range(len(problems)), config):
        uf.union(i, j)
    first_by_pid: dict[str, int] = {}
    for i, p in enumerate(problems):
        for pid in reward_product_ids(p):
            if pid in first_by_pid:
                uf.union(i, first_by_pid[pid])
            else:
                first_by_pid[pid] = i
    return [uf.find(i) for i in range(len(problems))]


# ---------------------------------------------------------------------------------------------
# Persistent registry
# ---------------------------------------------------------------------------------------------


def registry_path(state_dir: str | os.PathLike) -> Path:
    return StateLayout(Path(state_dir)).registry


class Registry:
    """The persistent problem → cluster → pool map. ``members`` is keyed by ``problem_key``."""

    def __init__(
        self, members: dict[str, dict] | None = None, config: ClusterConfig = ClusterConfig()
    ) -> None:
        self.members: dict[str, dict] = members or {}
        self.config = config

    # ---- persistence ----
    @classmethod
    def load(cls, state_dir: str | os.PathLike | None, config: ClusterConfig = ClusterConfig()) -> Registry:
        """Load the registry under ``state_dir`` (a fresh, empty one when absent or ``None``)."""
        if state_dir is None:
            return cls({}, config)
        path = registry_path(state_dir)
        if not path.exists():
            return cls({}, config)
        table = pq.read_table(path)
        missing = set(REGISTRY_SCHEMA.names) - set(table.column_names)
        if missing:
            raise ValueError(f"{path} is not a leak-cluster registry (missing columns {sorted(missing)})")
        return cls({r["problem_key"]: r for r in table.to_pylist()}, config)

    def save(self, state_dir: str | os.PathLike) -> Path:
        """Write atomically (temporary file, fsync, rename); rows sorted by key for stable bytes."""
        from oro_assets.storage import write_parquet

        return write_parquet(self.to_table(), registry_path(state_dir))

    def to_table(self) -> pa.Table:
        return pa.Table.from_pylist([self.members[k] for k in sorted(self.members)], schema=REGISTRY_SCHEMA)

    # ---- queries ----
    def cluster_pools(self) -> dict[str, str]:
        return {m["cluster_id"]: m["pool"] for m in self.members.values() if m["status"] == ASSIGNED}

    def siblings(self, cluster_id: str) -> list[str]:
        return sorted(k for k, m in self.members.items() if m["cluster_id"] == cluster_id)

    def lookup(self, key: str) -> dict | None:
        return self.members.get(key)

    def pool_of(self, key: str) -> str | None:
        """Where problem ``key`` belongs: ``train``, ``dev``, ``test`` or ``never_touch``; None when it is
        unknown or a leak conflict (no pool: never trained on, never evaluated)."""
        member = self.members.get(key)
        if member is None or member.get("status") != ASSIGNED or not member.get("pool"):
            return None
        if member["pool"] == "eval":
            return heldout_side(member["cluster_id"], self.config)
        return member["pool"]

    def problems_in(self, pool: str) -> list[str]:
        """The one held-out rule: the sorted keys of the assigned problems in ``pool`` - ``train``, ``dev``
        (every screen, recipe choice and default evaluation), ``test`` (the locked pool only the final report
        reads), ``heldout`` (dev and test: what training must never see) or ``never_touch``."""
        if pool not in PROBLEM_POOLS:
            raise ValueError(f"unknown pool {pool!r}; accepted: {', '.join(PROBLEM_POOLS)}")
        wanted = set(HELDOUT_SIDES) if pool == "heldout" else {pool}
        return sorted(k for k in self.members if self.pool_of(k) in wanted)

    # ---- update ----
    def assign(self, problems: Iterable[dict], first_seen: str = "") -> dict[str, Any]:
        """Register every problem not yet known; never moves a registered one.

        Returns stats: ``new``, ``new_clusters``, ``joined``, ``conflicts`` (list of
        ``{problem_key, query, clusters, pools}``)."""
        incoming: dict[str, dict] = {}
        for p in problems:
            key = problem_key(p)
            if key not in self.members:
                incoming.setdefault(key, p)
        stats: dict[str, Any] = {"new": len(incoming), "new_clusters": 0, "joined": 0, "conflicts": []}
        if not incoming:
            return stats
        old_keys = sorted(self.members)
        new_keys = sorted(incoming)
        keys = old_keys + new_keys
        n_old = len(old_keys)
        sets = [frozenset(jsonio.loads(self.members[k]["tokens"])) for k in old_keys]
        sets += [frozenset(query_tokens(incoming[k].get("query", ""))) for k in new_keys]
        pids = [jsonio.loads(self.members[k]["product_ids"]) for k in old_keys]
        pids += [reward_product_ids(incoming[k]) for k in new_keys]

        uf = UnionFind(len(keys))
        links_to_old: dict[int, set[int]] = {}

        def link(i: int, j: int) -> None:  # i is new
            if j >= n_old:
                uf.union(i, j)
            else:
                links_to_old.setdefault(i, set()).add(j)

        for i, j in similar_pairs(sets, range(n_old, len(keys)), self.config):
            link(i, j)
        # Shared ground-truth ids: O(members) per id - new members are chained by union-find and
        # the first of them carries the links to every registered member.
        by_pid: dict[str, list[int]] = {}
        for i, ids in enumerate(pids):
            for pid in ids:
                by_pid.setdefault(pid, []).append(i)
        for members in by_pid.values():
            news = [j for j in members if j >= n_old]
            if not news:
                continue
            for j in news[1:]:
                uf.union(news[0], j)
            for j in members:
                if j < n_old:
                    link(news[0], j)

        components: dict[int, list[int]] = {}
        for i in range(n_old, len(keys)):
            components.setdefault(uf.find(i), []).append(i)
        pools = self.cluster_pools()
        taken = {m["cluster_id"] for m in self.members.values() if m["cluster_id"]}
        for members in components.values():
            touched: set[str] = set()
            for i in members:
                for j in links_to_old.get(i, ()):
                    old = self.members[keys[j]]
                    if old["status"] == ASSIGNED:
                        touched.add(old["cluster_id"])
                    else:
                        touched.update(jsonio.loads(old["conflict_clusters"]))
            touched_pools = {pools[c] for c in touched}
            status, conflict = ASSIGNED, []
            if not touched:
                cid, pool_key = self._new_cluster_id(members, keys, sets, pids, taken)
                taken.add(cid)
                pool = pool_for(pool_key, self.config)
                stats["new_clusters"] += 1
            elif len(touched_pools) == 1:
                cid = min(touched)
                pool = pools[cid]
                stats["joined"] += len(members)
            else:
                cid, pool, status, conflict = None, None, CONFLICT, sorted(touched)
            for i in sorted(members):
                key = keys[i]
                p = incoming[key]
                self.members[key] = {
                    "problem_key": key,
                    "problem_id": p.get("problem_id"),
                    "query": p.get("query", ""),
                    "tokens": jsonio.dumps(sorted(sets[i])),
                    "product_ids": jsonio.dumps(pids[i]),
                    "cluster_id": cid,
                    "pool": pool,
                    "status": status,
                    "conflict_clusters": jsonio.dumps(conflict),
                    "first_seen": first_seen,
                }
                if status == CONFLICT:
                    stats["conflicts"].append(
                        {
                            "problem_key": key,
                            "query": p.get("query", ""),
                            "clusters": conflict,
                            "pools": sorted({pools[c] for c in conflict}),
                        }
                    )
        return stats

    @staticmethod
    def _new_cluster_id(
        members: list[int], keys: list[str], sets: list[frozenset], pids: list[list[str]], taken: set[str]
    ) -> tuple[str, str]:
        """``(cluster_id, pool_key)`` of a new cluster.

        With ground-truth ids (problem-pool problems, registered whole in one batch, so the
        smallest key does not depend on day order) the id comes from the smallest member key, as
        it always did. Text-only clusters (problems unknown to the pool, arriving day by day) take
        both from the smallest text signature of their members."""
        signature = min((text_signature(sets[i]) for i in members), key=lambda sig: (not sig, sig))
        if any(pids[i] for i in members) or not signature:
            cid = cluster_id_for(min(keys[i] for i in members))
            return cid, cid
        return text_cluster_id(signature, taken)


def update_registry(
    problems: Iterable[dict],
    state_dir: str | os.PathLike,
    first_seen: str = "",
    config: ClusterConfig = ClusterConfig(),
) -> tuple[Registry, dict[str, Any]]:
    """Load, assign new problems, save atomically. The ``leak_clusters`` asset's one call."""
    registry = Registry.load(state_dir, config)
    stats = registry.assign(problems, first_seen=first_seen)
    registry.save(state_dir)
    counts: dict[str, int] = {}
    for m in registry.members.values():
        counts[m["pool"] or CONFLICT] = counts.get(m["pool"] or CONFLICT, 0) + 1
    stats["problems_per_pool"] = dict(sorted(counts.items()))
    stats["clusters"] = len(registry.cluster_pools())
    return registry, stats


def leak_violations(registry: Registry) -> list[dict]:
    """No-leak check over the registry: a ground-truth product id or a cluster on both the train
    and the eval side. Conflicted problems have no pool and are not counted (quarantined)."""
    pools_by_pid: dict[str, set[str]] = {}
    pools_by_cluster: dict[str, set[str]] = {}
    for m in registry.members.values():
        if m["status"] != ASSIGNED:
            continue
        pools_by_cluster.setdefault(m["cluster_id"], set()).add(m["pool"])
        for pid in jsonio.loads(m["product_ids"]):
            pools_by_pid.setdefault(pid, set()).add(m["pool"])
    out = []
    for cid, ps in sorted(pools_by_cluster.items()):
        if len(ps) > 1:
            out.append({"kind": "cluster", "id": cid, "pools": sorted(ps)})
    for pid, ps in sorted(pools_by_pid.items()):
        if "train" in ps and "eval" in ps:
            out.append({"kind": "product_id", "id": pid, "pools": sorted(ps)})
    return out


def near_duplicate_leaks(registry: Registry, config: ClusterConfig | None = None) -> list[dict]:
    """Eval queries whose near-duplicate (:func:`_near`) is a train query, found exactly: clustering
    links variants through MinHash-LSH, which can miss a pair; this guard cannot."""
    config = config or registry.config
    members = [
        registry.members[k] for k in sorted(registry.members) if registry.members[k]["status"] == ASSIGNED
    ]
    sets = [frozenset(jsonio.loads(m["tokens"])) for m in members]
    eval_idx = [i for i, m in enumerate(members) if m["pool"] == "eval"]
    train_idx = [i for i, m in enumerate(members) if m["pool"] == "train"]
    return [{"eval": members[i]["problem_key"], "train": members[j]["problem_key"]}
            for i, j in exact_similar_pairs(sets, eval_idx, train_idx, config)]


@contextlib.contextmanager
def registry_lock(state_dir: Path) -> Iterator[None]:
    """An inter-process lock around load → assign → save of the persistent leak-cluster registry: two
    partitions curated at once (the run queue allows two runs) must not both rewrite it."""
    import fcntl

    lock_path = StateLayout(Path(state_dir)).registry_lock
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
