"""Training text for the tiny profile: tokenizer corpus, copy drills, synthetic train problems.

* ``arena_corpus_texts``: what the word-level tokenizer is trained on (catalogue titles, queries,
  tool schemas, rendered example chats) - the arena's text, no labels.
* ``synthetic_product_problems``: Product problems generated from catalogue products (title key
  words + a price range around the product's price), so the teacher can produce trajectories in any
  quantity. Decontaminated against the eval side: a draw whose target is an eval ground truth, whose
  search keywords coincide with an eval problem's (brand + noun: distractors of eval items share
  them), or whose query the leak clustering links to an eval query is dropped and counted. Each
  ``syn_<seed>_<i>_<product id>`` is a function of (catalogue, seed, i): the evaluation's leak check
  regenerates it (``resolve_synthetic_problem``). A share of them also asks for the target's own variant
  options or attributes (id suffix ``_o``), which only a viewed product shows.
* ``copy_drill_rows``: short chats whose assistant turn copies words from the user turn into a
  ``find_product`` call, then choose the one made-up hit that fits - the warm-up phase that teaches
  the output embeddings every catalogue word and the choice by verdicts. Words only; no problem, no answer.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from oro_assets import jsonio
from oro_assets.arena.generator import SERVICE_PHRASES, SHOP_OPENERS, option_clauses
from oro_assets.toolcalls import FIND_PRODUCT, RECOMMEND_PRODUCT, TERMINATE, VIEW_PRODUCT_INFORMATION
from oro_assets.training.data import normalise_messages
from oro_assets.training.views import attribute_text, option_text

_OPENERS = ["Looking for a {x}.", "Show me a {x}.", "I want to buy a {x}.", "Find me a {x}."]
_BETWEEN = ["priced between {lo} and {hi} pesos", "priced from {lo} to {hi} PHP", "costing between {lo} and {hi} pesos"]
_UNDER = ["under {hi} pesos", "priced under {hi} PHP", "costing less than {hi} pesos"]
_OVER = ["over {lo} pesos", "priced over {lo} PHP", "costing more than {lo} pesos"]


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


_NOT_KEYWORDS = frozenset({"gt", "lt", "range"})  # the clustering's canonical comparators
_SYN_ID = re.compile(r"syn_(-?\d+)_(\d+)_(.+?)(_o)?")


def search_keywords(text: str) -> frozenset[str]:
    """The content words a search would use: the leak clustering's query tokens (template words
    dropped, plurals stemmed) without numbers and comparators. ``"Find me a Pigoru graphic t
    priced between 635 and 857 pesos."`` -> ``{"pigoru", "graphic", "t"}``."""
    from oro_assets.curation.clusters import query_tokens

    return frozenset(t for t in query_tokens(text) if t not in _NOT_KEYWORDS and not t.isdigit())


def keywords_coincide(a: frozenset[str], b: frozenset[str], df: Mapping[str, int], rare_df: int) -> bool:
    """Two keyword sets name the same thing: they share at least two words, one of them rare
    (in at most ``rare_df`` catalogue titles: an invented brand, a model name) - brand + noun.
    ``rare_df`` is the leak clustering's own bound for words that identify a task. A word in no title (a variant
    option such as "24cm") identifies no product: it is not rare, it is absent."""
    shared = a & b
    return len(shared) >= 2 and any(0 < df.get(t, 0) <= rare_df for t in shared)


def _synthetic_pool(catalogue: Iterable[dict]) -> list[dict]:
    return sorted((p for p in catalogue if p.get("title")), key=lambda p: str(p["product_id"]))


def _product_options(p: Mapping, rng: random.Random) -> tuple[dict[str, str], dict[str, str]]:
    """One or two of the product's own variant options / attributes to ask for, as the arena's problem
    generator asks for them: ``({sku key: value}, {attribute key: value})``. The brand attribute is the title's
    first word already, so it is never asked."""
    skus = [o for o in (p.get("sku_options") or {}).values() if isinstance(o, dict) and o]
    attrs = {str(k): v for k, v in (p.get("attributes") or {}).items() if str(k) != "brand" and v}
    kinds = [k for k, have in (("sku", skus), ("attr", attrs)) if have]
    if not kinds:
        return {}, {}
    chosen = rng.sample(kinds, k=rng.randint(1, len(kinds)))
    sku: dict[str, str] = {}
    attr: dict[str, str] = {}
    if "sku" in chosen:
        option = rng.choice(skus)
        key = rng.choice(sorted(option))
        sku = {str(key): str(option[key])}
    if "attr" in chosen:
        key = rng.choice(sorted(attrs))
        values = attrs[key] if isinstance(attrs[key], list) else [attrs[key]]
        attr = {key: str(rng.choice(values))}
    return sku, attr


def _synthetic_problem(pool: Sequence[dict], seed: int, i: int, n_words: tuple[int, int],
                       price_kinds: Sequence[str], option_share: float = 0.0) -> dict:
    """Draw ``i`` of the synthetic problems of ``seed``: a function of (catalogue, seed, i, option_share) alone,
    so a training manifest's ``syn_*`` id can be regenerated at evaluation time (:func:`resolve_synthetic_problem`).

    With ``option_share`` a draw also asks, at that rate, for one or two of the target's own variant options or
    attributes (what only ``view_product_information`` shows); its id then ends in ``_o``. The option draw has its
    own random stream, so the plain part of every draw is the same whatever the share."""
    rng = random.Random(f"syn:{seed}:{i}")
    p = rng.choice(pool)
    words = p["title"].split()
    k = min(len(words), rng.randint(*n_words))
    key = " ".join(words[:k]).lower()
    price = float(p.get("price") or 0.0)
    kind = rng.choice(list(price_kinds))
    style = rng.randrange(12)
    if kind == "between":
        lo = max(1, math.floor(price * rng.uniform(0.5, 0.9)))
        hi = math.ceil(price * rng.uniform(1.1, 1.6))
        cons, phrase = [{"between": [lo, hi]}], _BETWEEN[style % 3].format(lo=_fmt(lo), hi=_fmt(hi))
    elif kind == "less":
        hi = math.ceil(price * rng.uniform(1.1, 1.6)) + 1
        cons, phrase = [{"less than": [None, hi]}], _UNDER[style % 3].format(hi=_fmt(hi))
    else:
        lo = max(1, math.floor(price * rng.uniform(0.5, 0.9)) - 1)
        cons, phrase = [{"greater than": [lo, None]}], _OVER[style % 3].format(lo=_fmt(lo))
    pid = str(p["product_id"])
    reward: dict[str, Any] = {"product_id": pid, "title": [p["title"]], "price": cons}
    opt_rng = random.Random(f"syn-options:{seed}:{i}")
    sku, attr = _product_options(p, opt_rng) if opt_rng.random() < option_share else ({}, {})
    clauses = option_clauses(sku, attr, style) + [phrase]
    if sku:
        reward["sku_options"] = [sku]
    if attr:
        reward["attributes"] = [{k: [v]} for k, v in attr.items()]
    text = ", ".join(clauses[:-1]) + " and " + clauses[-1] if len(clauses) > 1 else phrase
    query = _OPENERS[style % 4].format(x=f"{key} {text}")
    return {
        "problem_id": f"syn_{seed}_{i}_{pid}" + ("_o" if sku or attr else ""), "query": query, "category": "Product",
        "difficulty": "medium" if sku or attr else "easy", "title": "Synthetic product", "source": "synthetic",
        "reward": reward,
    }


class EvalKeywords:
    """What the eval side searches for: the keyword sets of the eval problems' queries and of their
    ground-truth products' titles, the eval queries' token sets (for the clustering's near-duplicate
    test) and the catalogue's word frequencies (which words are rare)."""

    def __init__(self, catalogue: Iterable[dict], exclude_product_ids: Iterable[str] = (),
                 exclude_problems: Iterable[Mapping] = ()) -> None:
        from oro_assets.arena.problems import problem_ground_truth_ids
        from oro_assets.curation.clusters import ClusterConfig, query_tokens

        self.config = ClusterConfig()
        products = list(catalogue)
        by_id = {str(p["product_id"]): p for p in products}
        self.df: dict[str, int] = {}
        for p in products:
            for t in search_keywords(str(p.get("title") or "")):
                self.df[t] = self.df.get(t, 0) + 1
        problems = [dict(p) for p in exclude_problems]
        # product id -> the eval problem it is a ground truth of ("" for a bare excluded id)
        self.owner: dict[str, str] = dict.fromkeys(map(str, exclude_product_ids), "")
        for p in problems:
            for gid in problem_ground_truth_ids(p):
                self.owner[gid] = str(p.get("problem_id"))
        self.product_ids = set(self.owner)
        named = [(search_keywords(str(p.get("query") or "")), str(p.get("problem_id"))) for p in problems]
        named += [(search_keywords(str(by_id[i].get("title") or "")), self.owner[i] or f"product {i}")
                  for i in sorted(self.owner) if i in by_id]
        self.keyword_sets = [s for s, _ in named if s]
        self.keyword_owner = [o for s, o in named if s]
        self.by_word: dict[str, list[int]] = {}
        for n, s in enumerate(self.keyword_sets):
            for t in s:
                if 0 < self.df.get(t, 0) <= self.config.rare_df:
                    self.by_word.setdefault(t, []).append(n)
        self.query_sets = [frozenset(query_tokens(str(p.get("query") or ""))) for p in problems]
        self.eval_ids = [str(p.get("problem_id")) for p in problems]

    def match(self, problem: Mapping) -> tuple[str, str] | None:
        """``(reason, what on the eval side)`` when a (synthetic) problem may not be trained on:
        its target is an eval ground truth (``target_product``), or its search keywords coincide
        with an eval problem's or an eval ground truth's (``query_keywords``); else None. The
        leak-cluster test is :meth:`near_duplicates` (over a batch)."""
        from oro_assets.arena.problems import problem_ground_truth_ids

        for gid in problem_ground_truth_ids(dict(problem)):
            if gid in self.owner:
                return "target_product", self.owner[gid] or f"product {gid}"
        words = search_keywords(str(problem.get("query") or ""))
        for n in sorted({n for t in words for n in self.by_word.get(t, ())}):
            if keywords_coincide(words, self.keyword_sets[n], self.df, self.config.rare_df):
                return "query_keywords", self.keyword_owner[n]
        return None

    def reason(self, problem: Mapping) -> str | None:
        hit = self.match(problem)
        return hit[0] if hit else None

    def near_duplicates(self, problems: Sequence[Mapping]) -> dict[int, str]:
        """Index of each of ``problems`` that the leak clustering's own near-duplicate test
        (:func:`curation.clusters.exact_similar_pairs`) links to an eval query -> that eval problem's id."""
        from oro_assets.curation.clusters import exact_similar_pairs, query_tokens

        if not self.query_sets or not problems:
            return {}
        sets = [frozenset(query_tokens(str(p.get("query") or ""))) for p in problems] + self.query_sets
        n = len(problems)
        out: dict[int, str] = {}
        for i, j in exact_similar_pairs(sets, range(n), range(n, len(sets)), self.config):
            out.setdefault(i, self.eval_ids[j - n])
        return out


def synthetic_problem_set(catalogue: Iterable[dict], n: int, seed: int, exclude_product_ids: Iterable[str] = (),
                          *, exclude_problems: Iterable[Mapping] = (), n_words: tuple[int, int] = (3, 5),
                          price_kinds: Sequence[str] = ("between", "between", "less", "greater"),
                          max_draws: int | None = None, option_share: float = 0.0) -> tuple[list[dict], dict[str, Any]]:
    """``n`` easy Product problems decontaminated against the eval side, and the report of what was dropped.

    Draw ``i`` (``syn_<seed>_<i>_<product id>``) is dropped, and counted by reason, when its target
    is an eval ground truth (``exclude_product_ids``, or of ``exclude_problems``), when its search
    keywords coincide with an eval problem's query keywords or with the title keywords of an eval
    ground truth (brand + noun: a distractor of an eval item is findable by the eval item's query),
    or when the leak clustering's near-duplicate test links its query to an eval query (its leak
    cluster would be an eval cluster). Draws continue until ``n`` are kept (at most ``max_draws``).
    ``option_share``: the rate of draws that also ask for the target's own variant options or attributes.
    """
    pool = _synthetic_pool(catalogue)
    guard = EvalKeywords(pool, exclude_product_ids, exclude_problems)
    report: dict[str, Any] = {"drawn": 0, "kept": 0, "dropped": 0,
                              "dropped_by": {"target_product": 0, "query_keywords": 0, "leak_cluster": 0},
                              "dropped_examples": []}
    out: list[dict] = []
    if not pool or n <= 0:
        return out, report
    limit = max_draws if max_draws is not None else 20 * n + 100
    i = 0
    while len(out) < n and i < limit:
        batch = [_synthetic_problem(pool, seed, j, n_words, price_kinds, option_share)
                 for j in range(i, min(limit, i + n - len(out)))]
        i += len(batch)
        near = guard.near_duplicates(batch)
        for k, p in enumerate(batch):
            why = guard.reason(p) or ("leak_cluster" if k in near else None)
            if why is None:
                out.append(p)
                continue
            report["dropped_by"][why] += 1
            if len(report["dropped_examples"]) < 5:
                report["dropped_examples"].append({"problem_id": p["problem_id"], "query": p["query"], "reason": why})
    report.update(drawn=i, kept=len(out), dropped=i - len(out))
    return out, report


def synthetic_product_problems(catalogue: Iterable[dict], n: int, seed: int,
                               exclude_product_ids: Iterable[str] = (), *, n_words: tuple[int, int] = (3, 5),
                               price_kinds: Sequence[str] = ("between", "between", "less", "greater"),
                               exclude_problems: Iterable[Mapping] = (),
                               report: dict[str, Any] | None = None, option_share: float = 0.0) -> list[dict]:
    """``n`` Product problems, decontaminated (see :func:`synthetic_problem_set`); the drop
    counts go into ``report`` when one is given."""
    problems, stats = synthetic_problem_set(catalogue, n, seed, exclude_product_ids, exclude_problems=exclude_problems,
                                            n_words=n_words, price_kinds=price_kinds, option_share=option_share)
    if report is not None:
        report.update(stats)
    return problems


def is_synthetic_id(problem_id: str) -> bool:
    return str(problem_id).startswith("syn_")


def resolve_synthetic_problem(catalogue: Iterable[dict], problem_id: str, *, n_words: tuple[int, int] = (3, 5),
                              price_kinds: Sequence[str] = ("between", "between", "less", "greater"),
                              _pool: Sequence[dict] | None = None) -> dict:
    """The synthetic problem a training manifest's ``syn_<seed>_<i>_<product id>`` names, regenerated
    from the catalogue. Raises ``ValueError`` (with the reason) when it cannot be: an id of the
    older generator (``syn_<seed>_<i>``, whose draws depended on the exclusion set), or a catalogue
    whose draw ``i`` no longer targets that product."""
    m = _SYN_ID.fullmatch(str(problem_id))
    if m is None:
        raise ValueError(f"{problem_id}: not a synthetic id of the form syn_<seed>_<i>_<product id> "
                         "(an older generator's id, not reproducible; retrain teacher_sft)")
    seed, i, pid, options = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4) is not None
    pool = _pool if _pool is not None else _synthetic_pool(catalogue)
    if not pool:
        raise ValueError(f"{problem_id}: the catalogue has no titled products")
    # a draw's option part depends only on whether it asked for options: share 1 redraws them, share 0 none
    problem = _synthetic_problem(pool, seed, i, n_words, price_kinds, 1.0 if options else 0.0)
    if problem["problem_id"] != problem_id:
        raise ValueError(f"{problem_id}: draw {i} of seed {seed} targets {problem['reward']['product_id']} in this "
                         f"catalogue, not {pid} (a different catalogue than the one trained on)")
    return problem


class SyntheticResolver:
    """Resolves many ``syn_*`` ids against one catalogue (its sorted pool built once)."""

    def __init__(self, catalogue: Iterable[dict]) -> None:
        self.pool = _synthetic_pool(catalogue)

    def __call__(self, problem_id: str) -> dict:
        return resolve_synthetic_problem((), problem_id, _pool=self.pool)


def copy_drill_rows(catalogue: Iterable[dict], n: int, seed: int, system_prompt: str,
                    tools: Sequence[dict], style: str = "teacher", multi_item: float = 0.0,
                    quote_shop_items: bool = False) -> list[dict]:
    """``n`` short chats that exercise the two copies an episode needs, in the chat format.

    Turn 1: the user names words + a price range, the assistant copies them into ``find_product``.
    Turn 2: the tool returns 3 made-up hits (random words, prices, 10-digit ids); the assistant
    writes the per-candidate verdicts, chooses the one hit that fits (at a random rank) and names
    its id in ``recommend_product`` (its handle, under the compact view). Made-up ids and titles: no
    problem, no real answer.

    ``style="miner"`` writes them in the curated corpus's own style instead (the scripted miners' ``compare`` /
    ``datum`` thinking, arena.policies.agentic: plan, then evidence first and the choice last, 3-5 hits, then
    terminate), so SFT on curated rows does not start from a format it never saw (issue 18).
    """
    if style not in ("teacher", "miner"):
        raise ValueError(f"unknown drill style {style!r}; accepted: teacher, miner")
    vocab = sorted({w.lower() for p in catalogue for w in str(p.get("title", "")).split() if w.isalpha()})
    if not vocab:
        return []
    if style == "miner":
        return _miner_drill_rows(vocab, n, seed, system_prompt, tools, multi_item, quote_shop_items)
    rng = random.Random(seed)
    rows = []
    tools_json = jsonio.template_dumps(list(tools))
    for i in range(n):
        # as the teacher writes them (arena.policies.base): the filter "lo-", the thinking "lo-up"
        key, query, call, price_words, lo, hi, kind = _drill_query(rng, vocab)
        words = call["q"]
        args = jsonio.stdlib_dumps(call)
        think = f"Item 1: words {words}; price {price_words}; service {call.get('service', 'none')}. Search."
        chosen = rng.randrange(3)
        hits, verdicts = [], []
        for j in range(3):
            pid = str(rng.randint(10**8, 10**10 - 1))
            if j == chosen:
                title, price, w_ok, p_ok = key + [rng.choice(vocab)], rng.randint(lo, hi), True, True
            else:
                w_ok, p_ok = rng.choice([(True, False), (False, True), (False, False)])
                title = (key if w_ok else key[:-1] + [rng.choice(vocab)]) + [rng.choice(vocab)]
                if p_ok:
                    price = rng.randint(lo, hi)
                else:  # out of range on the side that is bounded
                    price = rng.randint(1, lo - 1) if kind == "greater" else hi + rng.randint(1, 500)
            hits.append({"title": " ".join(title).title(), "price": float(price), "product_id": pid})
            verdicts.append(f"{pid}: price {price} in {price_words} {'yes' if p_ok else 'no'}; "
                            f"words {'yes' if w_ok else 'no'}; service yes")
        pick = hits[chosen]["product_id"]
        messages = [
            {"role": "system", "content": system_prompt},
            {"role": "user", "content": query},
            {"role": "assistant", "content": "", "reasoning_content": think,
             "tool_calls": [{"id": "call_1_0", "type": "function",
                             "function": {"name": FIND_PRODUCT, "arguments": args}}]},
            {"role": "tool", "tool_call_id": "call_1_0", "name": FIND_PRODUCT, "content": jsonio.stdlib_dumps(hits)},
            {"role": "assistant", "content": "", "reasoning_content": "\n".join(verdicts + [f"Choose {pick}."]),
             "tool_calls": [{"id": "call_2_0", "type": "function",
                             "function": {"name": RECOMMEND_PRODUCT,
                                          "arguments": jsonio.stdlib_dumps({"product_ids": pick})}}]},
        ]
        rows.append({"id": f"drill_{seed}_{i}", "messages": normalise_messages(messages), "tools": tools_json,
                     "source": "copy_drill"})
    return rows


def _drill_item(rng: random.Random, vocab: Sequence[str]) -> tuple[list[str], str, int, dict, str, int, int, str]:
    """Made-up words + price range (+ services) -> (key words, the item's phrase, phrase style, find_product args,
    price text, lo, hi, kind)."""
    key = [rng.choice(vocab) for _ in range(rng.randint(2, 5))]
    words = " ".join(key)
    lo = rng.randint(5, 900)
    hi = lo + rng.randint(10, 900)
    style = rng.randrange(12)
    kind = rng.choice(("between", "between", "less", "greater"))
    if kind == "between":
        phrase, price_arg = _BETWEEN[style % 3].format(lo=lo, hi=hi), f"{lo}-{hi}"
    elif kind == "less":
        phrase, price_arg, lo = _UNDER[style % 3].format(hi=hi), f"0-{hi}", 0
    else:
        phrase, price_arg, hi = _OVER[style % 3].format(lo=lo), f"{lo}-", lo + 2000
    price_words = f"{lo}-up" if kind == "greater" else price_arg
    services = sorted(rng.sample(list(SERVICE_PHRASES), rng.choice((0, 0, 1, 1, 2))), key=list(SERVICE_PHRASES).index)
    clauses = [rng.choice(SERVICE_PHRASES[sv]) for sv in services]
    rng.shuffle(clauses)
    parts = clauses + [phrase]
    text = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]
    call = {"q": words, "price": price_arg}
    if services:
        call["service"] = ",".join(services)
    return key, f"{words} {text}", style, call, price_words, lo, hi, kind


def _drill_query(rng: random.Random, vocab: Sequence[str]) -> tuple[list[str], str, dict, str, int, int, str]:
    """Made-up words + price range (+ services) -> (key words, query, find_product args, price text, lo, hi, kind)."""
    key, item, style, call, price_words, lo, hi, kind = _drill_item(rng, vocab)
    return key, _OPENERS[style % 4].format(x=item), call, price_words, lo, hi, kind


_ORDINALS = ("First", "Second", "Third", "Fourth")


def _multi_query(rng: random.Random, items: Sequence[str], shop: bool) -> str:
    """A request for several products in order: a Shop request ("a shop that offers all of these: First, ...") or
    a plain one ("..., and also a ...")."""
    if shop:
        body = " ".join(f"{_ORDINALS[i]}, a {item}." for i, item in enumerate(items)).rstrip(".")
        return rng.choice(SHOP_OPENERS).format(x=body)
    opener = rng.choice(("Looking for a {x}", "Show me a {x}", "I need a {x}"))
    return opener.format(x=", and also a ".join(items)) + "."


def _near_miss(rng: random.Random, words: Sequence[str], key: list[str], fail: str | None, extra: tuple[int, int],
               more_services: int, lo: int, hi: int, kind: str, wanted: Sequence[str]) -> tuple[list[str], int, list[str]]:
    """A made-up hit's (title words, price, services): all of the request, or all but the one constraint ``fail``
    names (``price`` out of range on its bounded side, ``words`` its last key word swapped, ``service`` the first
    wanted one missing). Titles get ``extra`` more words and the services up to ``more_services`` unrequested ones."""
    from oro_assets.arena.search import SERVICES

    tail = [rng.choice(words) for _ in range(rng.randint(*extra))]
    title = (key[:-1] + [rng.choice(words)] if fail == "words" else list(key)) + tail
    if fail == "price":
        price = rng.randint(1, max(1, lo - 1)) if kind == "greater" else hi + rng.randint(1, 500)
    else:
        price = rng.randint(max(1, lo), hi)
    service = sorted(set(wanted) | set(rng.sample(list(SERVICES), rng.randint(0, more_services))),
                     key=list(SERVICES).index)
    if fail == "service":
        service = [sv for sv in service if sv != wanted[0]]
    return title, price, service


def _miner_item(rng: random.Random, vocab: Sequence[str], key: list[str], call: dict, price_words: str, lo: int,
                hi: int, kind: str, shop_id: str | None = None, quote: str | None = None
                ) -> tuple[str, list[dict], dict, str]:
    """One searched item of a miner-style drill: (plan, hits, the chosen hit, the thinking that chooses it).
    ``shop_id``: the search is restricted to that shop (a Shop request's later items), so every hit is in it.
    ``quote``: the request's own clause for the item, which the plan starts with."""

    wanted = call["service"].split(",") if call.get("service") else []
    svc_clause = f", service {call['service']}" if wanted else ""
    plan = (f"{quote + '. ' if quote else ''}The user wants {' '.join(key)} (price {price_words}{svc_clause}). "
            "I will search with the key words and filters, then compare the results.")
    n_hits = rng.randint(3, 5)
    chosen = rng.randrange(n_hits)
    hits, fails = [], []
    for j in range(n_hits):
        pid = str(rng.randint(10**8, 10**10 - 1))
        fail = None if j == chosen else rng.choice(["price", "words"] + (["service"] if wanted else []))
        title, price, service = _near_miss(rng, vocab, key, fail, (1, 3), 2, lo, hi, kind, wanted)
        sold, shop = rng.randint(0, 9000), str(rng.randint(10**6, 10**7 - 1))
        hits.append({"title": " ".join(title).title(), "price": float(price), "service": service,
                     "sold_count": sold, "shop_id": shop_id or shop, "product_id": pid})
        fails.append(fail)
    c = hits[chosen]
    if rng.random() < 0.5:  # datum: one candidate's evidence, then the product it belongs to
        offers = f" and offers {', '.join(c['service'])}" if c["service"] else ""
        decide = (f"The title '{c['title'][:60]}' costs {int(c['price'])}{offers}, which fits the request, "
                  f"so I will choose product {c['product_id']}.")
    else:  # compare: the pair in result order, the runner-up's failure, then the choice
        j = rng.choice([k for k in range(n_hits) if k != chosen])
        r, fail = hits[j], fails[j]
        listing = " with ".join(f"{hits[k]['product_id']} (price {int(hits[k]['price'])})" for k in sorted((chosen, j)))
        if fail == "price":
            reason = f"{r['product_id']} costs {int(r['price'])}, outside the range {price_words}"
        elif fail == "service":
            reason = f"{r['product_id']} lacks {call['service']}"
        else:
            reason = f"{r['product_id']}'s title '{r['title'][:50]}' misses part of the request"
        decide = f"Comparing {listing}: {reason}, so {c['product_id']} is the better choice."
    return plan, hits, c, decide


def _call(n: int, name: str, args: dict) -> dict:
    return {"id": f"call_{n}_0", "type": "function", "function": {"name": name, "arguments": jsonio.stdlib_dumps(args)}}


def _miner_episode(system_prompt: str, query: str, searched: Sequence[tuple[str, dict, list[dict], dict, str]]
                   ) -> list[dict]:
    """The messages of a miner-style drill: each item searched in turn (its plan after the previous item's choice),
    then every chosen product recommended in the asked order, then terminate."""
    messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": query}]
    decided = ""
    for n, (plan, call, hits, _, decide) in enumerate(searched, start=1):
        messages += [
            {"role": "assistant", "content": "", "reasoning_content": f"{decided}\n{plan}" if decided else plan,
             "tool_calls": [_call(n, FIND_PRODUCT, call)]},
            {"role": "tool", "tool_call_id": f"call_{n}_0", "name": FIND_PRODUCT, "content": jsonio.stdlib_dumps(hits)},
        ]
        decided = decide
    ids = ",".join(chosen["product_id"] for *_, chosen, _ in searched)
    return messages + _recommend_and_end(len(searched) + 1, decided, ids, "Recommendation sent; finishing.")


def _recommend_and_end(n: int, decided: str, ids: str, closing: str) -> list[dict]:
    """The end of a drill from call ``n`` on: the last choice's thinking with the recommendation of ``ids``, then
    the ``closing`` thought with terminate, and the tools' answers."""
    from oro_assets.arena.tools import RECOMMEND_RESULT, TERMINATE_RESULT

    return [
        {"role": "assistant", "content": "", "reasoning_content": decided,
         "tool_calls": [_call(n, RECOMMEND_PRODUCT, {"product_ids": ids})]},
        {"role": "tool", "tool_call_id": f"call_{n}_0", "name": RECOMMEND_PRODUCT, "content": RECOMMEND_RESULT},
        {"role": "assistant", "content": "", "reasoning_content": closing,
         "tool_calls": [_call(n + 1, TERMINATE, {"status": "success"})]},
        {"role": "tool", "tool_call_id": f"call_{n + 1}_0", "name": TERMINATE, "content": TERMINATE_RESULT},
    ]


def _miner_drill_rows(vocab: Sequence[str], n: int, seed: int, system_prompt: str,
                      tools: Sequence[dict], multi_item: float = 0.0, quote_shop_items: bool = False) -> list[dict]:
    """``copy_drill_rows(style="miner")``: made-up words, prices and ids in the miners' thinking style.

    ``multi_item``: the share of drills (every ``round(1 / multi_item)``-th) that ask for 2-4 products, half of them
    as a Shop request (every later item searched within the first item's shop); the others ask for one.
    ``quote_shop_items``: a Shop request's plan for each item starts with the request's clause for it, up to its
    key words ("Second, a <key words>")."""
    rng = random.Random(f"miner-drill:{seed}")
    multi_rng = random.Random(f"miner-drill-multi:{seed}")
    every = round(1 / multi_item) if multi_item > 0 else 0
    tools_json = jsonio.template_dumps(list(tools))
    rows = []
    for i in range(n):
        if every and i % every == every - 1:
            k, shop = multi_rng.randint(2, 4), multi_rng.random() < 0.5
            items, searched, shop_id = [], [], None
            for j in range(k):
                key, item, _, call, price_words, lo, hi, kind = _drill_item(multi_rng, vocab)
                call = {**call, "shop_id": shop_id} if shop_id else call
                quote = f"{_ORDINALS[j]}, a {' '.join(key)}" if shop and quote_shop_items else None
                plan, hits, chosen, decide = _miner_item(multi_rng, vocab, key, call, price_words, lo, hi, kind, shop_id,
                                                         quote)
                shop_id = chosen["shop_id"] if shop else None
                items.append(item)
                searched.append((plan, call, hits, chosen, decide))
            query = _multi_query(multi_rng, items, shop)
            rid = f"mdrill_{seed}_{i}_multi"
        else:
            key, query, call, price_words, lo, hi, kind = _drill_query(rng, vocab)
            plan, hits, chosen, decide = _miner_item(rng, vocab, key, call, price_words, lo, hi, kind)
            searched = [(plan, call, hits, chosen, decide)]
            rid = f"mdrill_{seed}_{i}"
        rows.append({"id": rid, "messages": normalise_messages(_miner_episode(system_prompt, query, searched)),
                     "tools": tools_json, "source": "copy_drill"})
    return rows


def _option_pools(catalogue: Iterable[dict]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The catalogue's variant-option and attribute vocabularies: ``{key: values}`` with at least two values each
    (the brand attribute left out: it is the title's first word)."""
    sku: dict[str, set[str]] = {}
    attr: dict[str, set[str]] = {}
    for p in catalogue:
        for option in (p.get("sku_options") or {}).values():
            for k, v in (option or {}).items():
                sku.setdefault(str(k), set()).add(str(v))
        for k, vs in (p.get("attributes") or {}).items():
            if str(k) != "brand":
                attr.setdefault(str(k), set()).update(str(v) for v in (vs if isinstance(vs, list) else [vs]))
    return ({k: sorted(v) for k, v in sorted(sku.items()) if len(v) > 1},
            {k: sorted(v) for k, v in sorted(attr.items()) if len(v) > 1})


def _plain_item(rng: random.Random, vocab: Sequence[str], number: int = 1, shop_id: str | None = None
                ) -> tuple[str, int, dict[str, Any]]:
    """A made-up item that asks for no option, in the teacher's words: (its phrase in a request, the phrase style,
    the item's turns: plan, search, per-candidate price / words / service verdicts of the hits, the one that fits at
    a random position chosen without a view). ``shop_id``: a Shop request's later item, searched within that shop."""
    key, phrase, style, call, price_words, lo, hi, kind = _drill_item(rng, vocab)
    wanted = call["service"].split(",") if call.get("service") else []
    n_hits = rng.randint(3, 5)
    match = rng.randrange(n_hits)
    hits, verdicts = [], []
    others = [w for w in vocab if w != key[-1]]
    for j in range(n_hits):
        fail = None if j == match else rng.choice(["price", "words"] + (["service"] if wanted else []))
        title, price, service = _near_miss(rng, others, key, fail, (0, 2), 1, lo, hi, kind, wanted)
        pid = str(rng.randint(10**8, 10**10 - 1))
        sold, shop = rng.randint(0, 9000), str(rng.randint(10**6, 10**7 - 1))
        hits.append({"title": " ".join(title).title(), "price": float(price), "service": service,
                     "sold_count": sold, "shop_id": shop_id or shop, "product_id": pid})
        verdicts.append(f"{pid}: price {price} in {price_words} {'no' if fail == 'price' else 'yes'}; "
                        f"words {'no' if fail == 'words' else 'yes'}; service {'no' if fail == 'service' else 'yes'}")
    plan = (f"Item {number}: words {' '.join(key)}; price {price_words}; service {call.get('service') or 'none'}. "
            "Search.")
    return phrase, style, {"plan": plan, "call": {**call, "shop_id": shop_id} if shop_id else call, "hits": hits,
                           "view": None, "verdicts": verdicts, "pick": hits[match], "word": key[0]}


def _option_item(rng: random.Random, vocab: Sequence[str], sku_pool: Mapping[str, list[str]],
                 attr_pool: Mapping[str, list[str]], number: int = 1, shop_id: str | None = None
                 ) -> tuple[str, int, dict[str, Any]]:
    """A made-up item that asks for one or two variant options / attributes: (its phrase in a request, the phrase
    style, the item's turns: plan, search with 3-5 hits that all fit on the list, a view of the first three, the
    teacher's verdicts with ``sku yes`` for the one viewed product carrying every asked option, at a random
    position, and ``sku no`` for the others, the choice). ``shop_id``: a Shop request's later item."""
    from oro_assets.arena.policies.base import price_text, sku_ok, sku_text
    from oro_assets.arena.search import SERVICES

    kinds = [k for k, pool in (("sku", sku_pool), ("attr", attr_pool)) if pool]
    key, _, style, call, _, lo, hi, kind = _drill_item(rng, vocab)
    asked = rng.sample(kinds, k=rng.randint(1, len(kinds)))
    want_sku = {}
    want_attr = {}
    if "sku" in asked:
        k = rng.choice(sorted(sku_pool))
        want_sku = {k: rng.choice(sku_pool[k])}
    if "attr" in asked:
        k = rng.choice(sorted(attr_pool))
        want_attr = {k: rng.choice(attr_pool[k])}
    bound = ({"between": [lo, hi]} if kind == "between" else {"less than": [None, hi]} if kind == "less"
             else {"greater than": [lo, None]})
    item: dict[str, Any] = {"price": [bound]}
    if want_sku:
        item["sku_options"] = [want_sku]
    if want_attr:
        item["attributes"] = [{k: [v]} for k, v in want_attr.items()]
    wanted_services = call["service"].split(",") if call.get("service") else []
    price_phrase = (_BETWEEN[style % 3].format(lo=lo, hi=hi) if kind == "between" else
                    _UNDER[style % 3].format(hi=hi) if kind == "less" else _OVER[style % 3].format(lo=lo))
    clauses = (option_clauses(want_sku, want_attr, style)
               + [SERVICE_PHRASES[sv][style % 2] for sv in wanted_services] + [price_phrase])
    phrase = f"{' '.join(key)} " + ", ".join(clauses[:-1]) + " and " + clauses[-1]
    hits, details = [], []
    n_hits = rng.randint(3, 5)
    match = rng.randrange(3)
    price = rng.randint(max(1, lo), hi)
    for j in range(n_hits):
        pid = str(rng.randint(10**8, 10**10 - 1))
        extra = [rng.choice(vocab) for _ in range(rng.randint(0, 2))]
        service = sorted(set(wanted_services) | set(rng.sample(list(SERVICES), rng.randint(0, 1))),
                         key=list(SERVICES).index)
        sold, shop = rng.randint(0, 9000), str(rng.randint(10**6, 10**7 - 1))
        hits.append({"title": " ".join(key + extra).title(), "price": float(price), "service": service,
                     "sold_count": sold, "shop_id": shop_id or shop, "product_id": pid})
        # every viewed product lacks at least one asked option, except the match
        missing = set() if j == match else set(rng.sample(asked, k=rng.randint(1, len(asked))))
        variants = [{k: rng.choice([x for x in sku_pool[k] if x != v]) for k, v in want_sku.items()}
                    for _ in range(rng.randint(1, 3))]
        if want_sku and "sku" not in missing:  # the asked option is one of its variants
            variants[rng.randrange(len(variants))] = dict(want_sku)
        options = {str(n + 1): v or {"variation": "default"} for n, v in enumerate(variants)}
        attributes = {k: [rng.choice([x for x in attr_pool[k] if x != v]) if "attr" in missing else v]
                      for k, v in want_attr.items()}
        details.append({**hits[-1], "sku_options": options, "attributes": {**attributes, "brand": [key[0]]}})
    viewed = [h["product_id"] for h in hits[:3]]
    verdicts = [f"{h['product_id']}: price {int(h['price'])} in {price_text(item)} yes; words yes; service yes; "
                f"sku {'yes' if sku_ok(item, d) else 'no'}" for h, d in zip(hits[:3], details[:3], strict=True)]
    plan = (f"Item {number}: words {' '.join(key)}; price {price_text(item)}; service {call.get('service') or 'none'}."
            " Search.")
    view = (f"Item {number}: need {sku_text(item)}. View {', '.join(viewed)}.", viewed, details[:3])
    return phrase, style, {"plan": plan, "call": {**call, "shop_id": shop_id} if shop_id else call, "hits": hits,
                           "view": view, "verdicts": verdicts, "pick": hits[match], "word": key[0]}


def _teacher_episode(system_prompt: str, query: str, items: Sequence[Mapping[str, Any]],
                     list_items: bool = False) -> list[dict]:
    """The messages of a made-up request answered in the scripted teacher's words (arena.policies.agentic): each
    item searched in turn (its plan written after the previous item's choice), viewed when it asks for options,
    chosen by its verdicts; every choice recommended in the asked order, then "Done." and terminate.
    ``list_items``: the teacher's items line before the first plan and "Then <word>." after each choice."""
    messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": query}]
    n, decided = 1, ""
    words = [*(str(item["word"]) for item in items), "end"]
    for j, item in enumerate(items):
        plan = f"Items: {', '.join(words)}.\n{item['plan']}" if list_items and j == 0 else item["plan"]
        messages += [
            {"role": "assistant", "content": "", "reasoning_content": f"{decided}\n{plan}" if decided
             else plan, "tool_calls": [_call(n, FIND_PRODUCT, item["call"])]},
            {"role": "tool", "tool_call_id": f"call_{n}_0", "name": FIND_PRODUCT,
             "content": jsonio.stdlib_dumps(item["hits"])},
        ]
        n += 1
        if item["view"] is not None:
            think, ids, details = item["view"]
            messages += [
                {"role": "assistant", "content": "", "reasoning_content": think,
                 "tool_calls": [_call(n, VIEW_PRODUCT_INFORMATION, {"product_ids": ",".join(ids)})]},
                {"role": "tool", "tool_call_id": f"call_{n}_0", "name": VIEW_PRODUCT_INFORMATION,
                 "content": jsonio.stdlib_dumps(details)},
            ]
            n += 1
        decided = "\n".join([*item["verdicts"], f"Choose {item['pick']['product_id']}.",
                              *([f"Then {words[j + 1]}."] if list_items else [])])
    picks = ",".join(item["pick"]["product_id"] for item in items)
    return messages + _recommend_and_end(n, decided, picks, "Done.")


def _shop_drill(rng: random.Random, vocab: Sequence[str], sku_pool: Mapping[str, list[str]],
                attr_pool: Mapping[str, list[str]], option_share: float) -> tuple[str, list[dict]]:
    """A made-up Shop request for 2-4 products, every later item searched within the shop of the first item's
    choice: (query, items). Each item asks for options with probability ``option_share``. Shop requests only: in the
    arena a request of several products without a shop is a Voucher request, whose last choice is followed by the
    voucher check, not by the recommendation."""
    k = rng.randint(2, 4)
    phrases, items, shop_id = [], [], None
    for j in range(k):
        if rng.random() < option_share:
            phrase, _, item = _option_item(rng, vocab, sku_pool, attr_pool, j + 1, shop_id)
        else:
            phrase, _, item = _plain_item(rng, vocab, j + 1, shop_id)
        shop_id = shop_id or item["pick"]["shop_id"]
        phrases.append(phrase)
        items.append(item)
    return _multi_query(rng, phrases, shop=True), items


def option_drill_rows(catalogue: Iterable[dict], n: int, seed: int, system_prompt: str,
                      tools: Sequence[dict], plain_share: float = 0.0, multi_item_share: float = 0.0,
                      list_items: bool = False) -> list[dict]:
    """``n`` whole episodes in the scripted teacher's words where only the viewed details decide.

    The user asks for made-up key words, a price range and one or two variant options / attributes (the arena's
    wording and the catalogue's own option vocabulary); the search returns 3-5 hits that all fit on the list; the
    assistant views the first three, writes the teacher's per-candidate verdicts (``sku yes`` for the one viewed
    product carrying every asked option, at a uniformly random position, ``sku no`` for the others), chooses it,
    recommends it and terminates. Made-up titles and ids: no problem, no answer - the skill of reading a detail page
    against the request, which the list alone never teaches. ``plain_share``: the share of drills whose request asks
    for no option, answered without a view (so viewing stays conditional on the request); they have their own random
    stream, so the option drills are the same whatever the share. ``multi_item_share``: the share of the other
    drills that are Shop requests for 2-4 products (``_shop_drill``, each item asking for options as often as the
    drills do), so the drills that teach the choice also teach going on to the next item after it; drawn from a
    stream of their own, with the option drills after the first multi-item one then different. ``list_items``: in
    the teacher's ``list_items`` words (``_teacher_episode``)."""
    vocab = sorted({w.lower() for p in catalogue for w in str(p.get("title", "")).split() if w.isalpha()})
    sku_pool, attr_pool = _option_pools(catalogue)
    if not vocab or not (sku_pool or attr_pool):
        return []
    rng = random.Random(f"option-drill:{seed}")
    tools_json = jsonio.template_dumps(list(tools))
    rows = []
    plain_rng = random.Random(f"plain-drill:{seed}")
    multi_rng = random.Random(f"multi-drill:{seed}")
    for i in range(n):
        if plain_share > 0 and plain_rng.random() < plain_share:
            phrase, style, item = _plain_item(plain_rng, vocab)
            rows.append({"id": f"pdrill_{seed}_{i}", "messages": normalise_messages(
                _teacher_episode(system_prompt, _OPENERS[style % 4].format(x=phrase), [item], list_items)),
                "tools": tools_json, "source": "option_drill"})
            continue
        if multi_item_share > 0 and multi_rng.random() < multi_item_share:
            query, items = _shop_drill(multi_rng, vocab, sku_pool, attr_pool, 1.0 - plain_share)
            rows.append({"id": f"omdrill_{seed}_{i}", "messages": normalise_messages(
                _teacher_episode(system_prompt, query, items, list_items)), "tools": tools_json, "source": "option_drill"})
            continue
        phrase, style, item = _option_item(rng, vocab, sku_pool, attr_pool)
        rows.append({"id": f"odrill_{seed}_{i}", "messages": normalise_messages(
            _teacher_episode(system_prompt, _OPENERS[style % 4].format(x=phrase), [item], list_items)),
            "tools": tools_json, "source": "option_drill"})
    return rows


# Words of the scripted teacher's compact thinking scaffold (arena.policies.agentic) that neither titles
# nor queries contain; without them in the vocabulary they train as the unknown token.
SCAFFOLD_TEXT = ("Item 1: words a b; price 1-2; service none. Search. Item 1: need size. View 1, 2. "
                 "1: price yes; words no; service yes; sku yes; budget no; attributes yes\nChoose 1. Done. "
                 "Check voucher: budget 1, threshold 2, fixed discount. Voucher checked. Recommend 1. "
                 "Item 2: results do not fit well. Search again.")


def arena_corpus_texts(catalogue: Iterable[dict], problems: Iterable[dict], tools: Sequence[dict],
                       extra: Iterable[str] = ()) -> list[str]:
    """Texts the tiny tokenizer is trained on: titles, queries, tool schemas, system prompt, extra text."""
    from oro_assets.arena.episode import SYSTEM_PROMPT
    from oro_assets.arena.search import SERVICES
    from oro_assets.arena.tools import RECOMMEND_RESULT, TERMINATE_RESULT

    # Service names and fixed tool results never appear in titles or queries but do in training chats.
    texts: list[str] = [SYSTEM_PROMPT, jsonio.template_dumps(list(tools)), ",".join(SERVICES),
                        RECOMMEND_RESULT, TERMINATE_RESULT, SCAFFOLD_TEXT]
    for p in catalogue:
        # titles, and the SKU options / attributes the compact view shows after view_product_information
        texts.append(f"{p.get('title', '')} | {option_text(p)} | {attribute_text(p)}")
    texts.extend(str(p.get("query", "")) for p in problems)
    texts.extend(extra)
    return texts


def dataset_corpus_texts(rows: Iterable[dict], view: str) -> list[str]:
    """The text of training rows as the profile's view shows it to the model - every message's content,
    thinking and tool-call arguments, tool results compacted - for the tokenizer's vocabulary (issue 18:
    built over the arena's text alone, 7.6% of the curated rows' assistant target tokens were the unknown
    token: the miners' own words, ``will``, ``so``, ``compare``). Text only: no label, score or outcome."""
    from oro_assets.training.data import DatasetError, sft_example

    texts: list[str] = []
    for row in rows:
        try:
            ex = sft_example(row, view)
        except DatasetError:
            continue
        for m in ex["messages"]:
            texts.extend(t for t in (m.get("content"), m.get("reasoning_content")) if isinstance(t, str) and t)
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                texts.append(f"{fn.get('name', '')} {fn.get('arguments', '')}")
    return texts


def rendered_examples(tokenizer: Any, rows: Sequence[dict], view: str, limit: int = 50) -> list[str]:
    """A few training chats rendered with the chat template (so role words and JSON keys are in the vocab)."""
    from oro_assets.training.data import sft_example

    out = []
    for r in rows[:limit]:
        ex = sft_example(r, view)
        out.append(tokenizer.apply_chat_template(ex["messages"], tools=jsonio.loads(ex["tools"]), tokenize=False))
    return out
