"""Realistic example records of the four raw firehose formats (reference §2).

Used by tests and by ``benchmarks/ingest_throughput.py`` when the arena's firehose simulator is not
available. Every builder is deterministic for a given seed. The shapes follow the real ORO sandbox
harness: results inside ``completion.message.tool_call[i].result``, 8-character md5 call ids that
collide for identical calls, proxy calls with OpenAI chat-completion ``response`` bodies (truncated
at 2000 characters with ``response_truncated`` / ``response_length``), ``kind: "attempt"`` retries.
"""

from __future__ import annotations

import base64
import hashlib
import random
from typing import Any

from oro_assets import jsonio

TRUNCATE_AT = 2000

_WORDS = ["wireless", "earbuds", "noise", "cancelling", "bluetooth", "charging", "case", "sport", "waterproof", "black", "white", "stainless", "steel", "water", "bottle", "insulated", "vacuum", "leakproof", "kids", "school", "lunch", "box", "bento", "silicone", "running", "shoes", "men", "women", "breathable", "mesh", "cushion", "trail", "hiking", "backpack", "laptop", "travel", "usb"]
_SERVICES = ("official", "freeShipping", "COD", "flashsale")
_BASE_TS = 1_767_225_600_000  # 2026-01-01T00:00:00Z in ms


def oro_call_id(name: str, parameters: Any) -> str:
    """ORO's call id: 8 chars of urlsafe-b64(md5(f"{name}\\n{parameters}")) with ``=+/`` stripped."""
    digest = hashlib.md5(f"{name}\n{parameters}".encode()).digest()
    text = base64.urlsafe_b64encode(digest).decode()
    for ch in "=+/":
        text = text.replace(ch, "")
    return text[:8]


def _product(rng: random.Random, words: list[str]) -> dict[str, Any]:
    pid = str(rng.randrange(10**9, 10**10))
    title = " ".join(rng.sample(words, k=min(len(words), 3)) + rng.sample(_WORDS, k=4)).title()
    return {
        "product_id": pid,
        "shop_id": str(rng.randrange(10**5, 10**6)),
        "title": title,
        "price": round(rng.uniform(3, 300), 2),
        "service": rng.sample(_SERVICES, k=rng.randint(0, 2)),
        "sold_count": rng.randrange(0, 20000),
    }


def _details(rng: random.Random, product: dict[str, Any]) -> dict[str, Any]:
    return {
        "product_id": product["product_id"],
        "short_description": product["title"],
        "description": " ".join(rng.choices(_WORDS, k=60)),
        "sku_options": {"1": {"color": rng.choice(["black", "white", "blue"])}, "2": {"size": "M"}},
        "attributes": {"material": [rng.choice(["plastic", "steel", "cotton"])], "brand": ["Acme"]},
        "service": product["service"],
        "price": product["price"],
    }


def _completion_response(rng: random.Random, think: str, calls: list[tuple[str, dict]], label_only: bool) -> dict:
    """An OpenAI chat-completion body as the inference proxy returns it."""
    message: dict[str, Any] = {"role": "assistant", "content": "", "reasoning_content": think}
    if label_only:
        message["content"] = rng.choice(["search", "view", "recommend", "Looking at the candidates."])
    else:
        message["tool_calls"] = [
            {"id": f"chatcmpl-tool-{rng.getrandbits(48):012x}", "type": "function",
             "function": {"name": name, "arguments": jsonio.dumps(args)}}
            for name, args in calls
        ]
    return {
        "id": f"chatcmpl-{rng.getrandbits(64):016x}",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "Qwen/Qwen3-32B",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": rng.randint(800, 6000), "completion_tokens": rng.randint(40, 600),
                  "total_tokens": 0},
    }


def _proxy_inference(rng: random.Random, ts: int, response: dict, attempt_first: bool) -> list[dict]:
    body = jsonio.dumps(response)
    entry: dict[str, Any] = {
        "kind": "summary", "method": "POST", "path": "/inference/chat/completions", "timestamp": ts,
        "duration_ms": round(rng.uniform(500, 6000), 1), "status_code": 200,
        "json_data": {"model": response["model"], "temperature": 0.2},
    }
    if len(body) > TRUNCATE_AT:
        entry.update(response=body[:TRUNCATE_AT], response_truncated=True, response_length=len(body))
    else:
        entry["response"] = response
    out = [entry]
    if attempt_first:
        out.insert(0, {"kind": "attempt", "method": "POST", "path": "/inference/chat/completions",
                       "timestamp": ts - 900, "duration_ms": 880.0, "status_code": 502,
                       "json_data": {"model": response["model"], "temperature": 0.2}})
    return out


def _proxy_search(path: str, ts: int, params: dict, result: Any) -> dict:
    body = jsonio.dumps(result)
    entry: dict[str, Any] = {"kind": "summary", "method": "POST", "path": path, "timestamp": ts,
                             "duration_ms": 85.0, "status_code": 200, "json_data": params}
    if len(body) > TRUNCATE_AT:
        ids = [r["product_id"] for r in result if isinstance(r, dict) and "product_id" in r]
        entry.update(response=body[:TRUNCATE_AT], response_truncated=True, response_length=len(body),
                     result_product_ids=ids)
    else:
        entry["response"] = result
    return entry


def _harness_content(think: str, calls: list[dict], response: str) -> str:
    payload = [{"name": c["name"], "parameters": c["parameters"]} for c in calls]
    text = f"<think>{think}</think>\n" if think else ""
    if payload:
        text += f"<tool_call>{jsonio.dumps(payload)}</tool_call>"
    return text + response


def oro_dialogue(seed: int, *, problem_id: str | None = None, query: str | None = None,
                 subtask: bool = False, unpaired: bool = False) -> list[dict[str, Any]]:
    """A realistic ORO dialogue (list of steps): search, maybe search again, view, recommend, terminate.

    ``subtask=True`` makes inference responses carry only labels (a scripted loop drives the tools);
    ``unpaired=True`` drops the result of the view call.
    """
    rng = random.Random(seed)
    words = rng.sample(_WORDS, k=4)
    query = query or f"I want {' '.join(words)} under {rng.randint(20, 200)} dollars"
    problem_id = problem_id or f"{rng.getrandbits(128):032x}"
    ts = _BASE_TS + rng.randrange(0, 86_400_000)
    products = [_product(rng, words) for _ in range(10)]
    chosen = products[rng.randrange(3)]
    searches = [{"q": " ".join(words)}]
    if rng.random() < 0.5:
        searches.append({"q": " ".join(words[:2]), "page": 1, "sort": "priceasc"})
    plan: list[tuple[str, list[tuple[str, dict]], str]] = []
    for s in searches:
        plan.append((f"Search the catalogue for {s['q']} to find candidates matching the query.",
                     [("find_product", s)], ""))
    plan.append((f"Candidates {products[0]['product_id']} at {products[0]['price']} and "
                 f"{products[1]['product_id']} at {products[1]['price']}; view both to check attributes.",
                 [("view_product_information", {"product_ids": f"{products[0]['product_id']},{products[1]['product_id']}"})],
                 ""))
    plan.append((f"{chosen['product_id']} matches the title and price, recommend it.",
                 [("recommend_product", {"product_ids": chosen["product_id"]})], ""))
    plan.append(("Done.", [("terminate", {"status": "success"})], "I recommended the best match."))

    steps: list[dict[str, Any]] = []
    for n, (think, calls, response) in enumerate(plan, start=1):
        ts += rng.randint(1500, 9000)
        tool_calls: list[dict[str, Any]] = []
        proxy: list[dict[str, Any]] = []
        inference = _completion_response(rng, think, calls, label_only=subtask)
        proxy.extend(_proxy_inference(rng, ts - 400, inference, attempt_first=rng.random() < 0.15))
        for name, args in calls:
            if name == "find_product":
                result: Any = [dict(p) for p in products]
                proxy.append(_proxy_search("/search/find_product", ts - 100, args, result))
            elif name == "view_product_information":
                result = [_details(rng, p) for p in products[:2]]
                proxy.append(_proxy_search("/search/view_product_information", ts - 100, args, result))
            elif name == "recommend_product":
                result = f"Recommended: {args['product_ids']}"
            else:
                result = "terminated"
            # ORO sometimes stores parameters as a JSON string.
            params: Any = jsonio.dumps(args) if rng.random() < 0.2 else args
            call = {"name": name, "parameters": params, "tool_call_id": oro_call_id(name, args)}
            if not (unpaired and name == "view_product_information"):
                call["result"] = result
            tool_calls.append(call)
        message = {"think": think, "tool_call": tool_calls, "response": response}
        steps.append({
            "completion": {"reasoning_content": "", "content": _harness_content(think, tool_calls, response),
                           "message": message},
            "extra_info": {"step": n, "query": query, "timestamp": ts, "problem_id": problem_id,
                           "execution_time": round(rng.uniform(1, 9), 2), "proxy_calls": proxy},
        })
    return steps


def oro_envelope(seed: int, **kwargs: Any) -> dict[str, Any]:
    """ORO sandbox envelope with validator metadata."""
    rng = random.Random(seed + 1)
    dialogue = oro_dialogue(seed, **kwargs)
    extra = dialogue[0]["extra_info"]
    n_inf = sum(1 for s in dialogue for p in s["extra_info"]["proxy_calls"]
                if p["path"].startswith("/inference") and p["kind"] == "summary")
    return {
        "problem_id": extra["problem_id"], "status": "success", "execution_time": 41.2,
        "inference_failure_count": 0, "inference_total": n_inf, "error": None, "dialogue": dialogue,
        "eval_run_id": f"run-{seed % 7}", "agent_version_id": f"av-{rng.getrandbits(32):08x}",
        "miner_hotkey": f"5F{rng.getrandbits(64):016x}", "race_id": "race-42", "suite_version": "v1",
        "category": "Product", "query": extra["query"], "recorded_at": "2026-01-01T03:04:05Z",
        "score": {"gt": 0.0, "rule": 1.0, "format": 1.0, "success": True},
        "reasoning": {"score": 0.7, "explanation": "Gate 4 failed: single candidate", "model": "judge-1"},
    }


def shoppingbench_rollout(seed: int) -> list[dict[str, Any]]:
    """ShoppingBench's own rollout: steps carry ``prompt`` and results sit in ``message.obs``."""
    dialogue = oro_dialogue(seed)
    query = dialogue[0]["extra_info"]["query"]
    prompt = [{"role": "system", "content": "You are a shopping assistant. Use the tools."},
              {"role": "user", "content": query}]
    steps = []
    for step in dialogue:
        msg = step["completion"]["message"]
        calls = [{k: c[k] for k in ("name", "parameters", "tool_call_id")} for c in msg["tool_call"]]
        obs = [{"tool_call_id": c["tool_call_id"], "results": c["result"]} for c in msg["tool_call"] if "result" in c]
        steps.append({
            "prompt": prompt,
            "completion": {"content": step["completion"]["content"],
                           "message": {"think": msg["think"], "tool_call": calls, "response": msg["response"],
                                       "obs": obs}},
            "extra_info": {k: v for k, v in step["extra_info"].items() if k != "proxy_calls"},
        })
    return steps


def openai_row(seed: int) -> dict[str, Any]:
    """A canonical OpenAI row (``messages`` + ``tools``) as exported by other corpora."""
    dialogue = oro_dialogue(seed)
    query = dialogue[0]["extra_info"]["query"]
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a shopping assistant."},
                                      {"role": "user", "content": query}]
    for n, step in enumerate(dialogue):
        msg = step["completion"]["message"]
        calls = []
        for i, c in enumerate(msg["tool_call"]):
            args = c["parameters"] if isinstance(c["parameters"], str) else jsonio.dumps(c["parameters"])
            calls.append({"id": f"call_{seed}_{n}_{i}", "type": "function",
                          "function": {"name": c["name"], "arguments": args}})
        messages.append({"role": "assistant", "content": msg["response"], "reasoning_content": msg["think"],
                         "tool_calls": calls})
        for call, c in zip(calls, msg["tool_call"], strict=True):
            res = c["result"]
            messages.append({"role": "tool", "tool_call_id": call["id"], "name": c["name"],
                             "content": res if isinstance(res, str) else jsonio.dumps(res)})
    tools = [{"type": "function", "function": {"name": n, "description": n, "parameters": {"type": "object"}}}
             for n in ("find_product", "view_product_information", "recommend_product", "terminate")]
    return {"messages": messages, "tools": tools, "problem_id": dialogue[0]["extra_info"]["problem_id"],
            "source": "public_sft"}
