"""Training text for the tiny profile: tokenizer corpus, copy drills, synthetic train problems.

* ``arena_corpus_texts``: what the word-level tokenizer is trained on (catalogue titles, queries,
  tool schemas, rendered example chats) - the arena's text, no labels.
* ``synthetic_product_problems``: Product problems generated from catalogue products (title key
  words + a price range around the product's price), so the teacher can produce trajectories in any
  quantity. Products in ``exclude_product_ids`` (eval ground truths) are never used.
* ``copy_drill_rows``: short chats whose assistant turn copies words from the user turn into a
  ``find_product`` call, then choose the one made-up hit that fits - the warm-up phase that teaches
  the output embeddings every catalogue word and the choice by verdicts. Words only; no problem, no answer.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable, Sequence
from typing import Any

from oro_assets.arena.generator import SERVICE_PHRASES
from oro_assets.training.data import normalise_messages
from oro_assets.training.views import attribute_text, option_text

_OPENERS = ["Looking for a {x}.", "Show me a {x}.", "I want to buy a {x}.", "Find me a {x}."]
_BETWEEN = ["priced between {lo} and {hi} pesos", "priced from {lo} to {hi} PHP", "costing between {lo} and {hi} pesos"]
_UNDER = ["under {hi} pesos", "priced under {hi} PHP", "costing less than {hi} pesos"]
_OVER = ["over {lo} pesos", "priced over {lo} PHP", "costing more than {lo} pesos"]


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def synthetic_product_problems(catalogue: Iterable[dict], n: int, seed: int,
                               exclude_product_ids: Iterable[str] = (), *, n_words: tuple[int, int] = (3, 5),
                               price_kinds: Sequence[str] = ("between", "between", "less", "greater")) -> list[dict]:
    """``n`` easy Product problems over catalogue products not in ``exclude_product_ids``."""
    excluded = set(map(str, exclude_product_ids))
    pool = sorted((p for p in catalogue if str(p["product_id"]) not in excluded and p.get("title")),
                  key=lambda p: str(p["product_id"]))
    rng = random.Random(seed)
    out = []
    for i in range(n):
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
        query = _OPENERS[style % 4].format(x=f"{key} {phrase}")
        out.append({
            "problem_id": f"syn_{seed}_{i}", "query": query, "category": "Product", "difficulty": "easy",
            "title": "Synthetic product", "source": "synthetic",
            "reward": {"product_id": str(p["product_id"]), "title": [p["title"]], "price": cons},
        })
    return out


def copy_drill_rows(catalogue: Iterable[dict], n: int, seed: int, system_prompt: str,
                    tools: Sequence[dict]) -> list[dict]:
    """``n`` short chats that exercise the two copies an episode needs, in the chat format.

    Turn 1: the user names words + a price range, the assistant copies them into ``find_product``.
    Turn 2: the tool returns 3 made-up hits (random words, prices, 10-digit ids); the assistant
    writes the per-candidate verdicts, chooses the one hit that fits (at a random rank) and names
    its id in ``recommend_product`` (its handle, under the compact view). Made-up ids and titles: no
    problem, no real answer.
    """
    vocab = sorted({w.lower() for p in catalogue for w in str(p.get("title", "")).split() if w.isalpha()})
    if not vocab:
        return []
    rng = random.Random(seed)
    rows = []
    tools_json = json.dumps(list(tools), ensure_ascii=False)
    for i in range(n):
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
        # as the teacher writes them (arena.policies.base): the filter "lo-", the thinking "lo-up"
        price_words = f"{lo}-up" if kind == "greater" else price_arg
        # service clauses in the arena's own phrasing (ordered as the teacher's argument lists them)
        services = sorted(rng.sample(list(SERVICE_PHRASES), rng.choice((0, 0, 1, 1, 2))), key=list(SERVICE_PHRASES).index)
        clauses = [rng.choice(SERVICE_PHRASES[sv]) for sv in services]
        rng.shuffle(clauses)
        parts = clauses + [phrase]  # joined like arena.generator's item text: "a, b and c"
        text = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]
        query = _OPENERS[style % 4].format(x=f"{words} {text}")
        call = {"q": words, "price": price_arg}
        if services:
            call["service"] = ",".join(services)
        args = json.dumps(call)
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
                             "function": {"name": "find_product", "arguments": args}}]},
            {"role": "tool", "tool_call_id": "call_1_0", "name": "find_product", "content": json.dumps(hits)},
            {"role": "assistant", "content": "", "reasoning_content": "\n".join(verdicts + [f"Choose {pick}."]),
             "tool_calls": [{"id": "call_2_0", "type": "function",
                             "function": {"name": "recommend_product",
                                          "arguments": json.dumps({"product_ids": pick})}}]},
        ]
        rows.append({"id": f"drill_{seed}_{i}", "messages": normalise_messages(messages), "tools": tools_json,
                     "source": "copy_drill"})
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
    texts: list[str] = [SYSTEM_PROMPT, json.dumps(list(tools), ensure_ascii=False), ",".join(SERVICES),
                        RECOMMEND_RESULT, TERMINATE_RESULT, SCAFFOLD_TEXT]
    for p in catalogue:
        # titles, and the SKU options / attributes the compact view shows after view_product_information
        texts.append(f"{p.get('title', '')} | {option_text(p)} | {attribute_text(p)}")
    texts.extend(str(p.get("query", "")) for p in problems)
    texts.extend(extra)
    return texts


def rendered_examples(tokenizer: Any, rows: Sequence[dict], view: str, limit: int = 50) -> list[str]:
    """A few training chats rendered with the chat template (so role words and JSON keys are in the vocab)."""
    from oro_assets.training.data import sft_example

    out = []
    for r in rows[:limit]:
        ex = sft_example(r, view)
        out.append(tokenizer.apply_chat_template(ex["messages"], tools=json.loads(ex["tools"]), tokenize=False))
    return out
