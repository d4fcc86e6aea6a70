"""The episode loop: one policy plays one problem against one shopping environment.

Policies see only ``problem_view = {"problem_id", "query"}``, the conversation so far in the
canonical OpenAI message schema (docs/architecture.md) and the tool schemas, and return one
:class:`Turn`. The loop executes the turn's tool calls, records what ORO's harness would record
(timestamps, per-step proxy calls) and renders the result as ORO dialogue steps or canonical
messages. Scripted miners (``arena/policies``) and model-backed policies (``oro_assets/agents``)
plug into the same :class:`Policy` protocol.

Time is injected: :class:`SimClock` (deterministic, advanced by a duration model) for the
simulator, :class:`WallClock` for live policies.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from oro_assets import jsonio
from oro_assets.arena.scoring import split_ids

SYSTEM_PROMPT = (
    "You are a shopping assistant. Use the tools to search the catalogue, inspect products and "
    "recommend the product(s) that satisfy every requirement of the user's request. Think before "
    "each action. Call recommend_product exactly once with the chosen product ids in the order the "
    "user asked for them, then call terminate."
)

# Tools whose calls go through ORO's search proxy (they get a proxy-call record).
SEARCH_PATHS = {
    "find_product": "/search/find_product",
    "view_product_information": "/search/view_product_information",
}
INFERENCE_PATH = "/inference/chat/completions"
PROXY_BODY_LIMIT = 2000  # ORO truncates proxy-call bodies above this many characters


@dataclass
class ToolCall:
    name: str
    arguments: dict
    # Set only when the model emitted arguments that are not a JSON object: the literal text is
    # recorded as emitted and the call is answered with an error result.
    raw_arguments: str | None = None

    def arguments_json(self) -> str:
        return self.raw_arguments if self.raw_arguments is not None else jsonio.dumps(self.arguments)


@dataclass
class Turn:
    think: str
    tool_calls: list[ToolCall]
    response: str = ""
    # OpenAI chat-completion responses this turn made ([] = no LLM involved in this step).
    inference: list[dict] = field(default_factory=list)
    # Harness extras: "model", "temperature" (inference request params), "retries" (status codes
    # of failed inference attempts before the success), "stall_ms" (extra simulated time).
    meta: dict = field(default_factory=dict)


class Policy(Protocol):
    name: str

    def act(self, problem_view: dict, messages: list[dict], tools: list[dict]) -> Turn: ...


class Clock(Protocol):
    def now_ms(self) -> int: ...

    def advance(self, ms: float) -> None: ...


class SimClock:
    """Deterministic clock: time only moves when the loop advances it."""

    def __init__(self, start_ms: int) -> None:
        self._now = float(start_ms)

    def now_ms(self) -> int:
        return int(self._now)

    def advance(self, ms: float) -> None:
        self._now += max(0.0, ms)


class WallClock:
    """Real time; ``advance`` is a no-op because real work takes real time."""

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def advance(self, ms: float) -> None:
        return None


# Duration model: (event, info) -> milliseconds. Events: "inference" (info: completion_tokens),
# "search" (info: tool name), "tool" (local tools), "overhead" (harness time per step).
DurationModel = Callable[[str, dict], float]


def default_durations(event: str, info: dict) -> float:
    if event == "inference":
        return 400.0 + 18.0 * float(info.get("completion_tokens") or 0)
    if event == "search":
        return 120.0
    if event == "overhead":
        return 15.0
    return 2.0


def oro_tool_call_id(name: str, parameters: Any) -> str:
    """ORO's 8-char id: identical calls collide by design (ids are not unique in a dialogue)."""
    digest = hashlib.md5(f"{name}\n{parameters}".encode()).digest()
    text = base64.urlsafe_b64encode(digest).decode()
    return "".join(ch for ch in text if ch not in "=+/")[:8]


@dataclass
class CallRecord:
    name: str
    arguments: dict
    raw_arguments: str | None
    result: Any
    call_id: str  # canonical id call_<step>_<i>

    @property
    def parameters(self) -> Any:
        return self.raw_arguments if self.raw_arguments is not None else self.arguments


@dataclass
class StepRecord:
    step: int
    timestamp: int | None
    think: str
    response: str
    calls: list[CallRecord]
    inference: list[dict]
    proxy_calls: list[dict]
    execution_time: float


@dataclass
class Episode:
    problem_id: str
    query: str
    policy_name: str
    status: str  # success | failed | timed_out
    error: dict | None
    messages: list[dict]
    steps: list[StepRecord]
    started_ms: int
    ended_ms: int
    inference_total: int = 0
    inference_failure_count: int = 0

    @property
    def execution_time(self) -> float:
        return round((self.ended_ms - self.started_ms) / 1000.0, 3)

    def recommended_ids(self) -> list[str]:
        """Ids of the last ``recommend_product`` call: split on ",", stripped, deduped in order."""
        last: CallRecord | None = None
        for step in self.steps:
            for call in step.calls:
                if call.name == "recommend_product":
                    last = call
        if last is None or last.raw_arguments is not None:
            return []
        return split_ids(last.arguments.get("product_ids"))

    def to_messages(self) -> list[dict]:
        return [dict(m) for m in self.messages]

    def to_oro_dialogue(self) -> list[dict]:
        return [self._oro_step(s) for s in self.steps]

    def _oro_step(self, s: StepRecord) -> dict:
        tool_call = []
        for c in s.calls:
            params = c.parameters
            tool_call.append(
                {"name": c.name, "parameters": params, "tool_call_id": oro_tool_call_id(c.name, params), "result": c.result}
            )
        return {
            "completion": {
                "reasoning_content": "",
                "content": harness_content(s.think, s.calls, s.response),
                "message": {"think": s.think, "tool_call": tool_call, "response": s.response},
            },
            "extra_info": {
                "step": s.step,
                "query": self.query,
                "timestamp": s.timestamp,
                "problem_id": self.problem_id,
                "execution_time": s.execution_time,
                "proxy_calls": s.proxy_calls,
            },
        }




def harness_content(think: str, calls: list[CallRecord], response: str) -> str:
    """What ORO's harness writes into ``completion.content`` (not raw model text)."""
    parts = [f"<think>{think}</think>"]
    if calls:
        payload = jsonio.dumps([{"name": c.name, "parameters": c.parameters} for c in calls])
        parts.append(f"<tool_call>{payload}</tool_call>")
    if response:
        parts.append(response)
    return "\n".join(parts)


def proxy_entry(
    path: str, timestamp: int, duration_ms: float, json_data: dict, response: Any, status_code: int = 200,
    kind: str = "summary", body: str | None = None,
) -> dict:
    """One proxy call as ORO records it; bodies over 2000 characters are truncated."""
    entry: dict[str, Any] = {
        "kind": kind,
        "method": "POST",
        "path": path,
        "timestamp": timestamp,
        "duration_ms": round(duration_ms, 1),
        "status_code": status_code,
        "json_data": json_data,
    }
    if response is None:
        return entry
    if body is None:
        body = jsonio.dumps(response)
    if len(body) > PROXY_BODY_LIMIT:
        entry["response"] = body[:PROXY_BODY_LIMIT]
        entry["response_truncated"] = True
        entry["response_length"] = len(body)
        if path == SEARCH_PATHS["find_product"] and isinstance(response, list):
            entry["result_product_ids"] = [str(r.get("product_id")) for r in response if isinstance(r, dict)]
    else:
        entry["response"] = response
    return entry


def _default_executor() -> Callable[[Any, str, dict], Any]:
    from oro_assets.arena.tools import execute_tool  # the arena core; imported lazily

    return execute_tool


def _default_tools() -> list[dict]:
    from oro_assets.arena.tools import TOOL_SCHEMAS

    return TOOL_SCHEMAS


def run_episode(
    policy: Policy,
    problem: dict,
    env: Any,
    *,
    max_steps: int = 30,
    timeout_s: float = 300,
    clock: Clock | None = None,
    step_clock: DurationModel | None = None,
    tools: list[dict] | None = None,
    executor: Callable[[Any, str, dict], Any] | None = None,
    system_prompt: str = SYSTEM_PROMPT,
) -> Episode:
    """Play ``problem`` with ``policy`` in ``env``.

    Stops on ``terminate``, on a turn without tool calls, on the step limit, on a timeout
    (``timed_out``) or when the policy raises (``failed`` with ``error``). With a
    :class:`SimClock` every duration comes from ``step_clock`` (default :func:`default_durations`),
    so the episode is a pure function of its inputs.
    """
    clock = clock if clock is not None else WallClock()
    simulated = not isinstance(clock, WallClock)
    durations = step_clock or default_durations
    execute = executor or _default_executor()
    tools = tools if tools is not None else _default_tools()
    view = {"problem_id": problem["problem_id"], "query": problem["query"]}
    messages: list[dict] = [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": problem["query"]},
    ]
    started = clock.now_ms()
    deadline = started + int(timeout_s * 1000)
    episode = Episode(
        problem_id=problem["problem_id"], query=problem["query"], policy_name=getattr(policy, "name", "policy"),
        status="success", error=None, messages=messages, steps=[], started_ms=started, ended_ms=started,
    )

    for step_no in range(1, max_steps + 1):
        step_start = clock.now_ms()
        wall0 = time.perf_counter()
        try:
            turn = policy.act(view, messages, tools)
        except TimeoutError as exc:
            episode.status, episode.error = "timed_out", {"type": "TimeoutError", "message": str(exc) or "timeout"}
            break
        except Exception as exc:  # a crashing agent is data, not a bug of the loop
            episode.status, episode.error = "failed", {"type": type(exc).__name__, "message": str(exc)}
            break
        act_ms = (time.perf_counter() - wall0) * 1000.0
        meta = turn.meta or {}
        proxy: list[dict] = []

        # Inference calls (and failed attempts before them) happen first, during act().
        json_data = {"model": meta.get("model", "unknown"), "temperature": meta.get("temperature", 0.2),
                     "max_tokens": 2048, "stream": False}
        for status_code in meta.get("retries", ()):
            clock.advance(durations("inference", {"completion_tokens": 0}) if simulated else 0)
            proxy.append(proxy_entry(INFERENCE_PATH, clock.now_ms(), 250.0, json_data, None, status_code, "attempt"))
            episode.inference_failure_count += 1
        for resp in turn.inference:
            tokens = ((resp.get("usage") or {}).get("completion_tokens")) or 0
            dur = durations("inference", {"completion_tokens": tokens}) if simulated else act_ms / max(1, len(turn.inference))
            clock.advance(dur)
            if simulated and "created" in resp:
                resp["created"] = clock.now_ms() // 1000
            proxy.append(proxy_entry(INFERENCE_PATH, clock.now_ms(), dur, json_data, resp))
            episode.inference_total += 1
        episode.inference_total += len(meta.get("retries", ()))
        if meta.get("stall_ms"):
            clock.advance(float(meta["stall_ms"]))

        records: list[CallRecord] = []
        assistant: dict[str, Any] = {"role": "assistant", "content": turn.response,
                                     "reasoning_content": turn.think or None}
        tool_msgs: list[dict] = []
        terminated = False
        for i, call in enumerate(turn.tool_calls):
            call_id = f"call_{step_no}_{i}"
            body: str | None = None
            if call.raw_arguments is not None:
                result: Any = f"Error: arguments of {call.name} are not valid JSON"
            else:
                w0 = time.perf_counter()
                result = execute(env, call.name, call.arguments)
                real_ms = (time.perf_counter() - w0) * 1000.0
                path = SEARCH_PATHS.get(call.name)
                if path is not None:
                    dur = durations("search", {"tool": call.name}) if simulated else real_ms
                    clock.advance(dur)
                    body = jsonio.dumps(result)
                    proxy.append(proxy_entry(path, clock.now_ms(), dur, call.arguments, result, body=body))
                else:
                    clock.advance(durations("tool", {"tool": call.name}) if simulated else 0)
            records.append(CallRecord(call.name, call.arguments, call.raw_arguments, result, call_id))
            tool_msgs.append({"role": "tool", "tool_call_id": call_id, "name": call.name,
                              "content": body if body is not None else jsonio.dumps(result)})
            if call.name == "terminate" and not (isinstance(result, str) and result.startswith("Error")):
                terminated = True  # a terminate the tool refused (bad status) does not end the episode
        if records:
            assistant["tool_calls"] = [
                {"id": r.call_id, "type": "function",
                 "function": {"name": r.name, "arguments": tc.arguments_json()}}
                for r, tc in zip(records, turn.tool_calls, strict=True)
            ]
        messages.append(assistant)
        messages.extend(tool_msgs)

        clock.advance(durations("overhead", {}) if simulated else 0)
        now = clock.now_ms()
        episode.steps.append(StepRecord(
            step=step_no, timestamp=now, think=turn.think, response=turn.response, calls=records,
            inference=turn.inference, proxy_calls=proxy, execution_time=round((now - step_start) / 1000.0, 3),
        ))
        if now > deadline:
            episode.status = "timed_out"
            episode.error = {"type": "TimeoutError", "message": f"problem exceeded {timeout_s:g} s"}
            break
        if terminated or not turn.tool_calls:
            break
    episode.ended_ms = clock.now_ms()
    return episode
