"""Realistic example records of the four raw firehose formats (reference §2).

Used by tests and by ``benchmarks/ingest_throughput.py``. Every builder is deterministic for a
given seed, and every ORO record goes through the arena's recorder (``arena/recorder.py``, ORO's
recording rules): results inside ``completion.message.tool_call[i].result``, 8-character md5 call
ids that collide for identical calls, answers in the three answer shapes, bodies over 2,000
characters dropped, calls bucketed onto steps by ORO's timestamp rule.
"""

from __future__ import annotations

import base64
import hashlib
import random
from collections.abc import Callable
from typing import Any

from oro_assets import jsonio
from oro_assets.toolcalls import FIND_PRODUCT, RECOMMEND_PRODUCT, TERMINATE, VIEW_PRODUCT_INFORMATION

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
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    if label_only:  # the model only classifies; the harness writes the step's thinking and calls
        message["content"] = rng.choice(["search", "view", "recommend", "Looking at the candidates."])
    else:
        message["reasoning_content"] = think
        message["tool_calls"] = [
            {"id": f"chatcmpl-tool-{rng.getrandbits(48):012x}", "type": "function",
             "function": {"name": name, "arguments": args if isinstance(args, str) else jsonio.dumps(args)}}
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


SHAPES = ("text_array", "qwen3_object", "structured")


Plan = list[tuple[str, list[tuple[str, Any]], str]]  # per step: (think, [(tool, parameters)], response)


def oro_run(seed: int, *, problem_id: str | None = None, query: str | None = None,
            subtask: bool = False, unpaired: bool = False, shape: str | None = None,
            edit: Callable[[Plan], Plan] | None = None, inference: bool = True,
            era: str = "a6b1cf3") -> dict[str, Any]:
    """A realistic ORO sandbox envelope (no export metadata), written by the arena's recorder with
    ORO's rules: search, maybe search again, view, recommend, terminate.

    ``subtask=True``: a scripted loop drives the tools and the model only labels; ``unpaired=True``
    drops the result of the view call; ``shape``: the answer shape (default: by seed); ``edit``:
    changes the agent's plan before it runs (a defect of the agent, recorded like any run);
    ``inference=False``: a scripted agent that never calls a model; ``era``: which of ORO's recorders
    writes the record (``a6b1cf3``, or ``later``: whole bodies and the requests' ``messages``)."""
    from oro_assets.arena import recorder
    from oro_assets.arena.answers import render_answer

    rng = random.Random(seed)
    shape = shape or SHAPES[seed % len(SHAPES)]
    words = rng.sample(_WORDS, k=4)
    query = query or f"I want {' '.join(words)} under {rng.randint(20, 200)} dollars"
    problem_id = problem_id or f"{rng.getrandbits(128):032x}"
    started = ts = _BASE_TS + rng.randrange(0, 86_400_000)
    products = [_product(rng, words) for _ in range(10)]
    chosen = products[rng.randrange(3)]
    searches = [{"q": " ".join(words)}]
    if rng.random() < 0.5:
        searches.append({"q": " ".join(words[:2]), "page": 1, "sort": "priceasc"})
    plan: list[tuple[str, list[tuple[str, dict]], str]] = []
    for q in searches:
        plan.append((f"Search the catalogue for {q['q']} to find candidates matching the query.",
                     [(FIND_PRODUCT, q)], ""))
    plan.append((f"Candidates {products[0]['product_id']} at {products[0]['price']} and "
                 f"{products[1]['product_id']} at {products[1]['price']}; view both to check attributes.",
                 [(VIEW_PRODUCT_INFORMATION, {"product_ids": f"{products[0]['product_id']},{products[1]['product_id']}"})],
                 ""))
    plan.append((f"{chosen['product_id']} matches the title and price, recommend it.",
                 [(RECOMMEND_PRODUCT, {"product_ids": chosen["product_id"]})], ""))
    plan.append(("Done.", [(TERMINATE, {"status": "success"})], "I recommended the best match."))
    if edit is not None:
        plan = edit(plan)

    events: list[Any] = []
    steps: list[dict[str, Any]] = []
    n_inference = n_failed = 0
    request = recorder.inference_request("Qwen/Qwen3-32B")
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a shopping assistant. Use the tools."},
                                     {"role": "user", "content": query}]
    for n, (think, calls, response) in enumerate(plan, start=1):
        sent = list(history)
        if not inference:
            ts += rng.randint(1, 40)
        elif rng.random() < 0.1:  # a request that failed whole before the answer
            ts += rng.randint(200, 900)
            events.append(recorder.ProxyEvent("POST", recorder.INFERENCE_PATH, ts, 900.0, 502,
                                              json_data=dict(request), request_messages=sent))
            n_inference += 1
            n_failed += 1
        if inference:
            duration = rng.uniform(500, 6000)
            ts += int(duration)
            answer = _completion_response(rng, think, calls, label_only=subtask)
            events.append(recorder.ProxyEvent("POST", recorder.INFERENCE_PATH, ts, duration, 200,
                                              json_data=dict(request), body=render_answer(answer, shape),
                                              request_messages=sent))
            n_inference += 1
        oro_calls: list[dict[str, Any]] = []
        for name, args in calls:
            if name == FIND_PRODUCT:
                result: Any = [dict(p) for p in products]
            elif name == VIEW_PRODUCT_INFORMATION:
                result = [_details(rng, p) for p in products[:2]]
            elif name == RECOMMEND_PRODUCT:
                ids = args.get("product_ids") if isinstance(args, dict) else args
                result = f"Having recommended the products to the user: {ids}."
            else:
                result = f"The interaction has been completed with status: {args['status']}"
            path = recorder.SEARCH_PATHS.get(name)
            if path is not None and isinstance(args, dict):
                ts += 85
                events.append(recorder.ProxyEvent("GET", path, ts, 85.0, 200,
                                                  params=recorder.search_params(name, args), body=result))
            call = {"name": name, "parameters": args, "tool_call_id": oro_call_id(name, args), "result": result}
            if unpaired and name == VIEW_PRODUCT_INFORMATION:
                del call["result"]
            oro_calls.append(call)
        history.append({"role": "assistant", "content": recorder.format_content(think, oro_calls, response)})
        history.extend({"role": "tool", "content": recorder.oro_json(c.get("result"))} for c in oro_calls)
        ts += rng.randint(0, 30)  # the step is stamped after its own calls (ties within 1 ms happen)
        steps.append(recorder.dialogue_step(think, oro_calls, response, query, n, ts))
    return recorder.format_envelope(
        problem_id=problem_id, query=query, status="success", dialogue=steps, events=events,
        execution_time=round((ts - started) / 1000.0 + 0.05, 3), inference_failure_count=n_failed,
        inference_total=n_inference, error=None, written_ms=ts + 5, era=era)


def oro_dialogue(seed: int, **kwargs: Any) -> list[dict[str, Any]]:
    """The dialogue of :func:`oro_run` (the per-problem S3 payload)."""
    return oro_run(seed, **kwargs)["dialogue"]


def oro_envelope(seed: int, **kwargs: Any) -> dict[str, Any]:
    """ORO sandbox envelope with the metadata a back-end export adds."""
    rng = random.Random(seed + 1)
    envelope = oro_run(seed, **kwargs)
    extra = envelope["dialogue"][0]["extra_info"]
    dialogue = envelope.pop("dialogue")
    envelope.update({
        "eval_run_id": f"run-{seed % 7}", "agent_version_id": f"av-{rng.getrandbits(32):08x}",
        "miner_hotkey": f"5F{rng.getrandbits(64):016x}", "race_id": "race-42", "suite_version": "v1",
        "category": "Product", "query": extra["query"], "recorded_at": "2026-01-01T03:04:05Z",
        "score": {"gt": 0.0, "rule": 1.0, "format": 1.0, "success": True},
        "reasoning": {"score": 0.7, "explanation": "Gate 4 failed: single candidate", "model": "judge-1"},
    })
    envelope["dialogue"] = dialogue
    return envelope


def shoppingbench_rollout(seed: int) -> list[dict[str, Any]]:
    """ShoppingBench's own rollout: steps carry ``prompt`` and results sit in ``message.obs``."""
    dialogue = oro_dialogue(seed)
    query = dialogue[0]["extra_info"]["query"]
    prompt = [{"role": "system", "content": "You are a shopping assistant. Use the tools."},
              {"role": "user", "content": query}]
    steps = []
    for step in dialogue:
        msg = step["completion"]["message"]
        raw = msg.get("tool_call") or []
        calls = [{k: c[k] for k in ("name", "parameters", "tool_call_id")} for c in raw]
        obs = [{"tool_call_id": c["tool_call_id"], "results": c["result"]} for c in raw if "result" in c]
        steps.append({
            "prompt": prompt,
            "completion": {"content": step["completion"]["content"],
                           "message": {"think": msg.get("think", ""), "tool_call": calls,
                                       "response": msg.get("response", ""), "obs": obs}},
            "extra_info": {k: v for k, v in step["extra_info"].items() if k != "proxy_calls"},
        })
    return steps


def openai_row(seed: int) -> dict[str, Any]:
    """An OpenAI row (``messages`` + ``tools``) as the published SN15 SFT set writes it: tools in the
    flat form ``{"type": "function", "name", "description", "parameters"}``."""
    dialogue = oro_dialogue(seed)
    query = dialogue[0]["extra_info"]["query"]
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a shopping assistant."},
                                      {"role": "user", "content": query}]
    for n, step in enumerate(dialogue):
        msg = step["completion"]["message"]
        calls = []
        for i, c in enumerate(msg.get("tool_call") or []):
            args = c["parameters"] if isinstance(c["parameters"], str) else jsonio.dumps(c["parameters"])
            calls.append({"id": f"call_{seed}_{n}_{i}", "type": "function",
                          "function": {"name": c["name"], "arguments": args}})
        messages.append({"role": "assistant", "content": msg.get("response", ""),
                         "reasoning_content": msg.get("think", ""), "tool_calls": calls})
        for call, c in zip(calls, msg.get("tool_call") or [], strict=True):
            res = c["result"]
            messages.append({"role": "tool", "tool_call_id": call["id"], "name": c["name"],
                             "content": res if isinstance(res, str) else jsonio.dumps(res)})
    tools = [{"type": "function", "name": n, "description": n,
              "parameters": {"type": "object", "additionalProperties": True}}
             for n in (FIND_PRODUCT, VIEW_PRODUCT_INFORMATION, RECOMMEND_PRODUCT, TERMINATE)]
    return {"messages": messages, "tools": tools, "problem_id": dialogue[0]["extra_info"]["problem_id"],
            "source": "public_sft"}
