"""Agentic scripted miners: the "model" emits every tool call (inference responses carry them).

One state machine (:class:`ScriptedAgent`) plays every category — per reward item: search,
maybe reformulate, maybe view the candidates, decide; then (voucher: check the voucher),
recommend, terminate. A :class:`Style` writes the thinking and fixes which reasoning gate the
trace is designed to reach (reference §4):

* ``compare`` 0.9 — cites tool data and names >= 2 candidates with a reason to prefer one;
* ``datum``   0.7 — cites a specific id / price, never weighs two candidates in one step;
* ``vague``   0.5 — talks about the results, but no specific datum (no digits at all);
* ``restate`` 0.3 — only restates the query;
* ``teacher`` 0.9 — the systematic per-candidate scaffold used for teacher-SFT.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from oro_assets.arena.episode import Episode, SimClock, ToolCall, Turn, run_episode
from oro_assets.arena.policies.base import (
    key_words,
    last_results,
    llm_turn,
    needs_view,
    ordinal_clause,
    price_arg,
    price_ok,
    price_text,
    service_arg,
    service_ok,
    sku_ok,
    sku_text,
    words_ok,
)
from oro_assets.toolcalls import (
    CALCULATE_VOUCHER,
    FIND_PRODUCT,
    RECOMMEND_PRODUCT,
    TERMINATE,
    VIEW_PRODUCT_INFORMATION,
)


def _items(problem: dict) -> list[dict]:
    reward = problem.get("reward")
    if isinstance(reward, dict):
        return [reward]
    return [r for r in reward or [] if isinstance(r, dict)]


def _p(x: Any) -> str:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    return str(int(f)) if f.is_integer() else f"{f:.2f}".rstrip("0").rstrip(".")


@dataclass
class Checks:
    pid: str
    price: Any
    price_ok: bool
    words_ok: bool
    service_ok: bool
    sku_ok: bool | None  # None = not required / not viewed

    @property
    def passes(self) -> bool:
        return self.price_ok and self.words_ok and self.service_ok and self.sku_ok is not False

    def first_failure(self) -> str | None:
        for name, ok in (("price", self.price_ok), ("words", self.words_ok), ("service", self.service_ok),
                         ("sku", self.sku_ok)):
            if ok is False:
                return name
        return None


@dataclass
class ItemState:
    item: dict
    keys: list[str]
    results: list[dict] = field(default_factory=list)  # search summaries seen for this item (dedup, in order)
    details: dict[str, dict] = field(default_factory=dict)
    searches: int = 0
    viewed: bool = False
    viewed_ids: list[str] = field(default_factory=list)
    chosen: str | None = None


class ScriptedAgent:
    """A miner whose model emits every call. ``skill`` in [0, 1] controls mistakes."""

    structural = "agentic"

    def __init__(self, problem: dict, *, style: str, skill: float, seed: int, model: str = "qwen3-32b",
                 verify: bool = True, kind: str | None = None, quote_items: bool = False,
                 count_items: bool = False, list_items: bool = False) -> None:
        self.problem = problem
        self.quote_items = quote_items
        self.count_items = count_items
        self.list_items = list_items
        self.style = style
        self.skill = skill
        self.rng = random.Random(seed)
        self.model = model
        self.verify = verify
        self.name = kind or f"agentic_{style}"
        self.query = problem["query"]
        self.category = problem.get("category") or "Product"
        gt = [str(r.get("product_id")) for r in _items(problem)]
        self.items = [ItemState(item=it, keys=key_words(self.query, " ".join(it.get("title") or []))) for it in _items(problem)]
        self.gt = gt
        self.i = 0
        self.phase = "search"
        self.shop_id: str | None = None
        self.step = 0
        self.recommended: list[str] | None = None
        self.use_filters = self.rng.random() < 0.35 + 0.65 * skill
        self.err = (1.0 - skill) * 0.5
        self.compared = False  # a thinking step named >= 2 candidates with a reason
        self.cited = False  # a thinking step cited a datum from tool output

    # ------------------------------------------------------------------ protocol
    def act(self, problem_view: dict, messages: list[dict], tools: list[dict]) -> Turn:
        self.step += 1
        self._absorb(last_results(messages))
        think, calls = self._next()
        retries: tuple[int, ...] = ()
        failed: tuple[int | None, ...] = ()
        if self.rng.random() < 0.03:  # a retried attempt inside the request, or a request that failed whole
            if self.rng.random() < 0.5:
                retries = (self.rng.choice((429, 500, 502, 504)),)
            else:
                failed = (self.rng.choice((None, 429, 502)),)
        return llm_turn(think, calls, seed=f"{self.problem['problem_id']}|{self.name}|{self.step}|{self.rng.random()}",
                        model=self.model, messages=messages, retries=retries, failed_calls=failed)

    # ------------------------------------------------------------------ state
    def _absorb(self, results: list[Any]) -> None:
        if self.i >= len(self.items):
            return
        st = self.items[self.i]
        for res in results:
            if isinstance(res, list):
                for r in res:
                    if not isinstance(r, dict) or "product_id" not in r:
                        continue
                    pid = str(r["product_id"])
                    if "sku_options" in r or "attributes" in r:
                        st.details[pid] = r
                    elif all(str(x.get("product_id")) != pid for x in st.results):
                        st.results.append(r)

    def _search_call(self, st: ItemState, reformulate: bool) -> ToolCall:
        args: dict[str, Any] = {}
        keys = st.keys
        if reformulate:
            # drop the last key word, or go to the next page when words are already few
            if len(keys) > 2 and st.searches == 1:
                keys = keys[:-1]
            else:
                args["page"] = min(5, st.searches + 1)
        if not keys:
            keys = [w for w in self.query.lower().split()[:4]]
        args = {"q": " ".join(keys), **args}
        if self.use_filters or reformulate:
            pa, sa = price_arg(st.item), service_arg(st.item)
            if pa:
                args["price"] = pa
            if sa:
                args["service"] = sa
        if self.shop_id and self.category == "Shop":
            args["shop_id"] = self.shop_id
        st.searches += 1
        return ToolCall(FIND_PRODUCT, args)

    def _candidates(self, st: ItemState, limit: int = 5) -> list[dict]:
        cands = st.results[:limit]
        gt = self.gt[self.i]
        if gt not in {str(c["product_id"]) for c in cands}:
            extra = [r for r in st.results if str(r["product_id"]) == gt]
            cands = cands[: limit - 1] + extra if extra else cands
        return cands

    def _check(self, st: ItemState, r: dict) -> Checks:
        pid = str(r["product_id"])
        s = sku_ok(st.item, st.details.get(pid)) if (needs_view(st.item) and pid in st.details) else None
        if needs_view(st.item) and pid not in st.details and st.viewed:
            s = False
        return Checks(pid, r.get("price"), price_ok(st.item, r.get("price")), words_ok(st.keys, r.get("title", "")),
                      service_ok(st.item, r.get("service")), s)

    def _gt_visible(self, st: ItemState) -> bool:
        return any(str(r["product_id"]) == self.gt[self.i] for r in st.results)

    def _choose(self, st: ItemState) -> tuple[str | None, str | None]:
        """(chosen, runner-up). Skilled agents pick the ground truth when they saw it."""
        cands = self._candidates(st)
        if not cands:
            return None, None
        checks = [self._check(st, r) for r in cands]
        gt = self.gt[self.i]
        passing = [c.pid for c in checks if c.passes]
        if gt in passing or (self._gt_visible(st) and gt in {c.pid for c in checks}):
            chosen = gt
        elif passing:
            chosen = passing[0]
        else:
            chosen = checks[0].pid
        if self.rng.random() < self.err:  # a mistake: settle for another candidate
            others = [c.pid for c in checks if c.pid != chosen]
            if others:
                chosen = self.rng.choice(others)
        runner = next((c.pid for c in checks if c.pid != chosen), None)
        return chosen, runner

    def _next(self) -> tuple[str, list[ToolCall]]:
        if self.phase == "done":
            return self._think_terminate(), [ToolCall(TERMINATE, {"status": "success"})]
        if self.phase == "recommend":
            self.phase = "done"
            ids = ",".join(self.recommended or [])
            return self._think_recommend(), [ToolCall(RECOMMEND_PRODUCT, {"product_ids": ids})]
        st = self.items[self.i]
        if self.phase == "search":
            self.phase = "after_search"
            return self._think_plan(st), [self._search_call(st, reformulate=False)]
        if self.phase == "after_search":
            max_searches = 3 if self.skill >= 0.5 else 2
            if not self._gt_visible(st) and st.searches < max_searches:
                return self._think_reformulate(st), [self._search_call(st, reformulate=True)]
            if self.verify and needs_view(st.item) and st.results and self.rng.random() > self.err:
                self.phase = "decide"
                ids = [str(c["product_id"]) for c in self._candidates(st, limit=3)]
                if self.gt[self.i] not in ids and self._gt_visible(st):
                    ids = ids[:2] + [self.gt[self.i]]
                st.viewed = True
                st.viewed_ids = ids
                return self._think_view(st, ids), [ToolCall(VIEW_PRODUCT_INFORMATION, {"product_ids": ",".join(ids)})]
            self.phase = "decide"
        # decide on this item, then either search the next one or move on
        chosen, runner = self._choose(st)
        st.chosen = chosen
        if chosen and self.category == "Shop" and self.shop_id is None:
            self.shop_id = next((str(r.get("shop_id")) for r in st.results if str(r["product_id"]) == chosen), None)
        think = self._think_decide(st, chosen, runner)
        self.i += 1
        if self.list_items and self.style == "teacher":
            think += "\n" + self._think_then()
        if self.i < len(self.items):
            nxt = self.items[self.i]
            self.phase = "after_search"
            return think + "\n" + self._think_plan(nxt), [self._search_call(nxt, reformulate=False)]
        self.recommended = [s.chosen for s in self.items if s.chosen]
        if self.category == "Voucher" and self.problem.get("voucher") and self.style == "teacher":
            self.phase = "recommend"
            return self._voucher_turn(think)
        self.phase = "done"
        return think, [ToolCall(RECOMMEND_PRODUCT, {"product_ids": ",".join(self.recommended)})]

    def _voucher_turn(self, prefix: str = "") -> tuple[str, list[ToolCall]]:
        v = self.problem["voucher"]
        args: dict[str, Any] = {"product_ids": ",".join(self.recommended or []), "budget": v.get("budget"),
                                "voucher_type": v.get("voucher_type", "platform"), "threshold": v.get("threshold") or 0,
                                "discount_type": v.get("discount_type")}
        for k in ("face_value", "discount", "cap"):
            if v.get(k) is not None:
                args[k] = v[k]
        think = (prefix + "\n" if prefix else "") + (
            f"Check voucher: budget {_p(v.get('budget'))}, threshold {_p(v.get('threshold'))}, "
            f"{v.get('discount_type')} discount.")
        return think, [ToolCall(CALCULATE_VOUCHER, args)]

    @property
    def designed_gate(self) -> float:
        """The judge gate this run was built to reach (what its thinking actually contains)."""
        if self.style == "restate":
            return 0.3
        if self.style == "vague":
            return 0.5
        if not self.cited:
            return 0.5
        return 0.9 if self.compared and self.style in ("compare", "teacher") else 0.7

    # ------------------------------------------------------------------ thinking by style
    def _item_label(self) -> str:
        """"Item 2", or "Item 2 of 4" when ``count_items`` and the request asks for several products."""
        n = self.i + 1
        return f"Item {n} of {len(self.items)}" if self.count_items and len(self.items) > 1 else f"Item {n}"

    def _item_word(self, st: ItemState) -> str:
        return st.keys[0] if st.keys else "item"

    def _think_items(self) -> str:
        """"Items: tilace, mofonu, end.": each item's first key word (its brand), in the request's order."""
        return f"Items: {', '.join([*(self._item_word(st) for st in self.items), 'end'])}."

    def _think_then(self) -> str:
        """After a choice: "Then mofonu." (the next item's word, which follows the chosen item's in the items line)
        or "Then end."."""
        return f"Then {self._item_word(self.items[self.i]) if self.i < len(self.items) else 'end'}."

    def _think_plan(self, st: ItemState) -> str:
        q = self.query
        n = self.i + 1
        if self.style == "teacher":
            svc = service_arg(st.item) or "none"
            quoted = ordinal_clause(q, n, st.keys) if self.quote_items and self.category == "Shop" else None
            said = f"{quoted}; " if quoted else ""
            listed = f"{self._think_items()}\n" if self.list_items and n == 1 else ""
            return (f"{listed}{self._item_label()}: {said}words {' '.join(st.keys)}; price {price_text(st.item)}; "
                    f"service {svc}. Search.")
        if self.style == "restate":
            return (f"The user says: \"{q.strip()}\". So the user wants exactly what they described in the "
                    f"request. I will search for it now.")
        if self.style == "vague":
            return ("I should look for the item the user described. A keyword search with the main product words "
                    "should surface good options; then I can narrow them down by checking the details.")
        return (f"The user wants {' '.join(st.keys)} (price {price_text(st.item)}"
                f"{', service ' + service_arg(st.item) if service_arg(st.item) else ''}). "
                f"I will search with the key words and filters, then compare the results.")

    def _think_reformulate(self, st: ItemState) -> str:
        if self.style == "teacher":
            return f"{self._item_label()}: results do not fit well. Search again."
        if self.style == "restate":
            return f"The user asked for: \"{self.query.strip()}\". I need to search again for this request."
        if self.style == "vague":
            return ("These results do not look like a close match to what the user asked for; most titles are "
                    "about something else. I will rephrase the search with fewer words.")
        top = st.results[0] if st.results else None
        if top is None:
            return "The search returned nothing. I will retry with fewer words and a broader search."
        return (f"The top result {top['product_id']} ('{str(top.get('title'))[:60]}', {_p(top.get('price'))}) "
                f"does not match the request well. I will reformulate the query.")

    def _think_view(self, st: ItemState, ids: list[str]) -> str:
        if self.style == "teacher":
            return f"{self._item_label()}: need {sku_text(st.item)}. View {', '.join(ids)}."
        if self.style == "restate":
            return (f"The user asked for: \"{self.query.strip()}\". I should look at the product details to "
                    f"be sure about it.")
        if self.style == "vague":
            return ("Several results look relevant, and the request has specific options, so I should open the "
                    "detail pages of the top options to check their variants and attributes.")
        if self.style == "datum":
            first = ids[0]
            price = next((r.get("price") for r in st.results if str(r["product_id"]) == first), "?")
            return (f"Product {first} is priced at {_p(price)}, which looks plausible. I need to check its "
                    f"options ({sku_text(st.item)}), so I will view the product details.")
        cands = [r for r in st.results if str(r["product_id"]) in ids]
        listing = "; ".join(f"{r['product_id']} at {_p(r.get('price'))}" for r in cands)
        return f"Candidates: {listing}. The request needs {sku_text(st.item)}; I will verify their details."

    def _think_decide(self, st: ItemState, chosen: str | None, runner: str | None) -> str:
        if chosen is None:
            if self.style == "restate":
                return f"The user wants: \"{self.query.strip()}\". Nothing fits this request."
            return "No candidate found." if self.style != "vague" else "Nothing suitable came up in the search."
        by_id = {str(r["product_id"]): r for r in st.results}
        c = by_id.get(chosen, {})
        if self.style == "teacher":
            lines = []
            cands = self._candidates(st)
            if st.viewed_ids:
                by = {str(r["product_id"]): r for r in st.results}
                cands = [by[i] for i in st.viewed_ids if i in by]
            budget = (self.problem.get("voucher") or {}).get("budget") if self.category == "Voucher" else None
            for r in cands:
                ck = self._check(st, r)
                line = (f"{ck.pid}: price {_p(ck.price)} in {price_text(st.item)} {'yes' if ck.price_ok else 'no'}; "
                        f"words {'yes' if ck.words_ok else 'no'}; service {'yes' if ck.service_ok else 'no'}")
                if needs_view(st.item):
                    line += f"; sku {'yes' if ck.sku_ok else 'no'}"
                if budget is not None:
                    line += f"; budget {'yes' if price_ok({'price': [{'less than': [None, budget]}]}, ck.price) else 'no'}"
                lines.append(line)
            lines.append(f"Choose {chosen}.")
            self.cited = True
            self.compared = self.compared or len(lines) > 2
            return "\n".join(lines)
        if self.style == "restate":
            return (f"The user wants: \"{self.query.strip()}\". I will go with what fits this request.")
        if self.style == "vague":
            return ("Looking over the results, one option matches the requested features and stays within the "
                    "budget, while the others miss something. I will pick that one.")
        # Evidence first, the choice last (a small model can only learn a choice it writes after the data it is
        # computed from): the cited title, price and service, then the product they belong to.
        if self.style == "datum" or runner is None:
            self.cited = True
            return (f"The title '{str(c.get('title', ''))[:60]}' costs {_p(c.get('price'))}"
                    f"{' and offers ' + ', '.join(c.get('service') or []) if c.get('service') else ''}, "
                    f"which fits the request, so I will choose product {chosen}.")
        r = by_id.get(runner, {})
        ck_r = self._check(st, r) if r else None
        fail = ck_r.first_failure() if ck_r else None
        if fail == "price":
            reason = f"{runner} costs {_p(r.get('price'))}, outside the range {price_text(st.item)}"
        elif fail == "service":
            reason = f"{runner} lacks {service_arg(st.item)}"
        elif fail == "words":
            reason = f"{runner}'s title '{str(r.get('title', ''))[:50]}' misses part of the request"
        elif fail == "sku":
            reason = f"{runner} has no option with {sku_text(st.item)}"
        else:
            reason = f"{runner} sold {r.get('sold_count')} vs {c.get('sold_count')} for {chosen}"
        self.compared = self.cited = True
        # the two candidates in the order the results listed them (not the chosen one first), then the reason,
        # then the choice
        rank = {str(x["product_id"]): n for n, x in enumerate(st.results)}
        pair = sorted(((chosen, c), (runner, r)), key=lambda t: rank.get(t[0], len(rank)))
        listing = " with ".join(f"{pid} (price {_p(x.get('price'))})" for pid, x in pair)
        return f"Comparing {listing}: {reason}, so {chosen} is the better choice."

    def _think_recommend(self) -> str:
        return f"Voucher checked. Recommend {', '.join(self.recommended or [])}."

    def _think_terminate(self) -> str:
        if self.style == "teacher":
            return "Done."
        if self.style == "vague":
            return "The recommendation has been made, so the task is complete."
        if self.style == "restate":
            return f"The user wanted: \"{self.query.strip()}\". That request has been handled now."
        return "Recommendation sent; finishing."


def teacher(problem: dict, seed: int = 0, *, quote_items: bool = False, count_items: bool = False,
            list_items: bool = False) -> ScriptedAgent:
    """The strongest scripted agent: systematic, near-perfect, highly regular text. ``quote_items``: each item's
    plan of a Shop request first quotes the request's own clause for it, up to its last key word ("Item 2: Second, a
    dule hydrating moisturizer; words ..."). ``count_items``: a request for several products names each item with
    their number ("Item 2 of 4: words ..."), so the step after the last item's choice is written beside its count.
    ``list_items``: the first plan opens with every item's first key word ("Items: tilace, mofonu, end."), and each
    choice is followed by the word after the chosen item's in that line ("Then mofonu." / "Then end."), for one
    product as for several: whether another item follows is copied, not counted."""
    return ScriptedAgent(problem, style="teacher", skill=1.0, seed=seed, model="teacher", kind="teacher",
                         quote_items=quote_items, count_items=count_items, list_items=list_items)


def teacher_episode(problem: dict, env: Any, *, seed: int = 0, start_ms: int = 1_767_225_600_000) -> Episode:
    """One deterministic teacher trajectory (prefixes + next turns give teacher-SFT / GRPO targets)."""
    return run_episode(teacher(problem, seed), problem, env, clock=SimClock(start_ms))


class TeacherPolicy:
    """Stateless-looking wrapper: one :class:`ScriptedAgent` per problem (for evaluation loops)."""

    name = "teacher"

    def __init__(self, problems: dict[str, dict], seed: int = 0, *, quote_items: bool = False,
                 count_items: bool = False, list_items: bool = False) -> None:
        self.problems = problems
        self.seed = seed
        self.quote_items = quote_items
        self.count_items = count_items
        self.list_items = list_items
        self._agents: dict[str, ScriptedAgent] = {}

    def act(self, problem_view: dict, messages: list[dict], tools: list[dict]) -> Turn:
        pid = problem_view["problem_id"]
        if len(messages) <= 2 or pid not in self._agents:  # a fresh conversation
            self._agents[pid] = teacher(self.problems[pid], self.seed, quote_items=self.quote_items,
                                        count_items=self.count_items, list_items=self.list_items)
        return self._agents[pid].act(problem_view, messages, tools)
