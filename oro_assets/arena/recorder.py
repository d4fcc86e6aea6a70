"""ORO's recording rules, in one place: what the sandbox harness writes for one problem run.

Read from ORO-AI/oro at a6b1cf3 (reference §2) and re-stated here, never copied:

* ``proxy_client.RequestLog.record`` writes one *summary* entry per HTTP request when it has
  finished (``timestamp`` = the call's end, in ms). GET searches log ``params`` as the agent sent
  them (``q`` already ``quote_plus``-encoded, ``page`` filled in, ``None`` values dropped); POST
  inference logs ``json_data`` without ``messages``. The body is kept only when
  ``json.dumps(body, default=str)`` is at most 2,000 characters; otherwise only
  ``response_truncated`` and ``response_length`` (and ``result_product_ids`` for a
  ``find_product`` list) remain. A failed request has no body at all. Retries inside one request
  are ``attempt`` entries, which the harness removes before the envelope is written.
* ``agent_interface.create_dialogue_step`` stamps a step when it is created, i.e. after its own
  inference and tool calls; ``message`` holds only the non-empty parts; ``content`` is
  re-rendered from them with ``json.dumps`` and ``<think>``/``<tool_call>``/``<response>`` tags.
* ``sandbox_executor._format_single_result`` fills ``step``/``query``/``timestamp``/``problem_id``
  where missing, puts the run's ``execution_time`` on the first step only, and buckets each
  summary call onto the last step stamped at or before it (calls before every step go to step 1);
  a step that gets no call has no ``proxy_calls`` key. Status is upper case; a failed or timed-out
  run has ``dialogue: null``. A dialogue too large for the child's result pipe (64 KiB) blocks
  the child, which is then killed: TIMED_OUT with a null dialogue.
* The reference agent (``src/agent/agent.py``) appends an auto-recommend step written by code
  when the model never called ``recommend_product``.

ORO's later recording (ShoppingBench era after a6b1cf3, read at eecdeecf; reference §2b) is the
``later`` era here (``era=ERA_LATER``): no body is dropped (every response is kept whole, no
``response_truncated``/``response_length``), every ``find_product`` list also gets
``result_product_ids``, the inference entry keeps the request's ``messages`` (system, user and every
earlier turn), and the executor drains the result queue while it waits, so a long dialogue arrives
whole instead of TIMED_OUT. Bucketing, stamps, status values and envelope keys are unchanged.

Everything that writes an ORO-shaped record (the simulator, the evaluation rollouts, the sample
builders behind the tests) goes through this module.
"""

from __future__ import annotations

import dataclasses
import pickle
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus

from oro_assets import jsonio
from oro_assets.toolcalls import FIND_PRODUCT, FIND_PRODUCTS_IN_SAME_SHOP, VIEW_PRODUCT_INFORMATION

BODY_LIMIT = 2000
#: A pipe holds 64 KiB: a pickled result larger than that blocks the agent's child process.
RESULT_PIPE_LIMIT = 65536
DEFAULT_TIMEOUT_S = 300.0
INFERENCE_PATH = "/inference/chat/completions"
SEARCH_PATHS = {
    FIND_PRODUCT: "/search/find_product",
    VIEW_PRODUCT_INFORMATION: "/search/view_product_information",
}
SANDBOX_STATUS = {"success": "SUCCESS", "failed": "FAILED", "timed_out": "TIMED_OUT"}
#: ORO's recorder as at a6b1cf3: bodies over 2,000 characters dropped, ``messages`` removed, 64 KiB pipe.
ERA_A6B1CF3 = "a6b1cf3"
#: ORO's later ShoppingBench-era recorder (e.g. eecdeecf): whole bodies, ``messages`` kept, no pipe limit.
ERA_LATER = "later"
ERAS = (ERA_A6B1CF3, ERA_LATER)


def oro_json(obj: Any) -> str:
    """``json.dumps`` with the standard library's defaults, as ORO's harness calls it.

    Lengths (the 2,000-character rule) and the re-rendered ``content`` depend on its exact
    output (ASCII escapes, ``", "`` separators), so the project's own codec is not used here."""
    return jsonio.stdlib_dumps(obj, default=str)


@dataclass
class ProxyEvent:
    """One HTTP request an agent made through ORO's proxy, before the harness logged it."""

    method: str
    path: str
    end_ms: int
    duration_ms: float
    status_code: int | None
    params: dict | None = None
    json_data: dict | None = None
    body: Any = None  # the parsed response; None when the request failed
    #: the chat messages the inference request sent (the later era logs them; a6b1cf3 removes them)
    request_messages: list | None = None

    @property
    def is_inference(self) -> bool:
        return "/inference/" in self.path


def search_params(name: str, arguments: dict) -> dict:
    """The query parameters ORO's reference tools send for a search call (``None`` kept here;
    the log drops them)."""
    if name == FIND_PRODUCT:
        params: dict[str, Any] = {
            "q": quote_plus(str(arguments.get("q", ""))),
            "page": arguments.get("page", 1),
            "shop_id": arguments.get("shop_id"),
            "price": arguments.get("price"),
            "sort": arguments.get("sort"),
            "service": arguments.get("service"),
        }
        if params["sort"] == "default":
            params.pop("sort")
        service = params.get("service")
        if service == "default":
            params.pop("service")
        elif isinstance(service, str) and "default" in service:
            params["service"] = ",".join(x for x in service.split(",") if x != "default")
        return params
    return {"product_ids": arguments.get("product_ids")}


def inference_request(model: str, temperature: float = 0.0) -> dict:
    """The logged ``json_data`` of an inference POST (the harness removes ``messages``)."""
    return {"model": model, "temperature": temperature, "stream": False}


def _summary_head(event: ProxyEvent) -> dict[str, Any]:
    """What every era's summary entry starts with: the request, its timing and status, its query parameters."""
    entry: dict[str, Any] = {
        "kind": "summary",
        "method": event.method,
        "path": event.path,
        "timestamp": int(event.end_ms),
        "duration_ms": round(float(event.duration_ms), 1),
        "status_code": event.status_code,
    }
    if event.params:
        entry["params"] = {k: v for k, v in event.params.items() if v is not None}
    return entry


def log_entry(event: ProxyEvent, era: str = ERA_A6B1CF3) -> dict:
    """The summary entry ``RequestLog.record`` writes for one finished request, by ``era``'s rules."""
    if era == ERA_LATER:
        return _later_log_entry(event)
    if era != ERA_A6B1CF3:
        raise ValueError(f"unknown recorder era {era!r}; known: {', '.join(ERAS)}")
    entry = _summary_head(event)
    if event.json_data:
        entry["json_data"] = ({k: v for k, v in event.json_data.items() if k != "messages"}
                              if "/inference/" in event.path else event.json_data)
    if event.body is not None:
        text = oro_json(event.body)
        if len(text) > BODY_LIMIT:
            entry["response_truncated"] = True
            entry["response_length"] = len(text)
            if "/search/find_product" in event.path and isinstance(event.body, list):
                entry["result_product_ids"] = [str(item["product_id"]) for item in event.body
                                               if isinstance(item, dict) and "product_id" in item]
        else:
            entry["response"] = event.body
    return entry


def _later_log_entry(event: ProxyEvent) -> dict:
    entry = _summary_head(event)
    request = dict(event.json_data or {})
    if event.is_inference and event.request_messages is not None:
        # the agent's request as it sent it: model first, then the conversation so far
        request = {"model": request.pop("model", None), "messages": list(event.request_messages), **request}
    if request:
        entry["json_data"] = request
    if event.body is not None:
        entry["response"] = event.body
        if "/search/find_product" in event.path and isinstance(event.body, list):
            entry["result_product_ids"] = [str(item["product_id"]) for item in event.body
                                           if isinstance(item, dict) and "product_id" in item]
    return entry


def with_request_messages(steps_events: Sequence[Sequence[ProxyEvent]], messages: Sequence[dict],
                          ) -> list[ProxyEvent]:
    """Every step's events, its inference requests carrying the conversation sent for that step.

    ``messages``: the run's chat (system, user, then per step one assistant message and its tool
    results); step k's request holds everything before step k's assistant message."""
    starts = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    out: list[ProxyEvent] = []
    for k, events in enumerate(steps_events):
        prefix = list(messages[:starts[k]]) if k < len(starts) else list(messages)
        for e in events:
            out.append(dataclasses.replace(e, request_messages=prefix) if e.is_inference else e)
    return out


def format_content(think: str, calls: Sequence[dict], response: str) -> str:
    """``completion.content`` as the harness re-renders it (not the model's own text)."""
    parts = []
    if think:
        parts.append(f"<think>{think}</think>")
    if calls:
        parts.append("<tool_call>" + oro_json([{"name": c["name"], "parameters": c["parameters"]}
                                               for c in calls]) + "</tool_call>")
    if response:
        parts.append(f"<response>{response}</response>")
    return "\n".join(parts)


def dialogue_step(think: str, calls: Sequence[dict], response: str, query: str, step: int,
                  timestamp: int) -> dict:
    """One step as ``create_dialogue_step`` builds it; ``calls`` are ``{name, parameters,
    tool_call_id, result}`` dicts (a call without ``result`` stays without it)."""
    message: dict[str, Any] = {}
    if think:
        message["think"] = think
    if calls:
        message["tool_call"] = list(calls)
    if response:
        message["response"] = response
    return {
        "completion": {"reasoning_content": "", "content": format_content(think, calls, response),
                       "message": message},
        "extra_info": {"step": step, "query": query, "timestamp": timestamp},
    }


def fits_result_pipe(dialogue: list) -> bool:
    """Would the agent's child process hand this dialogue back, or block on a full pipe?"""
    payload = pickle.dumps(("success", dialogue), protocol=pickle.DEFAULT_PROTOCOL)
    return len(payload) + 4 <= RESULT_PIPE_LIMIT  # Connection.send_bytes adds a 4-byte header


def bucket_calls(dialogue: list[dict], entries: Iterable[dict]) -> None:
    """Attach summary calls to steps as ``_format_single_result`` does (in place)."""
    stamps = [step["extra_info"].get("timestamp", 0) for step in dialogue]
    buckets: dict[int, list[dict]] = {}
    for call in entries:
        if call.get("kind") == "attempt":
            continue
        ts = call.get("timestamp", 0)
        target = 0
        for i, stamp in enumerate(stamps):
            if stamp <= ts:
                target = i
            else:
                break
        buckets.setdefault(target, []).append(call)
    for i, calls in buckets.items():
        dialogue[i]["extra_info"]["proxy_calls"] = calls


def format_envelope(
    *,
    problem_id: str,
    query: str,
    status: str,
    dialogue: list[dict] | None,
    events: Sequence[ProxyEvent],
    execution_time: float,
    inference_failure_count: int,
    inference_total: int,
    error: dict | None,
    written_ms: int | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    era: str = ERA_A6B1CF3,
) -> dict:
    """The envelope line of one problem run (``status`` in the arena's lower case).

    ``dialogue`` is what the agent returned (steps as :func:`dialogue_step` builds them, possibly
    damaged by a broken agent); it is completed and bucketed here. ``era``: whose recording rules
    (:data:`ERA_A6B1CF3`, the default, or :data:`ERA_LATER`)."""
    if era not in ERAS:
        raise ValueError(f"unknown recorder era {era!r}; known: {', '.join(ERAS)}")
    written = int(time.time() * 1000) if written_ms is None else int(written_ms)
    if (era == ERA_A6B1CF3 and status == "success" and isinstance(dialogue, list)
            and not fits_result_pipe(dialogue)):
        status, dialogue = "timed_out", None
        error = {"type": "TimeoutError", "message": f"Execution exceeded timeout of {float(timeout_s)}s"}
        execution_time = round(float(timeout_s) + 0.02, 3)
    out_dialogue: list[dict] | None = None
    if status == "success" and isinstance(dialogue, list):
        out_dialogue = dialogue
        for i, step in enumerate(out_dialogue):
            extra = step.setdefault("extra_info", {})
            extra.setdefault("step", i + 1)
            extra.setdefault("query", query)
            extra.setdefault("timestamp", written)
            if problem_id:
                extra.setdefault("problem_id", problem_id)
        if out_dialogue:
            out_dialogue[0]["extra_info"].setdefault("execution_time", execution_time)
            bucket_calls(out_dialogue, [log_entry(e, era) for e in events])
    if status == "timed_out" and error is None:
        error = {"type": "TimeoutError", "message": f"Execution exceeded timeout of {float(timeout_s)}s"}
    return {
        "problem_id": problem_id,
        "status": SANDBOX_STATUS.get(status, str(status).upper()),
        "execution_time": execution_time,
        "inference_failure_count": inference_failure_count,
        "inference_total": inference_total,
        "error": None if status == "success" else error,
        "dialogue": out_dialogue,
    }


def detect_task(query: str) -> str:
    """The reference agent's task heuristic (product / shop / voucher), used by its fallback."""
    q = query.lower()
    if "voucher" in q or "budget" in q:
        return "voucher"
    if "shop" in q and any(w in q for w in ("both", "these", "offering", "sells")):
        return "shop"
    return "product"


def fallback_ids(query: str, candidates: Sequence[str]) -> str | None:
    """The auto-recommend fallback's ``product_ids``: the first candidate for a product task,
    every candidate joined by "," otherwise; None without candidates."""
    if not candidates:
        return None
    return candidates[0] if detect_task(query) == "product" else ",".join(candidates)


def candidate_ids(name: str, result: Any) -> list[str]:
    """Product ids the reference agent collects as fallback candidates from one tool result."""
    items: Any = []
    if name == FIND_PRODUCT and isinstance(result, list):
        items = result
    elif name == FIND_PRODUCTS_IN_SAME_SHOP and isinstance(result, dict) and result.get("found"):
        items = result.get("products") or []
    out = []
    for item in items:
        pid = str(item.get("product_id", "")) if isinstance(item, dict) else ""
        if pid:
            out.append(pid)
    return out
