"""Hand-built canonical normalised traces in the shapes of reference §2 / docs/architecture.md.

Each builder returns (row, designed_score). The thinking texts imitate the miner styles of the
simulator (restate / vague / datum / compare / teacher) and of scripted and sub-task runs.
"""

from __future__ import annotations

import json

QUERY = "Looking for a grey unisex racing t-shirt in extra small, priced from 324 to 623 pesos."

PRODUCTS = [
    {"product_id": "3350592664", "shop_id": "88120", "title": "TRD Racing Toyota Motorsport T-Shirt Dri-Fit Unisex",
     "price": 499.0, "service": ["freeShipping"], "sold_count": 1203},
    {"product_id": "4410021907", "shop_id": "55018", "title": "Velocity Pit Crew Jersey Shirt Unisex Microfiber",
     "price": 689.0, "service": ["COD"], "sold_count": 310},
    {"product_id": "2291837445", "shop_id": "88120", "title": "Checkered Flag Graphic Tee Cotton Oversized",
     "price": 350.0, "service": [], "sold_count": 95},
]
DETAILS = [
    {"product_id": "3350592664", "short_description": "Quick dry racing tee", "description": "Breathable microfiber.",
     "sku_options": {"1": {"size": "int:xs", "color_family": "grey"}, "2": {"size": "int:m", "color_family": "black"}},
     "attributes": {"material": ["polyester"], "brand": ["Apexwear"]}},
    {"product_id": "4410021907", "short_description": "Crew jersey", "description": "Made for race fans.",
     "sku_options": {"1": {"size": "int:l", "color_family": "navy"}}, "attributes": {"material": ["nylon"]}},
]


def _step(n: int, think: str, calls: list[tuple[str, dict, object]], tokens: int | None, *, emitted: bool = True,
          response: str = "") -> tuple[dict, list[dict]]:
    tool_calls, messages, ev_calls, search = [], [], [], []
    for i, (name, args, result) in enumerate(calls):
        cid = f"call_{n}_{i}"
        tool_calls.append({"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}})
        ids = [str(r["product_id"]) for r in result] if isinstance(result, list) else []
        ev_calls.append({"id": cid, "name": name, "arguments": json.dumps(args), "result_product_ids": ids})
        if name in ("find_product", "view_product_information"):
            search.append({"path": f"/search/{name}", "params": args, "result_product_ids": ids})
    messages.append({"role": "assistant", "content": response, "reasoning_content": think or None,
                     "tool_calls": tool_calls})
    for (name, _args, result), tc in zip(calls, tool_calls, strict=True):
        messages.append({"role": "tool", "tool_call_id": tc["id"], "name": name, "content": json.dumps(result)})
    inference = []
    if tokens is not None:
        inference.append({"completion_tokens": tokens, "tool_call_names": [c[0] for c in calls] if emitted else [],
                          "content": think[:2000], "status_code": 200, "truncated": False})
    step = {"step": n, "timestamp": 1_767_225_600_000 + n * 1000, "think": think, "tool_calls": ev_calls,
            "inference": inference, "search": search}
    return step, messages


def build_row(steps_spec: list[tuple[str, list, int | None]], *, query: str = QUERY, trace_id: str = "tr_fixture",
              as_strings: bool = True, emitted: bool = True) -> dict:
    messages: list[dict] = [{"role": "system", "content": "You are a shopping agent."}, {"role": "user", "content": query}]
    steps = []
    for n, (think, calls, tokens) in enumerate(steps_spec, start=1):
        step, msgs = _step(n, think, calls, tokens, emitted=emitted)
        steps.append(step)
        messages.extend(msgs)
    row = {"trace_id": trace_id, "partition": "2026-01-02", "format": "oro_envelope", "query": query, "meta": {},
           "messages": messages, "steps": steps, "n_steps": len(steps),
           "n_tool_calls": sum(len(s["tool_calls"]) for s in steps)}
    if as_strings:
        for key in ("messages", "steps", "meta"):
            row[key] = json.dumps(row[key])
    return row


SEARCH = ("find_product", {"q": "grey unisex racing t-shirt", "price": "324-623"}, PRODUCTS)
VIEW = ("view_product_information", {"product_ids": "3350592664,4410021907"}, DETAILS)
RECOMMEND = ("recommend_product", {"product_ids": "3350592664"}, "Recommendation recorded.")
TERMINATE = ("terminate", {"status": "success"}, "Terminated.")


def no_inference(**kw) -> tuple[dict, float]:
    return build_row([("", [SEARCH], None), ("", [RECOMMEND], None), ("", [TERMINATE], None)], **kw), 0.1


def subtask_yes_no(**kw) -> tuple[dict, float]:
    # a harness loop: the model only answers "yes" (2 completion tokens) and narrates nothing
    return build_row([("yes", [SEARCH], 2), ("yes", [RECOMMEND], 2), ("", [TERMINATE], 1)], emitted=False, **kw), 0.1


def restate(**kw) -> tuple[dict, float]:
    q = QUERY
    return build_row([
        (f'The user says: "{q}". So the user wants exactly what they described in the request. I will search for it now.',
         [SEARCH], 64),
        (f'The user asked for: "{q}". I should look at the product details to be sure about it.', [VIEW], 58),
        (f'The user wants: "{q}". I will go with what fits this request.', [RECOMMEND], 51),
        ("The request has been handled.", [TERMINATE], 31),
    ], **kw), 0.3


def vague(**kw) -> tuple[dict, float]:
    return build_row([
        ("I should look for the item the user described. A keyword search with the main product words should surface "
         "good options; then I can narrow them down by checking the details.", [SEARCH], 72),
        ("Several results look relevant, and the request has specific options, so I should open the detail pages of "
         "the top options to check their variants and attributes.", [VIEW], 66),
        ("Looking over the results, one option matches the requested features and stays within the budget, while the "
         "others miss something. I will pick that one.", [RECOMMEND], 60),
        ("The recommendation has been made, so the task is complete.", [TERMINATE], 33),
    ], **kw), 0.5


def datum(**kw) -> tuple[dict, float]:
    return build_row([
        ("The user wants grey unisex racing t-shirt (price 324-623). I will search with the key words and filters, "
         "then compare the results.", [SEARCH], 70),
        ("Product 3350592664 is priced at 499, which looks plausible. I need to check its options (size int:xs; "
         "color_family grey), so I will view the product details.", [VIEW], 80),
        ("Product 3350592664 ('TRD Racing Toyota Motorsport T-Shirt Dri-Fit Unisex') costs 499 and offers "
         "freeShipping; it fits the request, so I will choose it.", [RECOMMEND], 77),
        ("Recommendation sent; finishing.", [TERMINATE], 35),
    ], **kw), 0.7


def compare(**kw) -> tuple[dict, float]:
    return build_row([
        ("The user wants grey unisex racing t-shirt (price 324-623). I will search with the key words and filters, "
         "then compare the results.", [SEARCH], 70),
        ("Candidates: 3350592664 at 499; 4410021907 at 689. The request needs size int:xs; I will verify their details.",
         [VIEW], 75),
        ("Comparing 3350592664 (price 499) with 4410021907 (price 689): 4410021907 costs 689, outside the range "
         "324-623, so 3350592664 is the better choice.", [RECOMMEND], 90),
        ("Recommendation sent; finishing.", [TERMINATE], 35),
    ], **kw), 0.9


def teacher(**kw) -> tuple[dict, float]:
    return build_row([
        ("Item 1: words grey unisex racing; price 324-623; service none. Search.", [SEARCH], 40),
        ("3350592664: price 499 in 324-623 yes; words yes; service yes\n4410021907: price 689 in 324-623 no; words yes; "
         "service yes\nChoose 3350592664.", [RECOMMEND], 95),
        ("Done.", [TERMINATE], 30),
    ], **kw), 0.9


def brand_datum(**kw) -> tuple[dict, float]:
    # gate 3 through a brand value seen in a viewed product (no id, no price)
    return build_row([
        ("I will search for racing shirts.", [SEARCH], 40),
        ("I will open the details of the top two.", [VIEW], 40),
        ("The first one is made by Apexwear in polyester; that looks right.", [RECOMMEND], 60),
    ], **kw), 0.7


def cites_query_only(**kw) -> tuple[dict, float]:
    # numbers and words from the query are not data from results: stays at gate 2 or below
    return build_row([
        ("Searching grey racing tee between 324 and 623.", [SEARCH], 40),
        ("I want something grey between 324 and 623 in extra small; I will recommend now.", [RECOMMEND], 40),
    ], **kw), 0.3


def premature_datum(**kw) -> tuple[dict, float]:
    # the id appears in thinking BEFORE any result contained it: not grounded (a shortcut's guess)
    return build_row([
        ("I already know 3350592664 and 4410021907 are good because 3350592664 is cheaper at 499.", [SEARCH], 60),
        ("Recommend now.", [RECOMMEND], 31),
    ], **kw), 0.3


ALL_BUILDERS = [no_inference, subtask_yes_no, restate, vague, datum, compare, teacher, brand_datum, cites_query_only,
                premature_datum]
